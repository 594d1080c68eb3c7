package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ErrReadOnly is returned (wrapped) when a write is attempted on a read-only store.
var ErrReadOnly = fmt.Errorf("memory tree opened read-only")

func validateSource(in *SourceInput) error {
	where := in.Origin
	if where == "" {
		where = in.SourceID
	}
	switch in.Kind {
	case KindEmail, KindChat, KindDocument:
	default:
		return fmt.Errorf("ingest %s: source kind %q is not one of email, chat, document: %w", where, in.Kind, ErrInvalid)
	}
	if strings.TrimSpace(in.SourceID) == "" {
		return fmt.Errorf("ingest %s: empty source id (the ingester must name every source): %w", where, ErrInvalid)
	}
	if !utf8.ValidString(in.SourceID) || !utf8.ValidString(in.Title) {
		return fmt.Errorf("ingest %s: source id or title is not valid UTF-8: %w", where, ErrInvalid)
	}
	for i, m := range in.Messages {
		if !utf8.ValidString(m.Text) || !utf8.ValidString(m.Author) || !utf8.ValidString(m.Subject) || !utf8.ValidString(m.Ref) || !utf8.ValidString(m.ReplyTo) {
			return fmt.Errorf("ingest %s: message %d (ref %q) is not valid UTF-8; decode it before ingesting: %w", where, i+1, m.Ref, ErrInvalid)
		}
	}
	return nil
}

// Prepared is a source made ready for writing: validated, chunked, its entities
// extracted and its summary tree built. Preparing touches no store, so an ingester
// can prepare the next sources on another core while the writer commits this one.
type Prepared struct {
	in     SourceInput
	chunks []chunk
	enc    []chunkJSON // aligned with chunks
	sums   []summaryNode
	sumEnc []summaryJSON // aligned with sums
	nEnts  int
	rows   []mergeRow // a Merge source's messages as source_messages rows
	// Chunking and Summaries are how long Prepare took to chunk the source (with
	// its entities) and to build its summary tree.
	Chunking, Summaries time.Duration
}

// chunkJSON is a chunk's column values that Prepare encodes, off the writer.
type chunkJSON struct {
	refs, spans, attachments string
	tokens                   int
}

// summaryJSON is a summary node's JSON columns, encoded by Prepare.
type summaryJSON struct {
	children, leaves string
}

// Prepare validates and chunks one source, extracts its entities and builds its
// summary tree, without touching any store. A source with no text is rejected with
// ErrInvalid. Of a Merge source's messages sharing a Ref the last is kept; the
// messages are encoded for source_messages here, and the merge with what the store
// holds happens when the source is written (see mergeStored).
func Prepare(in SourceInput) (*Prepared, error) {
	return prepare(in, true)
}

// prepare is Prepare; encode says whether to encode a Merge source's messages for
// source_messages (the union mergeStored prepares again needs no rows).
func prepare(in SourceInput, encode bool) (*Prepared, error) {
	if err := validateSource(&in); err != nil {
		return nil, err
	}
	in.Messages = append([]MessageInput(nil), in.Messages...)
	if in.Merge {
		in.Messages = dedupeRefs(in.Messages)
	}
	sortMessages(in.Messages)
	start := time.Now()
	chunks := buildChunks(&in, maxChunkChars)
	chunking := time.Since(start)
	if len(chunks) == 0 {
		where := in.Origin
		if where == "" {
			where = in.SourceID
		}
		return nil, fmt.Errorf("ingest %s: source %q has no text to store: %w", where, in.SourceID, ErrInvalid)
	}
	ents := map[string]bool{}
	for _, c := range chunks {
		for id := range c.Entities {
			ents[id] = true
		}
	}
	enc := make([]chunkJSON, len(chunks))
	for i, c := range chunks {
		refs := c.Refs
		if refs == nil {
			refs = []string{}
		}
		enc[i] = chunkJSON{refs: jsonOf(refs), spans: jsonOf(c.Spans), attachments: jsonOf(c.Attachments), tokens: tokenCount(c.Text)}
	}
	start = time.Now()
	sums := buildSummaries(&in, chunks)
	sumEnc := make([]summaryJSON, len(sums))
	for i, n := range sums {
		sumEnc[i] = summaryJSON{children: jsonOf(n.Children), leaves: jsonOf(n.Leaves)}
	}
	p := &Prepared{in: in, chunks: chunks, enc: enc, sums: sums, sumEnc: sumEnc, nEnts: len(ents),
		Chunking: chunking, Summaries: time.Since(start)}
	if in.Merge && encode {
		rows, err := mergeKeys(in.Messages)
		if err != nil {
			return nil, fmt.Errorf("ingest %s: %w", in.SourceID, err)
		}
		p.rows = rows
	}
	return p, nil
}

