package memtree

import (
	"context"
	"fmt"
	"testing"
)

// TestReadStmtsReusedBoundedDropped: a read statement is prepared once per pool
// and reused, the cache stops at readStmtsMax texts (later ones still run,
// unprepared), and closing the store drops the pool's statements.
func TestReadStmtsReusedBoundedDropped(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t)
	if _, err := st.Ingest(ctx, SourceInput{Kind: KindDocument, SourceID: "doc:a.md", Title: "a.md",
		Messages: []MessageInput{{Ref: "docs/a.md", TimestampMS: 1767261600000, Text: "The budget review is on Thursday."}}}); err != nil {
		t.Fatal(err)
	}
	db, err := st.readers(ctx)
	if err != nil || db == nil {
		t.Fatalf("readers: %v", err)
	}
	a, err := readStmt(ctx, db, `SELECT count(*) FROM chunks WHERE rowid > ?`)
	if err != nil || a == nil {
		t.Fatalf("readStmt: %v, %v", a, err)
	}
	b, _ := readStmt(ctx, db, `SELECT count(*) FROM chunks WHERE rowid > ?`)
	if a != b {
		t.Fatal("the same text was prepared twice")
	}
	if _, err := readStmt(ctx, db, `SELECT nonsense FROM nowhere`); err == nil {
		t.Fatal("a statement that cannot be prepared gave no error")
	}
	for i := 0; i < readStmtsMax+5; i++ {
		var n int
		if err := queryRow(ctx, db, fmt.Sprintf(`SELECT count(*) + %d FROM chunks`, i)).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("query %d: %d, %v", i, n, err)
		}
	}
	v, ok := readStmts.Load(db)
	if !ok || len(v.(*stmtSet).m) != readStmtsMax {
		t.Fatalf("cache holds %v statements; want the bound %d", v, readStmtsMax)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := readStmts.Load(db); ok {
		t.Fatal("closing the store kept its pool's statements")
	}
}
