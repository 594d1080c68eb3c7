package memtree

import (
	"context"
	"database/sql"
	"sync"
)

// Read statements are prepared once per read pool and reused: database/sql's
// QueryContext on a *sql.DB parses and plans the SQL on every call, which was 11 %
// of a search's CPU on a LoCoMo store (sqlite3Prepare), for the same few texts
// every call. A *sql.Stmt prepares itself lazily on each pooled connection it
// runs on and keeps those.

// readStmtsMax bounds the statements kept per pool; texts beyond it (lists of
// varying length) are prepared per call as before.
const readStmtsMax = 256

var readStmts sync.Map // *sql.DB → *stmtSet

type stmtSet struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// readStmt returns q prepared on db (cached), or nil when the cache is full. The
// lock is not held while preparing (preparing waits for a pooled connection).
func readStmt(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	v, _ := readStmts.LoadOrStore(db, &stmtSet{m: map[string]*sql.Stmt{}})
	set := v.(*stmtSet)
	set.mu.Lock()
	st, ok := set.m[q]
	full := len(set.m) >= readStmtsMax || set.m == nil
	set.mu.Unlock()
	if ok || full {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	if have, ok := set.m[q]; ok || set.m == nil {
		st.Close() // another call prepared it first, or the pool closed
		return have, nil
	}
	set.m[q] = st
	return st, nil
}

// query is db.QueryContext through the statement cache.
func query(ctx context.Context, db *sql.DB, q string, args ...any) (*sql.Rows, error) {
	st, err := readStmt(ctx, db, q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return db.QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is db.QueryRowContext through the statement cache.
func queryRow(ctx context.Context, db *sql.DB, q string, args ...any) *sql.Row {
	st, err := readStmt(ctx, db, q)
	if err != nil || st == nil {
		return db.QueryRowContext(ctx, q, args...) // an error to prepare shows again here
	}
	return st.QueryRowContext(ctx, args...)
}

// dropReadStmts closes the statements prepared on db (when the pool closes).
func dropReadStmts(db *sql.DB) {
	v, ok := readStmts.LoadAndDelete(db)
	if !ok {
		return
	}
	set := v.(*stmtSet)
	set.mu.Lock()
	defer set.mu.Unlock()
	for _, st := range set.m {
		st.Close()
	}
	set.m = nil
}
