package memtree

import (
	"context"
	"database/sql"
	"fmt"
)

// rankWindow returns f narrowed to the maxRanked newest matches of expr when est
// (an upper bound of expr's matches, from document frequencies) says it may match
// more and f restricts nothing (a person or date restriction keeps the whole
// posting list: its matches may all be old). The probe reads at most maxRanked
// rowids of the posting lists, unranked.
func rankWindow(ctx context.Context, db *sql.DB, expr string, est int, f filter) (filter, error) {
	if len(f.where) > 0 {
		return f, nil
	}
	floor, err := windowFloor(ctx, db, "chunks_fts", expr, est)
	if err != nil || floor == 0 {
		return f, err
	}
	return f.with("chunks_fts.rowid >= ?", floor), nil
}

// windowFloor returns the rowid of the maxRanked-th newest match of expr in FTS
// table fts (chunks_fts or summaries_fts), or 0 when est says expr matches at most
// maxRanked rows or it does.
func windowFloor(ctx context.Context, db *sql.DB, fts, expr string, est int) (int64, error) {
	if est <= maxRanked {
		return 0, nil
	}
	var floor int64
	err := queryRow(ctx, db, `SELECT rowid FROM `+fts+` WHERE `+fts+` MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`, expr, maxRanked-1).Scan(&floor)
	if err == sql.ErrNoRows {
		return 0, nil // fewer matches than maxRanked: rank them all
	}
	if err != nil {
		return 0, fmt.Errorf("full-text window: %w", err)
	}
	return floor, nil
}
