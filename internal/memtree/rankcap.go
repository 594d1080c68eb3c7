package memtree

import (
	"context"
	"database/sql"
	"fmt"
)

// rankWindow returns f narrowed to the maxRanked newest matches of expr (by
// chunk time, ties by id) when est (an upper bound of expr's matches, from
// document frequencies) says it may match more and f restricts nothing (a
// person or date restriction keeps the whole posting list: its matches may all
// be old). The probe reads the posting lists once, unscored, and walks the time
// index down to the maxRanked-th match.
func rankWindow(ctx context.Context, db *sql.DB, expr string, est int, f filter) (filter, error) {
	if len(f.where) > 0 || est <= maxRanked {
		return f, nil
	}
	var ts int64
	var id string
	err := queryRow(ctx, db, `SELECT c.ts, c.id FROM chunks c INDEXED BY chunks_ts
		WHERE c.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)
		ORDER BY c.ts DESC, c.id LIMIT 1 OFFSET ?`, expr, maxRanked-1).Scan(&ts, &id)
	if err == sql.ErrNoRows {
		return f, nil // fewer matches than maxRanked: rank them all
	}
	if err != nil {
		return f, fmt.Errorf("full-text window: %w", err)
	}
	return f.with("(c.ts > ? OR c.ts = ? AND c.id <= ?)", ts, ts, id), nil
}
