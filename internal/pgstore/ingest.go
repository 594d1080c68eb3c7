package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Ingest writes one source in one transaction, chunked exactly as the SQLite
// backend chunks it (memtree.Prepare): it replaces the chunk set an earlier
// ingest of the same (Kind, SourceID) left, keeping chunks whose id (a hash of
// their content) is unchanged, and keeps document frequencies, entity counts and
// the store's counts in step in the same transaction.
//
// A Merge source (a chat export) is merged with the messages stored for it
// before, as on SQLite (mergeStored). No summary tree is stored on this
// backend; vectors are EmbedMissing's (vectors.go), and a chunk kept by id
// keeps its vectors.
func (s *Store) Ingest(ctx context.Context, in memtree.SourceInput) (memtree.IngestStats, error) {
	p, err := memtree.Prepare(in)
	if err != nil {
		return memtree.IngestStats{}, err
	}
	return s.IngestPrepared(ctx, p)
}

// IngestPrepared writes a prepared source (see Ingest).
func (s *Store) IngestPrepared(ctx context.Context, p *memtree.Prepared) (memtree.IngestStats, error) {
	var st memtree.IngestStats
	in := p.Input()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A source's commit does not wait for its WAL flush (asynchronous commit):
		// a crash may lose the last fraction of a second of committed sources,
		// never consistency, and ingesting again writes them (ingest is
		// idempotent). Measured: 6,692 sources (gencorpus -scale 100000) took 98 s
		// waiting for each flush, 65 s not.
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return fmt.Errorf("set asynchronous commit: %w", err)
		}
		chunks := p.Chunks()
		var keep []memtree.MergeRow
		var ours func(memtree.PreparedChunk) bool
		if in.Merge {
			var err error
			if chunks, keep, ours, err = mergeStored(ctx, tx, p); err != nil {
				return err
			}
		}
		var err error
		var srcKey int64
		if st, srcKey, err = writeSource(ctx, tx, in, chunks, ours); err != nil {
			return err
		}
		return storeMessages(ctx, tx, srcKey, keep)
	})
	if err != nil {
		return memtree.IngestStats{}, fmt.Errorf("ingest %s: %w", in.SourceID, err)
	}
	return st, nil
}

// mergeStored merges the Merge source p with the messages stored for it (none
// when it is new): it returns the chunks to write (p's own when p holds every
// stored message, else those of the union, prepared again), the rows of p's
// new and changed messages to store, and, for a union, which of its chunks
// hold one of p's messages (only those count as unchanged, as on SQLite, so
// that the exports of one source, each ingested again, count each chunk about
// once).
func mergeStored(ctx context.Context, tx pgx.Tx, p *memtree.Prepared) ([]memtree.PreparedChunk, []memtree.MergeRow, func(memtree.PreparedChunk) bool, error) {
	in := p.Input()
	rows := p.MergeRows()
	stored, err := tx.Query(ctx, `SELECT m.ref, m.hash FROM source_messages m JOIN sources s ON s.key = m.source_key
		WHERE s.kind = $1 AND s.source_id = $2`, in.Kind, in.SourceID)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read stored messages: %w", err)
	}
	idx := make(map[string]int, len(rows))
	for i, r := range rows {
		idx[r.Key] = i
	}
	same := make([]bool, len(rows))
	var missing []string
	for stored.Next() {
		var key string
		var h int64
		if err := stored.Scan(&key, &h); err != nil {
			stored.Close()
			return nil, nil, nil, fmt.Errorf("read stored messages: %w", err)
		}
		if i, ok := idx[key]; ok {
			same[i] = rows[i].Hash == h
		} else {
			missing = append(missing, key)
		}
	}
	stored.Close()
	if err := stored.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("read stored messages: %w", err)
	}
	var changed []memtree.MergeRow
	for i, r := range rows {
		if !same[i] {
			changed = append(changed, r)
		}
	}
	if len(missing) == 0 {
		return p.Chunks(), changed, nil, nil
	}
	msgs, err := tx.Query(ctx, `SELECT m.msg_json FROM source_messages m JOIN sources s ON s.key = m.source_key
		WHERE s.kind = $1 AND s.source_id = $2 AND m.ref = ANY($3) ORDER BY m.ts, m.ref`, in.Kind, in.SourceID, missing)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read %d stored messages: %w", len(missing), err)
	}
	js, err := pgx.CollectRows(msgs, pgx.RowTo[string])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read %d stored messages: %w", len(missing), err)
	}
	mp, err := memtree.PrepareUnion(p, js)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("merge with %d stored messages: %w", len(missing), err)
	}
	mine := make(map[string]bool, len(rows))
	for _, r := range rows {
		mine[r.Key] = true
	}
	ours := func(c memtree.PreparedChunk) bool { return memtree.OwnRefs(mine, c.Refs) }
	return mp.Chunks(), changed, ours, nil
}

