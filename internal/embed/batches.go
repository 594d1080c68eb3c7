package embed

import (
	"context"
	"fmt"
	"sync"
)

// What both stores (internal/memtree on SQLite, internal/pgstore on PostgreSQL)
// do the same way with an embedder: embed the nodes that have no vector yet in
// batches, checked and normalised the same; embed a query; keep one in-memory
// Index per store generation. Each store keeps only its SQL.

// Batch is one batch of nodes to embed: ids and their texts, in order.
type Batch struct {
	IDs, Texts []string
}

// EmbedAll embeds the batches next hands out until it hands out an empty one,
// and gives each batch's vectors to put. The vectors put receives are copies,
// L2-normalised, one per id, all of the dimension of the first vector emb
// returned. It returns how many nodes were put; errors of next and put are
// returned as they are (their callers know the store), the embedder's and the
// checks' name emb's model.
func EmbedAll(ctx context.Context, emb Embedder, next func(context.Context) (Batch, error), put func(ctx context.Context, ids []string, vecs [][]float32) error) (int, error) {
	model := emb.Model()
	done, dim := 0, 0
	for {
		b, err := next(ctx)
		if err != nil {
			return done, err
		}
		if len(b.IDs) == 0 {
			return done, nil
		}
		if len(b.IDs) != len(b.Texts) {
			return done, fmt.Errorf("embed chunks: %d ids for %d texts", len(b.IDs), len(b.Texts))
		}
		vecs, err := emb.Embed(ctx, b.Texts)
		if err != nil {
			return done, fmt.Errorf("embed chunks with %s: %w", model, err)
		}
		if len(vecs) != len(b.Texts) {
			return done, fmt.Errorf("embed chunks with %s: got %d vectors for %d texts", model, len(vecs), len(b.Texts))
		}
		out := make([][]float32, len(vecs))
		for i, v := range vecs {
			if dim == 0 {
				if dim = len(v); dim == 0 {
					return done, fmt.Errorf("embed chunks with %s: empty vector", model)
				}
			}
			if len(v) != dim {
				return done, fmt.Errorf("embed chunks with %s: vector %d has %d dimensions, want %d", model, i, len(v), dim)
			}
			v = append([]float32(nil), v...)
			if Normalize(v) != nil {
				return done, fmt.Errorf("embed chunks with %s: zero or non-finite vector for node %s", model, b.IDs[i])
			}
			out[i] = v
		}
		if err := put(ctx, b.IDs, out); err != nil {
			return done, err
		}
		done += len(b.IDs)
	}
}

// QueryVector embeds query with emb and returns its vector, L2-normalised.
func QueryVector(ctx context.Context, emb Embedder, query string) ([]float32, error) {
	vs, err := emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, fmt.Errorf("embedder returned %d vectors for one query", len(vs))
	}
	q := append([]float32(nil), vs[0]...)
	if err := Normalize(q); err != nil {
		return nil, fmt.Errorf("embedder returned an unusable query vector: %w", err)
	}
	return q, nil
}

// IndexCache keeps one Index per key (a store's model, and whatever else picks
// the vectors it holds), valid for one store generation: a key asked for at a
// newer generation is loaded again and replaces the older index. Safe for
// concurrent use; two calls loading the same key at once may both load it.
type IndexCache struct {
	m sync.Map // key → *cachedIndex
}

type cachedIndex struct {
	gen string
	ix  *Index
}

// Get returns key's index at generation gen, calling load when none is cached
// for gen.
func (c *IndexCache) Get(key, gen string, load func() (*Index, error)) (*Index, error) {
	if v, ok := c.m.Load(key); ok {
		if ci := v.(*cachedIndex); ci.gen == gen {
			return ci.ix, nil
		}
	}
	ix, err := load()
	if err != nil {
		return nil, err
	}
	c.m.Store(key, &cachedIndex{gen: gen, ix: ix})
	return ix, nil
}

// Rows is what ReadIndex reads: database/sql's and pgx's query rows alike,
// each row a node id and its vector as stored (DecodeBlob's bytes).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadIndex reads every (id, vector) row of rows into a new Index of dim: a
// vector of another length or that does not decode is a damaged store, named.
// It does not close rows.
func ReadIndex(rows Rows, dim int) (*Index, error) {
	ix := NewIndex(dim)
	for rows.Next() {
		var id string
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
		if len(b) != 4*dim {
			return nil, fmt.Errorf("load vectors: the vector of %s has %d bytes, want %d: the store is damaged; re-run ingest", id, len(b), 4*dim)
		}
		v, err := DecodeBlob(b)
		if err == nil {
			err = ix.Add(id, v)
		}
		if err != nil {
			return nil, fmt.Errorf("load vectors: %w: the store is damaged; re-run ingest", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	return ix, nil
}
