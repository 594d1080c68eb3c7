package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// embedBatch is how many chunk texts EmbedMissing sends per Embed call.
const embedBatch = 64

// modelRow returns the embed_models row of (model, dim), creating it when create.
func modelRow(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, model string, dim int, create bool) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT rowid FROM embed_models WHERE model=? AND dim=?`, model, dim).Scan(&id)
	if err == sql.ErrNoRows && create {
		err = q.QueryRowContext(ctx, `INSERT INTO embed_models(model, dim) VALUES(?,?) RETURNING rowid`, model, dim).Scan(&id)
	}
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedding model %s/%d: %w", model, dim, err)
	}
	return id, nil
}

// EmbedMissing embeds every chunk, and every summary covering two or more chunks,
// that has no vector for emb's model yet, in batches, each batch written in one
// transaction. It returns how many nodes (chunks and summaries) it embedded. Vectors
// are stored L2-normalised per (model, dimension); a model whose dimension changed
// gets a fresh set, never mixed with the old one. A summary of one chunk is not
// embedded: its text is an extract of that chunk.
func (s *Store) EmbedMissing(ctx context.Context, emb Embedder) (int, error) {
	if s.w == nil {
		return 0, fmt.Errorf("embed chunks: %w; open it with memtree.Open", ErrReadOnly)
	}
	model := emb.Model()
	done := 0
	var dim int
	var mrow int64
	nodes := []string{
		`SELECT id, text FROM chunks WHERE id NOT IN (%s) ORDER BY rowid LIMIT ?`,
		`SELECT id, text FROM summaries WHERE json_array_length(leaf_ids_json) >= 2 AND id NOT IN (%s) ORDER BY rowid LIMIT ?`,
	}
	for len(nodes) > 0 {
		// Nodes without a vector of the model (any dimension row of that model counts
		// only once its dimension is known).
		have, arg := `SELECT v.node_id FROM vectors v JOIN embed_models m ON m.rowid=v.model_rowid WHERE m.model=?`, any(model)
		if mrow != 0 {
			have, arg = `SELECT node_id FROM vectors WHERE model_rowid=?`, mrow
		}
		rows, err := s.w.QueryContext(ctx, fmt.Sprintf(nodes[0], have), arg, embedBatch)
		if err != nil {
			return done, fmt.Errorf("embed chunks: find nodes without vectors: %w", err)
		}
		var ids, texts []string
		for rows.Next() {
			var id, text string
			if err := rows.Scan(&id, &text); err != nil {
				rows.Close()
				return done, fmt.Errorf("embed chunks: %w", err)
			}
			ids, texts = append(ids, id), append(texts, text)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return done, fmt.Errorf("embed chunks: %w", err)
		}
		if len(ids) == 0 {
			nodes = nodes[1:]
			continue
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return done, fmt.Errorf("embed chunks with %s: %w", model, err)
		}
		if len(vecs) != len(texts) {
			return done, fmt.Errorf("embed chunks with %s: got %d vectors for %d texts", model, len(vecs), len(texts))
		}
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return done, fmt.Errorf("embed chunks: begin: %w", err)
		}
		for i, v := range vecs {
			if dim == 0 {
				dim = len(v)
				if dim == 0 {
					tx.Rollback()
					return done, fmt.Errorf("embed chunks with %s: empty vector", model)
				}
				if mrow, err = modelRow(ctx, tx, model, dim, true); err != nil {
					tx.Rollback()
					return done, err
				}
			}
			if len(v) != dim {
				tx.Rollback()
				return done, fmt.Errorf("embed chunks with %s: vector %d has %d dimensions, want %d", model, i, len(v), dim)
			}
			v = append([]float32(nil), v...)
			if embed.Normalize(v) != nil {
				tx.Rollback()
				return done, fmt.Errorf("embed chunks with %s: zero or non-finite vector for node %s", model, ids[i])
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vectors(model_rowid, node_id, vec) VALUES(?,?,?)`, mrow, ids[i], embed.EncodeBlob(v)); err != nil {
				tx.Rollback()
				return done, fmt.Errorf("embed chunks: store vector: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('generation', '1')
			ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER)+1`); err != nil {
			tx.Rollback()
			return done, fmt.Errorf("embed chunks: bump generation: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return done, fmt.Errorf("embed chunks: commit: %w", err)
		}
		done += len(ids)
	}
	return done, nil
}

// vecIndex is an in-memory index of one model's vectors, valid for one
// generation: an exact vek32 scan up to embed.DefaultBinaryThreshold vectors,
// 1-bit codes with an exact rerank above.
type vecIndex struct {
	gen string
	ix  *embed.Index
}

var vecCache sync.Map // store path + model row → *vecIndex

func (s *Store) loadVectors(ctx context.Context, db *sql.DB, gen string, mrow int64, dim int) (*vecIndex, error) {
	key := fmt.Sprintf("%s\x00%d", s.path, mrow)
	if v, ok := vecCache.Load(key); ok {
		if vi := v.(*vecIndex); vi.gen == gen {
			return vi, nil
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT node_id, vec FROM vectors WHERE model_rowid=?`, mrow)
	if err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	defer rows.Close()
	vi := &vecIndex{gen: gen, ix: embed.NewIndex(dim)}
	for rows.Next() {
		var id string
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
		if len(b) != 4*dim {
			return nil, fmt.Errorf("load vectors: vector of %s has %d bytes, want %d: the store is damaged; re-run ingest", id, len(b), 4*dim)
		}
		v, err := embed.DecodeBlob(b)
		if err == nil {
			err = vi.ix.Add(id, v)
		}
		if err != nil {
			return nil, fmt.Errorf("load vectors: %w: the store is damaged; re-run ingest", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	vecCache.Store(key, vi)
	return vi, nil
}

// vectorList embeds the query and ranks up to depth chunks by cosine similarity;
// a summary among the nearest stands for its leaf nearest the query. The hits are
// nil when no vectors of the model exist.
func (s *Store) vectorList(ctx context.Context, db *sql.DB, emb Embedder, query string, depth int, scope index.Scope) ([]index.Hit, error) {
	vs, err := emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, fmt.Errorf("embedder returned %d vectors for one query", len(vs))
	}
	q := append([]float32(nil), vs[0]...)
	if err := embed.Normalize(q); err != nil {
		return nil, fmt.Errorf("embedder returned an unusable query vector: %w", err)
	}
	mrow, err := modelRow(ctx, db, emb.Model(), len(q), false)
	if err != nil || mrow == 0 {
		return nil, err
	}
	gen, err := generation(ctx, db)
	if err != nil {
		return nil, err
	}
	vi, err := s.loadVectors(ctx, db, gen, mrow, len(q))
	if err != nil {
		return nil, err
	}
	if vi.ix.Len() == 0 {
		return nil, nil
	}
	top, err := leavesOf(ctx, db, vi.ix, q, vi.ix.Search(q, depth))
	if err != nil {
		return nil, err
	}
	ids := make([]any, len(top))
	for i, t := range top {
		ids[i] = t.ID
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	sc, scArgs := andScope(scope, "c")
	rows, err := db.QueryContext(ctx, `SELECT `+hitColumns+`, c.text FROM chunks c WHERE c.id IN (`+ph+`)`+sc, append(ids, scArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("vector hits: %w", err)
	}
	defer rows.Close()
	byID := map[string]index.Hit{}
	for rows.Next() {
		var h index.Hit
		h.ChunkHit, err = ScanHit(rows, &h.Text)
		if err != nil {
			return nil, fmt.Errorf("vector hits: %w", err)
		}
		byID[h.ID] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("vector hits: %w", err)
	}
	hits := []index.Hit{}
	for _, t := range top {
		if h, ok := byID[t.ID]; ok {
			h.Score = float64(t.Score)
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// leavesOf replaces each summary among hits by its leaf chunk most similar to q (at
// the summary's rank, with the leaf's own similarity) and drops repeated chunks.
// A summary whose leaves have no vectors is dropped.
func leavesOf(ctx context.Context, db *sql.DB, ix *embed.Index, q []float32, hits []embed.Hit) ([]embed.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	ids := make([]any, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	rows, err := db.QueryContext(ctx, `SELECT id, leaf_ids_json FROM summaries WHERE id IN (`+ph+`)`, ids...)
	if err != nil {
		return nil, fmt.Errorf("vector hits: summaries: %w", err)
	}
	defer rows.Close()
	leaves := map[string][]string{}
	for rows.Next() {
		var id, js string
		if err := rows.Scan(&id, &js); err != nil {
			return nil, fmt.Errorf("vector hits: summaries: %w", err)
		}
		var ls []string
		if err := json.Unmarshal([]byte(js), &ls); err != nil {
			return nil, fmt.Errorf("vector hits: summary %s has a damaged leaf list: %w", id, err)
		}
		leaves[id] = ls
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("vector hits: summaries: %w", err)
	}
	if len(leaves) == 0 {
		return hits, nil
	}
	out := make([]embed.Hit, 0, len(hits))
	seen := map[string]bool{}
	for _, h := range hits {
		if ls, ok := leaves[h.ID]; ok {
			best := embed.Hit{}
			for _, leaf := range ls {
				if sim, ok := ix.Similarity(q, leaf); ok && (best.ID == "" || sim > best.Score) {
					best = embed.Hit{ID: leaf, Score: sim}
				}
			}
			if best.ID == "" {
				continue
			}
			h = best
		}
		if !seen[h.ID] {
			seen[h.ID] = true
			out = append(out, h)
		}
	}
	return out, nil
}