// SourceID names the prepared source.
func (p *Prepared) SourceID() string { return p.in.SourceID }

// Ingest writes one source in one transaction: it chunks the messages, extracts
// entities, builds the summary tree and replaces the chunk set an earlier ingest of
// the same (Kind, SourceID) left. Identical input adds nothing (UnchangedChunks counts
// it). A source with Merge set is first merged with the messages earlier Merge
// ingests of it stored (see SourceInput.Merge): what is written is their union. A
// source with no text is rejected with ErrInvalid.
func (s *Store) Ingest(ctx context.Context, in SourceInput) (IngestStats, error) {
	if s.w == nil {
		return IngestStats{}, fmt.Errorf("ingest %s: %w; open it with memtree.Open", in.SourceID, ErrReadOnly)
	}
	p, err := Prepare(in)
	if err != nil {
		return IngestStats{}, err
	}
	return s.IngestPrepared(ctx, p)
}

// IngestPrepared writes a source made by Prepare in its own transaction (a batch of
// one; see Ingest and BatchWriter). A failure rolls back this source only.
func (s *Store) IngestPrepared(ctx context.Context, p *Prepared) (IngestStats, error) {
	if s.w == nil {
		return IngestStats{Entities: p.nEnts}, fmt.Errorf("ingest %s: %w; open it with memtree.Open", p.in.SourceID, ErrReadOnly)
	}
	bw, err := s.NewBatchWriter(ctx)
	if err != nil {
		return IngestStats{Entities: p.nEnts}, err
	}
	st, err := bw.Write(p)
	if cerr := bw.Close(); err == nil && cerr != nil {
		return IngestStats{Entities: p.nEnts}, cerr
	}
	return st, err
}

// Batch limits of a BatchWriter: Due reports a batch full at either. Larger batches
// rewrite the shared index and entity pages less often (measured at -scale 100000:
// 256 sources per batch take 13 % less writer CPU than 64; at 1024 sources or 1 s a
// batch of mail holds up to 4 times as many threads again); the time limit bounds how long
// a batch stays unseen by readers, and an ingest's write pipeline (8 MiB of source
// text in flight) bounds the memory a batch holds.
const (
	DefaultBatchSources  = 1024
	DefaultBatchDuration = time.Second
)

// BatchWriter writes consecutive prepared sources into one write transaction (a
// batch): a source that fails is rolled back alone and the rest of the batch still
// commits. Grouping sources saves the per-commit WAL writes and full-text segment
// flush that dominate a one-transaction-per-source ingest. Reads inside the batch
// (what a source already stored) see the earlier sources of the same batch.
//
// A source is not wrapped in a SAVEPOINT: SQLite would copy every page the source
// touches into an in-memory sub-journal (measured: about a fifth of the writer's
// time). Instead the batch keeps its sources, and a failing source rolls the whole
// transaction back and writes the batch's earlier sources again into a new one, which
// leaves the store as a rolled-back savepoint would. Failures are rare (validation
// happens in Prepare), so the replay costs nothing on a normal run.
//
// Durability: the store runs WAL with synchronous=NORMAL, so a committed batch
// survives a process crash; a crash (or kill) loses at most the open batch, and never
// leaves part of a source. Stats returned by Write become final when the batch
// commits: if Flush or Close fails, every source written since the last successful
// Flush is lost and must be reported as failed by the caller.
//
// A BatchWriter holds the store's single writer connection while a batch is open:
// use it from one goroutine, Flush or Close it before any other write on the Store
// (Ingest, Optimize, EmbedMissing), which would otherwise wait for it.
type BatchWriter struct {
	s *Store
	// ctx is the caller's context, checked before each source; txCtx (never
	// cancelled) runs the statements so that a cancel cannot interrupt SQLite mid-way
	// through a write (an interrupted write may roll back the whole transaction): a
	// cancelled run keeps the whole sources written so far once it calls Close.
	ctx, txCtx context.Context
	tx         *sql.Tx
	n          int         // sources written into the open batch
	written    []*Prepared // those sources, to write again after a failed one
	began      time.Time   // when the open batch began
	broken     error       // the open batch was rolled back by SQLite itself
	// pend holds what the open batch's sources wrote but the store does not hold yet:
	// full-text rows, entity counts and entity links (see pendingWrites).
	pend pendingWrites

	// MaxSources and MaxDuration bound a batch (see Due); NewBatchWriter sets them to
	// DefaultBatchSources and DefaultBatchDuration.
	MaxSources  int
	MaxDuration time.Duration

	times BatchTimes
}

