package pgstore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Forget deletes the selected sources with their chunks and entity links in one
// transaction, keeping document frequencies, entity counts and the store's
// counts in step (entities nothing links any more are deleted). With dryRun it
// counts the same and changes nothing. Ingesting the same files again restores
// them. Source ids are stored ids (a chat conversation without its month is not
// resolved to its months on this backend yet).
func (s *Store) Forget(ctx context.Context, f memtree.ForgetFilter, dryRun bool) (memtree.ForgetResult, error) {
	res := memtree.ForgetResult{DryRun: dryRun, Sources: []memtree.ForgottenSource{}, NotFound: []string{}}
	if len(f.SourceIDs) == 0 && strings.TrimSpace(f.Root) == "" && f.Before.IsZero() {
		return res, fmt.Errorf("forget: name source ids, a root path or a date: %w", abi.ErrInvalid)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		keys, err := selectForget(ctx, tx, f, &res)
		if err != nil || len(keys) == 0 {
			return err
		}
		// Entities linked from the forgotten chunks: how many links each loses,
		// and whether any other chunk links it.
		rows, err := tx.Query(ctx, `SELECT l.entity_id, count(*),
				EXISTS (SELECT 1 FROM chunk_entities o JOIN chunks oc ON oc.key = o.chunk_key
					WHERE o.entity_id = l.entity_id AND oc.source_key <> ALL($1))
			FROM chunk_entities l JOIN chunks c ON c.key = l.chunk_key
			WHERE c.source_key = ANY($1) GROUP BY l.entity_id ORDER BY l.entity_id`, keys)
		if err != nil {
			return fmt.Errorf("forget: read entity links: %w", err)
		}
		var eids []string
		var elost []int32
		for rows.Next() {
			var id string
			var n int64
			var others bool
			if err := rows.Scan(&id, &n, &others); err != nil {
				rows.Close()
				return fmt.Errorf("forget: read entity links: %w", err)
			}
			eids, elost = append(eids, id), append(elost, int32(-n))
			if others {
				res.EntitiesUpdated++
			} else {
				res.EntitiesDropped++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("forget: read entity links: %w", err)
		}
		var chunks, terms int64
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(term_count), 0) FROM chunks WHERE source_key = ANY($1)`, keys).Scan(&chunks, &terms); err != nil {
			return fmt.Errorf("forget: count chunks: %w", err)
		}
		res.Chunks = int(chunks)
		// Their vectors go with them (chunk_vectors cascades from chunks).
		var vecs int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM chunk_vectors v JOIN chunks c ON c.key = v.chunk_key WHERE c.source_key = ANY($1)`, keys).Scan(&vecs); err != nil {
			return fmt.Errorf("forget: count vectors: %w", err)
		}
		res.Vectors = int(vecs)
		if dryRun {
			return nil
		}
		rows, err = tx.Query(ctx, `SELECT t, -count(*) FROM chunks c, unnest(tsvector_to_array(c.terms)) t
			WHERE c.source_key = ANY($1) GROUP BY t ORDER BY t`, keys)
		if err != nil {
			return fmt.Errorf("forget: read terms: %w", err)
		}
		var ts []string
		var tdeltas []int32
		for rows.Next() {
			var t string
			var d int64
			if err := rows.Scan(&t, &d); err != nil {
				rows.Close()
				return fmt.Errorf("forget: read terms: %w", err)
			}
			ts, tdeltas = append(ts, t), append(tdeltas, int32(d))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("forget: read terms: %w", err)
		}
		if err := applyTermDeltas(ctx, tx, ts, tdeltas); err != nil {
			return fmt.Errorf("forget: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE entities e SET ref_count = e.ref_count + d.delta
			FROM unnest($1::text[], $2::int[]) AS d(id, delta) WHERE e.id = d.id`, eids, elost); err != nil {
			return fmt.Errorf("forget: update entity counts: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM entities WHERE id = ANY($1) AND ref_count <= 0`, eids); err != nil {
			return fmt.Errorf("forget: remove unreferenced entities: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sources WHERE key = ANY($1)`, keys); err != nil {
			return fmt.Errorf("forget: delete sources: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE store_stats SET chunks = chunks - $1, term_total = term_total - $2, generation = generation + 1`, chunks, terms); err != nil {
			return fmt.Errorf("forget: update store counts: %w", err)
		}
		return nil
	})
	return res, err
}

// selectForget returns the keys of the sources f selects, filling res.Sources
// and res.NotFound.
func selectForget(ctx context.Context, tx pgx.Tx, f memtree.ForgetFilter, res *memtree.ForgetResult) ([]int64, error) {
	var a args
	var conds []string
	if len(f.SourceIDs) > 0 {
		ids := make([]string, len(f.SourceIDs))
		for i, id := range f.SourceIDs {
			ids[i] = strings.TrimSpace(id)
		}
		conds = append(conds, "source_id = ANY("+a.add(ids)+")")
	}
	if root := strings.TrimSpace(f.Root); root != "" {
		for _, r := range []string{filepath.Clean(root), absPath(root)} {
			r = strings.TrimSuffix(filepath.ToSlash(r), "/")
			if r == "" {
				r = "/"
			}
			under, msg, doc := strings.TrimSuffix(r, "/")+"/", r+" ", "doc:"+r
			conds = append(conds, "origin = "+a.add(r)+" OR starts_with(origin, "+a.add(under)+") OR starts_with(origin, "+a.add(msg)+
				") OR source_id = "+a.add(doc)+" OR starts_with(source_id, "+a.add(doc+"/")+")")
		}
	}
	where := "true"
	if len(conds) > 0 {
		where = "(" + strings.Join(conds, ") OR (") + ")"
	}
	if !f.Before.IsZero() {
		where = "(" + where + ") AND last_ms < " + a.add(f.Before.UnixMilli())
	}
	rows, err := tx.Query(ctx, `SELECT key, kind, source_id, title, origin, chunk_count, last_ms FROM sources WHERE `+where+` ORDER BY kind, source_id FOR UPDATE`, a...)
	if err != nil {
		return nil, fmt.Errorf("forget: select sources: %w", err)
	}
	defer rows.Close()
	var keys []int64
	found := map[string]bool{}
	for rows.Next() {
		var key int64
		var n int32
		var src memtree.ForgottenSource
		if err := rows.Scan(&key, &src.Kind, &src.SourceID, &src.Title, &src.Origin, &n, &src.LastMS); err != nil {
			return nil, fmt.Errorf("forget: select sources: %w", err)
		}
		src.Chunks = int(n)
		keys = append(keys, key)
		found[src.SourceID] = true
		res.Sources = append(res.Sources, src)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("forget: select sources: %w", err)
	}
	for _, id := range f.SourceIDs {
		if !found[strings.TrimSpace(id)] {
			res.NotFound = append(res.NotFound, id)
		}
	}
	return keys, nil
}

// absPath is p made absolute (p cleaned when it cannot be).
func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	return a
}
