package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

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
	var mrow int64
	nodes := []string{
		`SELECT id, text FROM chunks WHERE id NOT IN (%s) ORDER BY rowid LIMIT ?`,
		`SELECT id, text FROM summaries WHERE json_array_length(leaf_ids_json) >= 2 AND id NOT IN (%s) ORDER BY rowid LIMIT ?`,
	}
	next := func(ctx context.Context) (embed.Batch, error) {
		var b embed.Batch
		for len(nodes) > 0 {
			// Nodes without a vector of the model (any dimension row of that model
			// counts only once its dimension is known).
			have, arg := `SELECT v.node_id FROM vectors v JOIN embed_models m ON m.rowid=v.model_rowid WHERE m.model=?`, any(model)
			if mrow != 0 {
				have, arg = `SELECT node_id FROM vectors WHERE model_rowid=?`, mrow
			}
			rows, err := s.w.QueryContext(ctx, fmt.Sprintf(nodes[0], have), arg, embedBatch)
			if err != nil {
				return b, fmt.Errorf("embed chunks: find nodes without vectors: %w", err)
			}
			for rows.Next() {
				var id, text string
				if err := rows.Scan(&id, &text); err != nil {
					rows.Close()
					return b, fmt.Errorf("embed chunks: %w", err)
				}
				b.IDs, b.Texts = append(b.IDs, id), append(b.Texts, text)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return b, fmt.Errorf("embed chunks: %w", err)
			}
			if len(b.IDs) > 0 {
				return b, nil
			}
			nodes = nodes[1:]
		}
		return b, nil
	}
	put := func(ctx context.Context, ids []string, vecs [][]float32) error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("embed chunks: begin: %w", err)
		}
		defer tx.Rollback()
		if mrow == 0 {
			if mrow, err = modelRow(ctx, tx, model, len(vecs[0]), true); err != nil {
				return err
			}
		}
		for i, v := range vecs {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vectors(model_rowid, node_id, vec) VALUES(?,?,?)`, mrow, ids[i], embed.EncodeBlob(v)); err != nil {
				return fmt.Errorf("embed chunks: store vector: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('generation', '1')
			ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER)+1`); err != nil {
			return fmt.Errorf("embed chunks: bump generation: %w", err)
		}
		if err := tx.Commit(); err != nil {
			mrow = 0 // the model row may not be committed
			return fmt.Errorf("embed chunks: commit: %w", err)
		}
		return nil
	}
	return embed.EmbedAll(ctx, emb, next, put)
}

// vecCache keeps one in-memory index of each store's model vectors per
// generation (store path + model row): an exact vek32 scan up to
// embed.DefaultBinaryThreshold vectors, 1-bit codes with an exact rerank above.
var vecCache embed.IndexCache

func (s *Store) loadVectors(ctx context.Context, db *sql.DB, gen string, mrow int64, dim int) (*embed.Index, error) {
	return vecCache.Get(fmt.Sprintf("%s\x00%d", s.path, mrow), gen, func() (*embed.Index, error) {
		rows, err := db.QueryContext(ctx, `SELECT node_id, vec FROM vectors WHERE model_rowid=?`, mrow)
		if err != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
		defer rows.Close()
		return embed.ReadIndex(rows, dim)
	})
}

// vectorList ranks up to depth chunks by the cosine similarity of their model's
// vectors to the query's, q; a summary among the nearest stands for its leaf
// nearest the query. The hits are nil when no vectors of the model exist.
func (s *Store) vectorList(ctx context.Context, db *sql.DB, model string, q []float32, depth int, scope index.Scope) ([]index.Hit, error) {
	ix, err := s.modelVectors(ctx, db, model, len(q))
	if err != nil || ix == nil || ix.Len() == 0 {
		return nil, err
	}
	// Under a narrowed scope the nearest vectors may lie outside it: the search
	// goes deeper (depth, 4×, 16×, 64×) until depth chunks in the scope are
	// found, so a scoped list is as long as an unscoped one unless the scope
	// holds fewer than one in 64 of the nearest (a bound on what one call of a
	// narrow principal reads: 3,200 rows at recall's depth of 50).
	for k := depth; ; k *= 4 {
		hits, err := nearestInScope(ctx, db, ix, q, k, scope)
		if err != nil || len(hits) >= depth || k >= ix.Len() || k >= depth*maxScopedDeepening || scope.Full() {
			if len(hits) > depth {
				hits = hits[:depth]
			}
			return hits, err
		}
	}
}

// nearestInScope returns the chunks among the k vectors nearest q (a summary
// standing for its nearest leaf) that scope allows, nearest first.
func nearestInScope(ctx context.Context, db *sql.DB, ix *embed.Index, q []float32, k int, scope index.Scope) ([]index.Hit, error) {
	top, err := leavesOf(ctx, db, ix, q, ix.Search(q, k))
	if err != nil {
		return nil, err
	}
	byID := map[string]index.Hit{}
	sc, scArgs := andScope(scope, "c")
	// In batches: a deep search under a narrow scope may name thousands of ids,
	// more than one statement may bind.
	for from := 0; from < len(top); from += vectorHitBatch {
		batch := top[from:min(from+vectorHitBatch, len(top))]
		ids := make([]any, len(batch))
		for i, t := range batch {
			ids[i] = t.ID
		}
		ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
		if err := readVectorHits(ctx, db, `SELECT `+hitColumns+`, c.text FROM chunks c WHERE c.id IN (`+ph+`)`+sc, append(ids, scArgs...), byID); err != nil {
			return nil, err
		}
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

// maxScopedDeepening bounds how much deeper than depth a scoped vector list
// searches (vectorList).
const maxScopedDeepening = 64

// vectorHitBatch is how many chunk ids one read of vector hits names.
const vectorHitBatch = 500

// readVectorHits reads the hits query selects into byID.
func readVectorHits(ctx context.Context, db *sql.DB, query string, args []any, byID map[string]index.Hit) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("vector hits: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h index.Hit
		h.ChunkHit, err = ScanHit(rows, &h.Text)
		if err != nil {
			return fmt.Errorf("vector hits: %w", err)
		}
		byID[h.ID] = h
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("vector hits: %w", err)
	}
	return nil
}

// modelVectors is the in-memory index of model's vectors of dimension dim at the
// store's generation (nil when none are stored).
func (s *Store) modelVectors(ctx context.Context, db *sql.DB, model string, dim int) (*embed.Index, error) {
	mrow, err := modelRow(ctx, db, model, dim, false)
	if err != nil || mrow == 0 {
		return nil, err
	}
	gen, err := generation(ctx, db)
	if err != nil {
		return nil, err
	}
	return s.loadVectors(ctx, db, gen, mrow, dim)
}

// similarities is the cosine of q (L2-normalised) to the stored vector of model
// of each chunk of ids that has one.
func (s *Store) similarities(ctx context.Context, db *sql.DB, model string, q []float32, ids []string) (map[string]float32, error) {
	ix, err := s.modelVectors(ctx, db, model, len(q))
	if err != nil || ix == nil {
		return nil, err
	}
	return ix.Similarities(q, ids), nil
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