// storeMessages writes rows (new and changed messages of a Merge source) for
// source srcKey, in one statement.
func storeMessages(ctx context.Context, tx pgx.Tx, srcKey int64, rows []memtree.MergeRow) error {
	if len(rows) == 0 {
		return nil
	}
	refs, tss, hashes, msgs := make([]string, len(rows)), make([]int64, len(rows)), make([]int64, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		refs[i], tss[i], hashes[i], msgs[i] = r.Key, r.TS, r.Hash, r.Msg
	}
	_, err := tx.Exec(ctx, `INSERT INTO source_messages(source_key, ref, ts, hash, msg_json)
		SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::text[])
		ON CONFLICT (source_key, ref) DO UPDATE SET ts = excluded.ts, hash = excluded.hash, msg_json = excluded.msg_json`,
		srcKey, refs, tss, hashes, msgs)
	if err != nil {
		return fmt.Errorf("store %d messages: %w", len(rows), err)
	}
	return nil
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// writeSource writes one source's chunks inside tx.
// ours, when not nil, says which unchanged chunks count as such (a merged
// union's: those holding one of the input's messages).
func writeSource(ctx context.Context, tx pgx.Tx, in memtree.SourceInput, chunks []memtree.PreparedChunk, ours func(memtree.PreparedChunk) bool) (memtree.IngestStats, int64, error) {
	var st memtree.IngestStats
	now := time.Now().UnixMilli()
	tags := in.Tags
	if tags == nil {
		tags = []string{}
	}
	tagsJSON := jsonOf(tags)
	var srcKey int64
	err := tx.QueryRow(ctx, `INSERT INTO sources(kind, source_id, title, provider, tags_json, origin, updated_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (kind, source_id) DO UPDATE SET title = excluded.title, provider = excluded.provider,
			tags_json = excluded.tags_json, origin = excluded.origin, updated_ms = excluded.updated_ms
		RETURNING key`, in.Kind, in.SourceID, in.Title, in.Provider, tagsJSON, in.Origin, now).Scan(&srcKey)
	if err != nil {
		return st, 0, fmt.Errorf("write source row: %w", err)
	}

	// The chunks stored before, and which of them stay.
	existing := map[string]int64{}
	rows, err := tx.Query(ctx, `SELECT id, key FROM chunks WHERE source_key = $1`, srcKey)
	if err != nil {
		return st, 0, fmt.Errorf("read existing chunks: %w", err)
	}
	for rows.Next() {
		var id string
		var key int64
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return st, 0, fmt.Errorf("read existing chunks: %w", err)
		}
		existing[id] = key
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, 0, fmt.Errorf("read existing chunks: %w", err)
	}
	if len(existing) > 0 && !in.Merge {
		// A source written without Merge keeps no messages: drop those an earlier
		// Merge ingest of it stored, which must not come back (as on SQLite).
		if _, err := tx.Exec(ctx, `DELETE FROM source_messages WHERE source_key = $1`, srcKey); err != nil {
			return st, 0, fmt.Errorf("delete stored messages: %w", err)
		}
	}
	keep := map[string]bool{}
	for _, c := range chunks {
		keep[c.ID] = true
	}
	var gone []int64
	for id, key := range existing {
		if !keep[id] {
			gone = append(gone, key)
		}
	}

	dfDelta := map[string]int{} // term → change of its document frequency
	var chunkDelta, termDelta int64
	entDelta := map[string]int{} // entity → change of its count of linked chunks

	// Remove the chunks no longer part of the source: their terms leave the
	// document frequencies, their links the entity counts.
	if len(gone) > 0 {
		rows, err := tx.Query(ctx, `DELETE FROM chunks WHERE key = ANY($1)
			RETURNING tsvector_to_array(terms), term_count, (SELECT array_agg(entity_id) FROM chunk_entities WHERE chunk_key = chunks.key)`, gone)
		if err != nil {
			return st, 0, fmt.Errorf("remove old chunks: %w", err)
		}
		for rows.Next() {
			var terms, ents []string
			var n int64
			if err := rows.Scan(&terms, &n, &ents); err != nil {
				rows.Close()
				return st, 0, fmt.Errorf("remove old chunks: %w", err)
			}
			for _, t := range terms {
				dfDelta[t]--
			}
			for _, e := range ents {
				entDelta[e]--
			}
			chunkDelta--
			termDelta -= n
			st.RemovedChunks++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return st, 0, fmt.Errorf("remove old chunks: %w", err)
		}
	}

	// Insert the new chunks in one statement (arrays unnested: one round trip
	// whatever the source's size).
	var (
		ids, kinds, srcIDs, titles, texts, tagsCol, refs, refsJSON, spansJSON, attJSON, termsCol []string
		seqs, tokens, counts                                                                     []int32
		srcKeys, tss, starts, ends, created                                                      []int64
		refValid                                                                                 []bool
	)
	type link struct {
		entity string
		seq    int
	}
	var links []link
	entRows := map[string]memtree.PreparedEntity{}
	entLast := map[string]int64{}
	for _, c := range chunks {
		if _, ok := existing[c.ID]; ok {
			if ours == nil || ours(c) {
				st.UnchangedChunks++
			}
			continue
		}
		a := analyze(in.Title, c.Text)
		for _, t := range a.distinct() {
			dfDelta[t]++
		}
		chunkDelta++
		termDelta += int64(a.count())
		ref := ""
		if len(c.Refs) > 0 {
			ref = c.Refs[0]
		}
		crefs := c.Refs
		if crefs == nil {
			crefs = []string{}
		}
		ids = append(ids, c.ID)
		srcKeys = append(srcKeys, srcKey)
		kinds = append(kinds, in.Kind)
		srcIDs = append(srcIDs, in.SourceID)
		seqs = append(seqs, int32(c.Seq))
		tss, starts, ends = append(tss, c.TS), append(starts, c.TSStart), append(ends, c.TSEnd)
		titles, texts, tagsCol = append(titles, in.Title), append(texts, c.Text), append(tagsCol, tagsJSON)
		refs, refValid = append(refs, ref), append(refValid, len(c.Refs) > 0)
		refsJSON, spansJSON, attJSON = append(refsJSON, jsonOf(crefs)), append(spansJSON, jsonOf(c.Spans)), append(attJSON, jsonOf(c.Attachments))
		tokens, created = append(tokens, int32(c.Tokens)), append(created, now)
		termsCol, counts = append(termsCol, a.tsvector()), append(counts, int32(a.count()))
		for _, e := range c.Entities {
			links = append(links, link{e.ID, c.Seq})
			entRows[e.ID] = e
			entLast[e.ID] = max(entLast[e.ID], c.TS)
			entDelta[e.ID]++
		}
		st.NewChunks++
	}
	chunkKey := map[int]int64{} // seq → key of the inserted chunk
	if len(ids) > 0 {
		rows, err := tx.Query(ctx, `INSERT INTO chunks(id, source_key, kind, source_id, seq, ts, ts_start, ts_end, title, text,
				tags_json, source_ref, source_refs_json, ref_spans_json, attachments_json, token_count, created_ms, terms, term_count)
			SELECT id, source_key, kind, source_id, seq, ts, ts_start, ts_end, title, text,
				tags_json, CASE WHEN ref_valid THEN source_ref END, source_refs_json, ref_spans_json, attachments_json, token_count, created_ms, terms::tsvector, term_count
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[], $10::text[],
				$11::text[], $12::text[], $13::bool[], $14::text[], $15::text[], $16::text[], $17::int[], $18::bigint[], $19::text[], $20::int[])
				AS u(id, source_key, kind, source_id, seq, ts, ts_start, ts_end, title, text,
				tags_json, source_ref, ref_valid, source_refs_json, ref_spans_json, attachments_json, token_count, created_ms, terms, term_count)
			RETURNING key, seq`,
			ids, srcKeys, kinds, srcIDs, seqs, tss, starts, ends, titles, texts,
			tagsCol, refs, refValid, refsJSON, spansJSON, attJSON, tokens, created, termsCol, counts)
		if err != nil {
			return st, 0, fmt.Errorf("write chunks: %w", err)
		}
		for rows.Next() {
			var key int64
			var seq int32
			if err := rows.Scan(&key, &seq); err != nil {
				rows.Close()
				return st, 0, fmt.Errorf("write chunks: %w", err)
			}
			chunkKey[int(seq)] = key
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return st, 0, fmt.Errorf("write chunks (a chunk id stored under another source means a hash collision): %w", err)
		}
	}

	// Entities with their counts of linked chunks changed by the links added and
	// removed (one upsert in id order, so concurrent writers lock rows alike; an
	// entity only unlinked takes the conflict path, its row exists), then the
	// links, then the entities no chunk links any more.
	if len(entDelta) > 0 {
		var eids, ekinds, esurf []string
		var elast []int64
		var edelta []int32
		for id := range entDelta {
			eids = append(eids, id)
		}
		sort.Strings(eids)
		for _, id := range eids {
			e := entRows[id] // zero for an entity only unlinked
			ekinds, esurf, elast, edelta = append(ekinds, e.Kind), append(esurf, e.Surface), append(elast, entLast[id]), append(edelta, int32(entDelta[id]))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO entities(id, kind, surface, last_seen, ref_count)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::int[])
			ON CONFLICT (id) DO UPDATE SET last_seen = greatest(entities.last_seen, excluded.last_seen),
				ref_count = entities.ref_count + excluded.ref_count`, eids, ekinds, esurf, elast, edelta); err != nil {
			return st, 0, fmt.Errorf("write entities: %w", err)
		}
		if len(links) > 0 {
			var lents []string
			var lkeys []int64
			for _, l := range links {
				lents, lkeys = append(lents, l.entity), append(lkeys, chunkKey[l.seq])
			}
			if _, err := tx.Exec(ctx, `INSERT INTO chunk_entities(entity_id, chunk_key)
				SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING`, lents, lkeys); err != nil {
				return st, 0, fmt.Errorf("link entities: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM entities WHERE id = ANY($1) AND ref_count <= 0`, eids); err != nil {
			return st, 0, fmt.Errorf("remove unreferenced entities: %w", err)
		}
	}
	st.Entities = len(entRowsOf(chunks))

	// Document frequencies: one upsert of the changes, in term order, then the
	// terms no chunk says any more.
	if len(dfDelta) > 0 {
		var terms []string
		for t, d := range dfDelta {
			if d != 0 {
				terms = append(terms, t)
			}
		}
		sort.Strings(terms)
		deltas := make([]int32, len(terms))
		for i, t := range terms {
			deltas[i] = int32(dfDelta[t])
		}
		if len(terms) > 0 {
			if err := applyTermDeltas(ctx, tx, terms, deltas); err != nil {
				return st, 0, err
			}
		}
	}

	// The source's aggregates and the store's counts.
	if _, err := tx.Exec(ctx, `UPDATE sources s SET chunk_count = a.n, first_ms = a.first, last_ms = a.last
		FROM (SELECT count(*) AS n, coalesce(min(ts_start), 0) AS first, coalesce(max(ts_end), 0) AS last FROM chunks WHERE source_key = $1) a
		WHERE s.key = $1`, srcKey); err != nil {
		return st, 0, fmt.Errorf("update source aggregates: %w", err)
	}
	if chunkDelta != 0 || st.NewChunks > 0 || st.RemovedChunks > 0 {
		if _, err := tx.Exec(ctx, `UPDATE store_stats SET chunks = chunks + $1, term_total = term_total + $2, generation = generation + 1`, chunkDelta, termDelta); err != nil {
			return st, 0, fmt.Errorf("update store counts: %w", err)
		}
	}
	return st, srcKey, nil
}