// BatchTimes says where a BatchWriter's time went, summed over its batches: Rows
// writing the sources' rows (chunks, summaries, messages, and the merge of a Merge
// source with what the store holds), Merge the part of Rows that prepared merged
// sources again, Entities the batches' entity counts and links, FTS indexing the
// new chunks and summaries for full-text search, Commit committing.
type BatchTimes struct {
	Rows, Merge, Entities, FTS, Commit time.Duration
}

// Times returns where the writer's time went so far.
func (b *BatchWriter) Times() BatchTimes { return b.times }

// NewBatchWriter starts a batch writer on a store opened with Open. The first
// transaction begins with the first Write.
func (s *Store) NewBatchWriter(ctx context.Context) (*BatchWriter, error) {
	if s.w == nil {
		return nil, fmt.Errorf("ingest: %w; open it with memtree.Open", ErrReadOnly)
	}
	return &BatchWriter{s: s, ctx: ctx, txCtx: context.WithoutCancel(ctx),
		MaxSources: DefaultBatchSources, MaxDuration: DefaultBatchDuration}, nil
}

// Pending returns how many sources the open batch holds (written, not yet committed).
func (b *BatchWriter) Pending() int { return b.n }

// Remaining returns how long the open batch may still stay open before Due reports
// it; 0 when it is due (or holds nothing).
func (b *BatchWriter) Remaining() time.Duration {
	if b.tx == nil {
		return 0
	}
	return max(0, b.MaxDuration-time.Since(b.began))
}

// Due reports whether the open batch has reached MaxSources sources or MaxDuration
// of age, or failed as a whole, i.e. the caller should Flush it now.
func (b *BatchWriter) Due() bool {
	return b.broken != nil || b.tx != nil && (b.n >= b.MaxSources || time.Since(b.began) >= b.MaxDuration)
}

// Write writes one prepared source into the open batch (beginning one when none is
// open). On error the source is rolled back alone and the batch stays usable; the
// stats are final once the batch commits (see BatchWriter).
func (b *BatchWriter) Write(p *Prepared) (IngestStats, error) {
	st := IngestStats{Entities: p.nEnts}
	id := p.in.SourceID
	if b.s == nil {
		return st, fmt.Errorf("ingest %s: batch writer is closed", id)
	}
	if err := b.ctx.Err(); err != nil {
		return st, fmt.Errorf("ingest %s: %w", id, err)
	}
	if b.broken != nil {
		return st, fmt.Errorf("ingest %s: %w", id, b.broken)
	}
	if b.tx == nil {
		tx, err := b.s.w.BeginTx(b.txCtx, nil)
		if err != nil {
			return st, fmt.Errorf("ingest %s: begin transaction: %w", id, err)
		}
		b.tx, b.n, b.began = tx, 0, time.Now()
	}
	ctx := b.txCtx
	start := time.Now()
	defer func() { b.times.Rows += time.Since(start) }()
	if err := b.s.writeSource(ctx, b.tx, p, &st, &b.pend, &b.times); err != nil {
		if rerr := b.replay(); rerr != nil {
			b.broken = fmt.Errorf("batch of %d sources rolled back after source %s failed: %w", b.n, id, rerr)
		}
		return IngestStats{Entities: st.Entities}, fmt.Errorf("ingest %s: %w", id, err)
	}
	b.n++
	b.written = append(b.written, p)
	return st, nil
}

