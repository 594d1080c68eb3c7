package memtree

import (
	"context"
	"database/sql"

	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// storeReader is the store as the ranking reads it (retrieval.Store), over one
// read call's connection.
type storeReader struct {
	db *sql.DB
}

var _ retrieval.Store = storeReader{}

// sqlFilter is f as a condition on chunks c: the people first, then the time window.
func sqlFilter(f retrieval.Filter) filter {
	var out filter
	if len(f.EntityIDs) > 0 || len(f.Names) > 0 {
		cond, args := entityFilter(f.EntityIDs, f.Names)
		out = out.with(cond, args...)
	}
	if f.To != 0 {
		out = out.with("c.ts_end >= ? AND c.ts_start < ?", f.From, f.To)
	}
	return out
}

// Match ranks by bm25 under the window of the newest matches (rankWindow).
func (r storeReader) Match(ctx context.Context, m retrieval.Match) ([]abi.ChunkHit, error) {
	wf, err := rankWindow(ctx, r.db, m.Expr, m.Estimate, sqlFilter(m.Filter))
	if err != nil {
		return nil, err
	}
	return ftsRanked(ctx, r.db, m.Expr, wf, m.Limit, m.Skip, m.Plain)
}

// FirstMatches lists matches unranked (ftsFirst).
func (r storeReader) FirstMatches(ctx context.Context, expr string, f retrieval.Filter, limit int, skip map[string]bool) ([]abi.ChunkHit, error) {
	return ftsFirst(ctx, r.db, expr, sqlFilter(f), limit, skip)
}

// Recent lists the newest chunks (recentChunks).
func (r storeReader) Recent(ctx context.Context, f retrieval.Filter, limit int, skip map[string]bool, snippetTerms []string) ([]abi.ChunkHit, error) {
	return recentChunks(ctx, r.db, sqlFilter(f), limit, skip, snippetTerms)
}
