package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// Vectors of the optional dense embedder on this backend: ingest embeds every
// chunk without a vector of the model (EmbedMissing, in batches, as the SQLite
// store does, through the same embed.EmbedAll); recall ranks the chunks the
// call's scope may read by cosine similarity in memory (embed.Index, as on
// SQLite). There is no summary tree on this backend, so only chunks have
// vectors. No pgvector: it is not in the PostgreSQL packages of Debian 12 that
// .ci/run installs, and ranking in memory keeps the answers those of SQLite.

// embedBatch is how many chunk texts EmbedMissing sends per Embed call (the
// SQLite store's batch, and embed.BatchSize, one request each).
const embedBatch = 64

// embedderSlot holds the embedder recall uses (nil: offline mode only).
type embedderSlot struct {
	e atomic.Pointer[memtree.Embedder]
}

// SetEmbedder sets the dense embedder recall uses (nil: offline mode only).
// Safe to call concurrently with reads.
func (s *Store) SetEmbedder(e memtree.Embedder) {
	if e == nil {
		s.emb.e.Store(nil)
		return
	}
	s.emb.e.Store(&e)
}

func (s *Store) embedder() memtree.Embedder {
	if p := s.emb.e.Load(); p != nil {
		return *p
	}
	return nil
}

// EmbedMissing embeds every chunk that has no vector of emb's model yet, in
// batches of embedBatch, each batch written in one transaction that also
// advances the store's generation (readers then load the new vectors). It
// returns how many chunks it embedded. Vectors are stored L2-normalised per
// (model, dimension): a model whose dimension changed gets a fresh set, never
// mixed with the old one, and a model not seen before embeds every chunk again.
func (s *Store) EmbedMissing(ctx context.Context, emb memtree.Embedder) (int, error) {
	model := emb.Model()
	var mkey int32   // the (model, dimension) row, once the dimension is known
	var after int64  // chunks are visited in key order, each once
	var keys []int64 // the keys of the current batch's chunks, by position
	next := func(ctx context.Context) (embed.Batch, error) {
		var b embed.Batch
		var a args
		have := `SELECT 1 FROM chunk_vectors v JOIN embed_models m ON m.key = v.model_key WHERE v.chunk_key = c.key AND m.model = ` + a.add(model)
		if mkey != 0 {
			a = args{}
			have = `SELECT 1 FROM chunk_vectors v WHERE v.chunk_key = c.key AND v.model_key = ` + a.add(mkey)
		}
		q := `SELECT c.key, c.id, c.text FROM chunks c WHERE c.key > ` + a.add(after) + ` AND NOT EXISTS (` + have + `) ORDER BY c.key LIMIT ` + a.add(embedBatch)
		rows, err := s.pool.Query(ctx, q, a...)
		if err != nil {
			return b, fmt.Errorf("embed chunks: find chunks without vectors: %w", err)
		}
		defer rows.Close()
		keys = keys[:0]
		for rows.Next() {
			var key int64
			var id, text string
			if err := rows.Scan(&key, &id, &text); err != nil {
				return b, fmt.Errorf("embed chunks: %w", err)
			}
			keys, b.IDs, b.Texts = append(keys, key), append(b.IDs, id), append(b.Texts, text)
		}
		if err := rows.Err(); err != nil {
			return b, fmt.Errorf("embed chunks: %w", err)
		}
		if len(keys) > 0 {
			after = keys[len(keys)-1]
		}
		return b, nil
	}
	put := func(ctx context.Context, ids []string, vecs [][]float32) error {
		blobs := make([][]byte, len(vecs))
		for i, v := range vecs {
			blobs[i] = embed.EncodeBlob(v)
		}
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
				return fmt.Errorf("embed chunks: set asynchronous commit: %w", err)
			}
			key := mkey
			if key == 0 {
				err := tx.QueryRow(ctx, `WITH ins AS (INSERT INTO embed_models(model, dim) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING key)
					SELECT key FROM ins UNION ALL SELECT key FROM embed_models WHERE model = $1 AND dim = $2`, model, len(vecs[0])).Scan(&key)
				if err != nil {
					return fmt.Errorf("embedding model %s/%d: %w", model, len(vecs[0]), err)
				}
			}
			// A chunk replaced since it was read (a concurrent ingest) has no row
			// to join and is skipped: its successor is embedded by the next run.
			if _, err := tx.Exec(ctx, `INSERT INTO chunk_vectors(model_key, chunk_key, vec)
				SELECT $1, c.key, d.vec FROM unnest($2::bigint[], $3::bytea[]) AS d(chunk_key, vec) JOIN chunks c ON c.key = d.chunk_key
				ON CONFLICT (model_key, chunk_key) DO UPDATE SET vec = excluded.vec`, key, keys, blobs); err != nil {
				return fmt.Errorf("embed chunks: store %d vectors: %w", len(vecs), err)
			}
			if _, err := tx.Exec(ctx, `UPDATE store_stats SET generation = generation + 1`); err != nil {
				return fmt.Errorf("embed chunks: advance the generation: %w", err)
			}
			mkey = key // once committed (BeginFunc returns the commit's error)
			return nil
		})
	}
	return embed.EmbedAll(ctx, emb, next, put)
}