// replay rolls the open transaction back (undoing the source that just failed with
// everything else in it) and writes the batch's earlier sources again into a new
// transaction. They were written on the same store state before, so they write the
// same rows again; their stats, already returned by Write, stay valid. An error
// means the batch is lost (Flush reports it).
func (b *BatchWriter) replay() error {
	// A rollback error means SQLite already rolled the transaction back itself.
	_ = b.tx.Rollback()
	b.tx, b.pend = nil, pendingWrites{}
	tx, err := b.s.w.BeginTx(b.txCtx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	b.tx = tx
	for _, p := range b.written {
		var st IngestStats
		if err := b.s.writeSource(b.txCtx, tx, p, &st, &b.pend, &b.times); err != nil {
			return fmt.Errorf("write source %s again: %w", p.in.SourceID, err)
		}
	}
	return nil
}

// pendingWrites lists what the open batch wrote but the store does not hold yet:
// chunk and summary rows not in their full-text index, and the entity counts and
// entity links of the batch's new chunks. Every chunk and summary row of the store is
// either indexed or listed here while its batch is open; sync writes them all with
// one statement per table before the batch commits, so FTS5 writes one segment per
// batch (not one per row) and each entity and index page is updated once per batch
// (not once per source).
type pendingWrites struct {
	chunks, sums []int64
	ents         map[string]*entAgg // by entity id: the batch's mentions
	links        []entLink
	// changed says a source of the batch changed the store: sync bumps the store
	// generation once for all of them (readers see a batch whole, at its commit).
	changed bool
}

// entLink links an entity to a chunk that mentions it.
type entLink struct {
	ent string
	rid int64
}

// addEntity counts one mention of entity id (of kind, named surface) in a chunk of
// time ts. Mentions add up in any order to what one upsert per mention would store:
// the count, the newest time, and the surface of the newest mention (of the last
// one among equal times, in write order).
func (f *pendingWrites) addEntity(id, kind, surface string, ts int64) {
	if f.ents == nil {
		f.ents = map[string]*entAgg{}
	}
	a := f.ents[id]
	if a == nil {
		a = &entAgg{ID: id, Kind: kind, Surface: surface, TS: ts}
		f.ents[id] = a
	}
	a.N++
	if ts >= a.TS {
		a.TS, a.Surface = ts, surface
	}
}

// sync writes the pending entity counts and links and indexes the pending rows in
// chunks_fts and summaries_fts. It must run before any row is deleted (the delete
// triggers remove rows from the index, which must hold them; removing a chunk reads
// and refreshes its entities from their links) and before the batch commits.
func (f *pendingWrites) sync(ctx context.Context, s *Store, tx *sql.Tx) error {
	return f.syncTimed(ctx, s, tx, nil)
}

// syncTimed is sync, adding the time it takes to times (nil: not counted).
func (f *pendingWrites) syncTimed(ctx context.Context, s *Store, tx *sql.Tx, times *BatchTimes) error {
	if times == nil {
		times = &BatchTimes{}
	}
	start := time.Now()
	if len(f.ents) > 0 {
		list := make([]*entAgg, 0, len(f.ents))
		for _, a := range f.ents {
			list = append(list, a)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
		err := qUpsertEntities.exec(ctx, s, tx, len(list), func(i int, args []any) []any {
			a := list[i]
			return append(args, a.ID, a.Kind, a.Surface, a.N, a.TS)
		})
		if err != nil {
			return fmt.Errorf("write %d entities: %w", len(list), err)
		}
	}
	if len(f.links) > 0 {
		// In key order, the inserts walk the links' B-tree from left to right.
		sort.Slice(f.links, func(i, j int) bool {
			a, b := f.links[i], f.links[j]
			return a.ent < b.ent || a.ent == b.ent && a.rid < b.rid
		})
		err := qInsertLinks.exec(ctx, s, tx, len(f.links), func(i int, args []any) []any {
			return append(args, f.links[i].ent, f.links[i].rid)
		})
		if err != nil {
			return fmt.Errorf("link %d entities: %w", len(f.links), err)
		}
	}
	mid := time.Now()
	times.Entities += mid.Sub(start)
	defer func() { times.FTS += time.Since(mid) }()
	if len(f.chunks) > 0 {
		if _, err := s.txExec(ctx, tx, qIndexChunks, jsonOf(f.chunks)); err != nil {
			return fmt.Errorf("index %d chunks for full-text search: %w", len(f.chunks), err)
		}
	}
	if len(f.sums) > 0 {
		if _, err := s.txExec(ctx, tx, qIndexSummaries, jsonOf(f.sums)); err != nil {
			return fmt.Errorf("index %d summaries for full-text search: %w", len(f.sums), err)
		}
	}
	if f.changed {
		if _, err := s.txExec(ctx, tx, qBumpGeneration); err != nil {
			return fmt.Errorf("bump store generation: %w", err)
		}
	}
	*f = pendingWrites{}
	return nil
}

// Flush commits the open batch (a no-op when none is open). On error the batch's
// sources are not stored.
func (b *BatchWriter) Flush() error {
	if b.tx == nil && b.broken == nil {
		return nil
	}
	tx, n, broken, pend := b.tx, b.n, b.broken, b.pend
	b.tx, b.n, b.broken, b.pend, b.written = nil, 0, nil, pendingWrites{}, nil
	if broken == nil {
		if err := pend.syncTimed(b.txCtx, b.s, tx, &b.times); err != nil {
			broken = err
		}
	}
	if broken != nil {
		if tx != nil {
			tx.Rollback()
		}
		return fmt.Errorf("ingest: %d sources not stored: %w", n, broken)
	}
	start := time.Now()
	defer func() { b.times.Commit += time.Since(start) }()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ingest: commit batch of %d sources: %w", n, err)
	}
	return nil
}

// Close commits the open batch and releases the writer; further Writes fail.
func (b *BatchWriter) Close() error {
	if b.s == nil {
		return nil
	}
	err := b.Flush()
	b.s = nil
	return err
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return "[]"
	}
	return string(b)
}

