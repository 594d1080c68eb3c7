package embed

import (
	"context"
	"sync"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// queryMemoMax is how many query vectors a QueryEmbedder keeps (a cost bound).
const queryMemoMax = 32

// QueryEmbedder is a store's embedder with the vectors of the last queries it
// embedded: recall asks for a query's vector twice (the store-wide vector list
// and the person-scoped meaning list), and the query is sent to the embedder
// once. A store makes a new one whenever its embedder changes. Safe for
// concurrent use.
type QueryEmbedder struct {
	Embedder

	mu    sync.Mutex
	memo  map[string][]float32
	order []string
}

// NewQueryEmbedder wraps e.
func NewQueryEmbedder(e Embedder) *QueryEmbedder { return &QueryEmbedder{Embedder: e} }

// CallQuery is Query for a read call: nil (and no error) when b is nil (no
// embedder is configured), index.ErrEmbedRefused when ctx's embed gate
// refuses query (the text may not leave the machine).
func (b *QueryEmbedder) CallQuery(ctx context.Context, query string) ([]float32, error) {
	if b == nil {
		return nil, nil
	}
	if !index.EmbedAllowed(ctx, query) {
		return nil, index.ErrEmbedRefused
	}
	return b.Query(ctx, query)
}

// Query returns the L2-normalised vector of query (QueryVector), embedding it
// only when none of the last queryMemoMax queries was the same text.
func (b *QueryEmbedder) Query(ctx context.Context, query string) ([]float32, error) {
	b.mu.Lock()
	q, ok := b.memo[query]
	b.mu.Unlock()
	if ok {
		return q, nil
	}
	q, err := QueryVector(ctx, b.Embedder, query)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.memo == nil {
		b.memo = map[string][]float32{}
	}
	if _, ok := b.memo[query]; !ok {
		b.memo[query] = q
		b.order = append(b.order, query)
		if len(b.order) > queryMemoMax {
			delete(b.memo, b.order[0])
			b.order = b.order[1:]
		}
	}
	b.mu.Unlock()
	return q, nil
}