var _ index.ChunkVectors = reader{}

// VectorModel names the store's embedder.
func (r reader) VectorModel() (string, bool) {
	emb := r.s.embedder()
	if emb == nil {
		return "", false
	}
	return emb.Model(), true
}

// VectorList embeds query and returns up to depth chunks of the call's scope by
// cosine similarity, nearest first: the vectors ranked are those a query
// carrying the scope reads (a chunk outside the scope is never a candidate),
// kept in memory per generation, model and scope. Nil when no vectors of the
// model are stored.
func (r reader) VectorList(ctx context.Context, query string, depth int) ([]index.Hit, error) {
	q, err := r.emb.CallQuery(ctx, query)
	if err != nil || q == nil {
		return nil, err
	}
	ix, err := r.modelVectors(ctx, r.emb.Model(), len(q))
	if err != nil || ix == nil || ix.Len() == 0 {
		return nil, err
	}
	top := ix.Search(q, depth)
	if len(top) == 0 {
		return nil, nil
	}
	ids := make([]string, len(top))
	for i, t := range top {
		ids[i] = t.ID
	}
	a := args{}
	rows, err := r.s.rd.Query(ctx, `SELECT `+hitColumns+`, c.text FROM chunks c WHERE c.id = ANY(`+a.add(ids)+`)`+a.scoped(r.scope, "c"), a...)
	if err != nil {
		return nil, fmt.Errorf("vector hits: %w", err)
	}
	defer rows.Close()
	byID := make(map[string]index.Hit, len(ids))
	for rows.Next() {
		var h index.Hit
		if h.ChunkHit, err = scanHit(rows, &h.Text); err != nil {
			return nil, fmt.Errorf("vector hits: %w", err)
		}
		byID[h.ID] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("vector hits: %w", err)
	}
	hits := make([]index.Hit, 0, len(top))
	for _, t := range top {
		if h, ok := byID[t.ID]; ok {
			h.Score = float64(t.Score)
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// QueryVector embeds query with the store's embedder, L2-normalised, once per
// read call however often it asks (nil without an embedder).
func (r reader) QueryVector(ctx context.Context, query string) ([]float32, error) {
	return r.emb.CallQuery(ctx, query)
}

// Similarities is the cosine of q to the stored vector of each chunk of ids
// that has one of the embedder's model and lies in the call's scope.
func (r reader) Similarities(ctx context.Context, q []float32, ids []string) (map[string]float32, error) {
	emb := r.emb
	if emb == nil || len(q) == 0 {
		return nil, nil
	}
	ix, err := r.modelVectors(ctx, emb.Model(), len(q))
	if err != nil || ix == nil {
		return nil, err
	}
	return ix.Similarities(q, ids), nil
}

// modelVectors is the call's scope's in-memory index of model's vectors of
// dimension dim (nil when none of that model are stored).
func (r reader) modelVectors(ctx context.Context, model string, dim int) (*embed.Index, error) {
	var mkey int32
	err := r.s.rd.QueryRow(ctx, `SELECT key FROM embed_models WHERE model = $1 AND dim = $2`, model, dim).Scan(&mkey)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embedding model %s/%d: %w", model, dim, err)
	}
	return r.vectors(ctx, mkey, dim)
}

// vectors is the in-memory index of model row mkey's vectors of the chunks the
// call's scope may read, at the call's generation.
func (r reader) vectors(ctx context.Context, mkey int32, dim int) (*embed.Index, error) {
	key := strconv.Itoa(int(mkey)) + "\x00" + r.scope.Key()
	return r.s.vecs.Get(key, genID(r.snap.gen), func() (*embed.Index, error) {
		a := args{}
		rows, err := r.s.rd.Query(ctx, `SELECT c.id, v.vec FROM chunk_vectors v JOIN chunks c ON c.key = v.chunk_key
			WHERE v.model_key = `+a.add(mkey)+a.scoped(r.scope, "c"), a...)
		if err != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
		defer rows.Close()
		return embed.ReadIndex(rows, dim)
	})
}