// entAgg is one entity's contribution from the open batch: how many of its new chunks
// mention it, the newest chunk time, and the surface seen at that time.
type entAgg struct {
	ID      string `json:"i"`
	Kind    string `json:"k"`
	Surface string `json:"s"`
	N       int    `json:"n"`
	TS      int64  `json:"t"`
}

// writeSource writes p (a Merge source: its union with what the store holds) in tx.
// It reads only what tx sees and changes nothing in p, so writing p again on the
// same store state (BatchWriter.replay) writes the same rows.
func (s *Store) writeSource(ctx context.Context, tx *sql.Tx, p *Prepared, st *IngestStats, pend *pendingWrites, times *BatchTimes) error {
	in := &p.in
	now := time.Now().UnixMilli()
	tags := in.Tags
	if tags == nil {
		tags = []string{}
	}
	tagsJSON := jsonOf(tags)
	// The row takes the aggregates of the input's chunks: final for a source with no
	// stored chunks unless a merge changes its chunk set (then set again below), and
	// recounted below for one with stored chunks. This saves a new source an UPDATE.
	aggChunks := p.chunks
	var first, last int64
	if len(aggChunks) > 0 {
		first, last = aggChunks[0].TSStart, aggChunks[0].TSEnd
		for _, c := range aggChunks {
			first, last = min(first, c.TSStart), max(last, c.TSEnd)
		}
	}
	var srcRow int64
	err := s.txQueryRow(ctx, tx, qUpsertSource,
		in.Kind, in.SourceID, in.Title, in.Provider, tagsJSON, in.Origin, now, len(aggChunks), first, last).Scan(&srcRow)
	if err != nil {
		return fmt.Errorf("write source row: %w", err)
	}
	// ours says which chunks hold a message of the input, when p is merged with
	// stored messages the input lacks: only those count as unchanged, so that the
	// exports of one source, each re-ingested, count each chunk about once.
	var ours func(c *chunk) bool
	if in.Merge {
		start := time.Now()
		mp, err := s.mergeStored(ctx, tx, p, srcRow)
		times.Merge += time.Since(start)
		if err != nil {
			return err
		}
		if mp != p {
			ours = inputChunk(p)
		}
		p, in = mp, &mp.in
		st.Entities = p.nEnts
	}
	chunks := p.chunks
	// Existing chunks of this source.
	existing := map[string]int64{}
	rows, err := s.txQuery(ctx, tx, qSourceChunks, srcRow)
	if err != nil {
		return fmt.Errorf("read existing chunks: %w", err)
	}
	for rows.Next() {
		var id string
		var rid int64
		if err := rows.Scan(&id, &rid); err != nil {
			rows.Close()
			return fmt.Errorf("read existing chunks: %w", err)
		}
		existing[id] = rid
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read existing chunks: %w", err)
	}
	if len(existing) > 0 && !in.Merge {
		// A source written without Merge keeps no messages: drop those an earlier
		// Merge ingest of it stored, which must not come back.
		if _, err := s.txExec(ctx, tx, qDeleteMessages, srcRow); err != nil {
			return fmt.Errorf("delete stored messages: %w", err)
		}
	}
	if len(existing) > 0 {
		keep := map[string]bool{}
		for _, c := range chunks {
			keep[c.ID] = true
		}
		// Remove chunks that are no longer part of the source.
		touched := map[string]bool{}
		for id, rid := range existing {
			if keep[id] {
				continue
			}
			if st.RemovedChunks == 0 {
				// The delete trigger removes the row from the index, which must hold it.
				if err := pend.syncTimed(ctx, s, tx, times); err != nil {
					return err
				}
			}
			if err := s.removeChunk(ctx, tx, id, rid, touched); err != nil {
				return err
			}
			st.RemovedChunks++
		}
		if len(touched) > 0 {
			if err := s.refreshEntities(ctx, tx, touched); err != nil {
				return err
			}
		}
	}
	// Insert new chunks; their entity counts and links are written once per batch.
	insChunk := s.txStmt(ctx, tx, s.ws.insChunk)
	changed := st.RemovedChunks > 0
	for i, c := range chunks {
		if _, ok := existing[c.ID]; ok {
			if ours == nil || ours(&chunks[i]) {
				st.UnchangedChunks++
			}
			continue
		}
		var ref any
		if len(c.Refs) > 0 {
			ref = c.Refs[0]
		}
		e := &p.enc[i]
		var rid int64
		err := insChunk.QueryRowContext(ctx, c.ID, srcRow, in.Kind, in.SourceID, c.Seq, c.TS, c.TSStart, c.TSEnd,
			in.Title, c.Text, tagsJSON, ref, e.refs, e.spans, e.attachments, e.tokens, now).Scan(&rid)
		if err == sql.ErrNoRows {
			// The same id exists under another source row: identical kind, source id,
			// seq and text cannot differ, so this only happens on a hash collision.
			return fmt.Errorf("chunk %s (seq %d) already stored for another source", c.ID, c.Seq)
		}
		if err != nil {
			return fmt.Errorf("write chunk seq %d: %w", c.Seq, err)
		}
		for id, e := range c.Entities {
			pend.addEntity(id, e.Kind, e.Surface, c.TS)
			pend.links = append(pend.links, entLink{id, rid})
		}
		pend.chunks = append(pend.chunks, rid)
		st.NewChunks++
		changed = true
	}
	// Source aggregates: a new source's chunk set is exactly chunks; a re-ingested one
	// may keep rows whose times differ from the input, so count those from the store.
	if len(existing) == 0 {
		if len(chunks) != len(aggChunks) || (len(chunks) > 0 && &chunks[0] != &aggChunks[0]) {
			first, last := chunks[0].TSStart, chunks[0].TSEnd
			for _, c := range chunks {
				first, last = min(first, c.TSStart), max(last, c.TSEnd)
			}
			if _, err := s.txExec(ctx, tx, qSetSourceAggregates, len(chunks), first, last, srcRow); err != nil {
				return fmt.Errorf("update source aggregates: %w", err)
			}
		}
	} else if _, err := s.txExec(ctx, tx, qSourceAggregates, srcRow); err != nil {
		return fmt.Errorf("update source aggregates: %w", err)
	}
	nsum := 0
	if len(existing) > 0 {
		if err := s.txQueryRow(ctx, tx, qCountSummaries, srcRow).Scan(&nsum); err != nil {
			return fmt.Errorf("read summaries: %w", err)
		}
	}
	if changed || nsum == 0 {
		if err := s.writeSummaries(ctx, tx, srcRow, p.sums, p.sumEnc, len(existing) > 0, pend); err != nil {
			return err
		}
	}
	if changed {
		pend.changed = true // bumped once per batch, by pend.sync
	}
	return nil
}