// entRowsOf is the distinct entities chunks reference.
func entRowsOf(chunks []memtree.PreparedChunk) map[string]bool {
	out := map[string]bool{}
	for _, c := range chunks {
		for _, e := range c.Entities {
			out[e.ID] = true
		}
	}
	return out
}

// applyTermDeltas changes the document frequencies of terms (sorted) by deltas:
// new terms inserted, terms no chunk says any more deleted.
func applyTermDeltas(ctx context.Context, tx pgx.Tx, terms []string, deltas []int32) error {
	for _, q := range []string{
		`INSERT INTO term_df(term, df) SELECT * FROM unnest($1::text[], $2::int[]) AS d(term, delta) WHERE delta > 0
			ON CONFLICT (term) DO UPDATE SET df = term_df.df + excluded.df`,
		`DELETE FROM term_df t USING unnest($1::text[], $2::int[]) AS d(term, delta)
			WHERE t.term = d.term AND d.delta < 0 AND t.df + d.delta <= 0`,
		`UPDATE term_df t SET df = t.df + d.delta FROM unnest($1::text[], $2::int[]) AS d(term, delta)
			WHERE t.term = d.term AND d.delta < 0`,
	} {
		if _, err := tx.Exec(ctx, q, terms, deltas); err != nil {
			return fmt.Errorf("update document frequencies: %w", err)
		}
	}
	return nil
}