// removeChunk deletes one chunk with its FTS row (trigger), entity links (cascade),
// vectors; entities it referenced are noted in touched for a refresh.
func (s *Store) removeChunk(ctx context.Context, tx *sql.Tx, id string, rid int64, touched map[string]bool) error {
	rows, err := s.txQuery(ctx, tx, qChunkEntities, rid)
	if err != nil {
		return fmt.Errorf("read entities of chunk %s: %w", id, err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			rows.Close()
			return fmt.Errorf("read entities of chunk %s: %w", id, err)
		}
		touched[e] = true
	}
	rows.Close()
	if _, err := s.txExec(ctx, tx, qDeleteChunk, rid); err != nil {
		return fmt.Errorf("delete chunk %s: %w", id, err)
	}
	if _, err := s.txExec(ctx, tx, qDeleteChunkVectors, id); err != nil {
		return fmt.Errorf("delete vectors of chunk %s: %w", id, err)
	}
	return nil
}

// refreshEntities recomputes ref_count and last_seen of the given entities from their
// links, deleting entities no chunk references any more.
func (s *Store) refreshEntities(ctx context.Context, tx *sql.Tx, ids map[string]bool) error {
	for id := range ids {
		if _, err := s.txExec(ctx, tx, qRefreshEntity, id); err != nil {
			return fmt.Errorf("refresh entity %s: %w", id, err)
		}
		if _, err := s.txExec(ctx, tx, qDropEntity, id); err != nil {
			return fmt.Errorf("drop unreferenced entity %s: %w", id, err)
		}
	}
	return nil
}

// writeStmts are the writer's prepared statements, reused by every Ingest.
type writeStmts struct {
	insChunk, insSummary *sql.Stmt
}

func (ws *writeStmts) prepare(db *sql.DB) error {
	var err error
	prep := func(dst **sql.Stmt, q string) {
		if err == nil {
			*dst, err = db.Prepare(q)
		}
	}
	prep(&ws.insChunk, `INSERT INTO chunks(id, source_rowid, kind, source_id, seq, ts, ts_start, ts_end,
		title, text, tags_json, source_ref, source_refs_json, ref_spans_json, attachments_json, token_count, created_ms)
		VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING RETURNING rowid`)
	prep(&ws.insSummary, `INSERT INTO summaries(id, source_rowid, level, idx, text, child_ids_json, leaf_ids_json, ts_start, ts_end)
		VALUES(?,?,?,?,?,?,?,?,?) RETURNING rowid`)
	if err != nil {
		return fmt.Errorf("prepare write statements: %w", err)
	}
	return nil
}

func (ws *writeStmts) close() {
	for _, st := range []*sql.Stmt{ws.insChunk, ws.insSummary} {
		if st != nil {
			st.Close()
		}
	}
}

// stmtCache holds the writer's prepared statements by SQL text (the writer has one
// connection, so a statement prepared once serves every transaction).
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
	// inTx holds the statements bound to transaction tx (tx.StmtContext), so that
	// a batch binds each statement once rather than once a use; database/sql closes
	// them when tx ends, and the next transaction starts a fresh map.
	tx   *sql.Tx
	inTx map[*sql.Stmt]*sql.Stmt
}

// txStmt returns st bound to tx, binding it once per transaction.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	s.sc.mu.Lock()
	defer s.sc.mu.Unlock()
	if s.sc.tx != tx {
		s.sc.tx, s.sc.inTx = tx, map[*sql.Stmt]*sql.Stmt{}
	}
	ts, ok := s.sc.inTx[st]
	if !ok {
		ts = tx.StmtContext(ctx, st)
		s.sc.inTx[st] = ts
	}
	return ts
}

// prepareAll prepares every writer statement; it must run outside a transaction
// (the writer's single connection is busy inside one).
func (c *stmtCache) prepareAll(db *sql.DB) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = map[string]*sql.Stmt{}
	for _, q := range writerQueries {
		st, err := db.Prepare(q)
		if err != nil {
			return fmt.Errorf("prepare %.50s…: %w", q, err)
		}
		c.m[q] = st
	}
	return nil
}

func (s *Store) prepared(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	s.sc.mu.Lock()
	st, ok := s.sc.m[q]
	s.sc.mu.Unlock()
	if !ok {
		// Not registered with writerSQL: prepare for this transaction only.
		return tx.PrepareContext(ctx, q)
	}
	return s.txStmt(ctx, tx, st), nil
}

func (s *Store) txExec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	st, err := s.prepared(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// rowErr is a *sql.Row-like result for txQueryRow.
type rowErr struct {
	row *sql.Row
	err error
}

func (r rowErr) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.row.Scan(dest...)
}

func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) rowErr {
	st, err := s.prepared(ctx, tx, q)
	if err != nil {
		return rowErr{err: err}
	}
	return rowErr{row: st.QueryRowContext(ctx, args...)}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
	c.tx, c.inTx = nil, nil
}

// writerQueries lists every statement the writer prepares once at Open.
var writerQueries []string

func writerSQL(q string) string {
	writerQueries = append(writerQueries, q)
	return q
}

// Writer statements, prepared at Open.
var (
	qUpsertSource = writerSQL(`INSERT INTO sources(kind, source_id, title, provider, tags_json, origin, updated_ms,
			chunk_count, first_ms, last_ms)
		VALUES(?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(kind, source_id) DO UPDATE SET title=excluded.title, provider=excluded.provider,
			tags_json=excluded.tags_json, origin=excluded.origin, updated_ms=excluded.updated_ms,
			chunk_count=excluded.chunk_count, first_ms=excluded.first_ms, last_ms=excluded.last_ms
		RETURNING rowid`)
	qSourceChunks     = writerSQL(`SELECT id, rowid FROM chunks WHERE source_rowid=?`)
	qSourceAggregates = writerSQL(`UPDATE sources SET
		chunk_count=(SELECT count(*) FROM chunks WHERE source_rowid=?1),
		first_ms=coalesce((SELECT min(ts_start) FROM chunks WHERE source_rowid=?1),0),
		last_ms=coalesce((SELECT max(ts_end) FROM chunks WHERE source_rowid=?1),0)
		WHERE rowid=?1`)
	qSetSourceAggregates = writerSQL(`UPDATE sources SET chunk_count=?, first_ms=?, last_ms=? WHERE rowid=?`)
	qUpsertEntities      = newMultiRow(`INSERT INTO entities(id, kind, surface, ref_count, last_seen) VALUES`, 5,
		`ON CONFLICT(id) DO UPDATE SET ref_count=ref_count+excluded.ref_count, last_seen=max(last_seen, excluded.last_seen),
			surface=CASE WHEN excluded.last_seen >= last_seen THEN excluded.surface ELSE surface END`)
	qInsertLinks    = newMultiRow(`INSERT OR IGNORE INTO chunk_entities(entity_id, chunk_rowid) VALUES`, 2, ``)
	qCountSummaries = writerSQL(`SELECT count(*) FROM summaries WHERE source_rowid=?`)
	qBumpGeneration = writerSQL(`INSERT INTO meta(key, value) VALUES('generation', '1')
			ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER)+1`)
	qChunkEntities      = writerSQL(`SELECT entity_id FROM chunk_entities WHERE chunk_rowid=?`)
	qDeleteChunk        = writerSQL(`DELETE FROM chunks WHERE rowid=?`)
	qDeleteChunkVectors = writerSQL(`DELETE FROM vectors WHERE node_id=?`)
	qRefreshEntity      = writerSQL(`UPDATE entities SET
			ref_count=(SELECT count(*) FROM chunk_entities WHERE entity_id=?1),
			last_seen=coalesce((SELECT max(c.ts) FROM chunk_entities ce JOIN chunks c ON c.rowid=ce.chunk_rowid WHERE ce.entity_id=?1),0)
			WHERE id=?1`)
	qDropEntity           = writerSQL(`DELETE FROM entities WHERE id=? AND ref_count<=0`)
	qDeleteSummaryVectors = writerSQL(`DELETE FROM vectors WHERE node_id IN (SELECT id FROM summaries WHERE source_rowid=?)`)
	qDeleteSummaries      = writerSQL(`DELETE FROM summaries WHERE source_rowid=?`)
	qIndexChunks          = writerSQL(`INSERT INTO chunks_fts(rowid, text, title)
		SELECT rowid, text, title FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))`)
	qIndexSummaries = writerSQL(`INSERT INTO summaries_fts(rowid, text)
		SELECT rowid, text FROM summaries WHERE rowid IN (SELECT value FROM json_each(?))`)
)

// Optimize merges the full-text indexes into one segment each. Ingest writes one
// small segment per batch transaction; an ingest run calls Optimize once at its end
// so queries read few segments. It runs in its own transaction.
func (s *Store) Optimize(ctx context.Context) error {
	if s.w == nil {
		return fmt.Errorf("optimize memory tree: %w", ErrReadOnly)
	}
	for _, q := range []string{
		`INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')`,
		`INSERT INTO summaries_fts(summaries_fts) VALUES('optimize')`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("optimize memory tree full-text index: %w", err)
		}
	}
	return nil
}
