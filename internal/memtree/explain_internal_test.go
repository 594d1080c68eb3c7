package memtree

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestDebugExplain prints query plans and timings for MEMTREE_DEBUG_EXPLAIN_DB (development aid).
func TestDebugExplain(t *testing.T) {
	path := os.Getenv("MEMTREE_DEBUG_EXPLAIN_DB")
	if path == "" {
		return
	}
	st, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, _ := st.readers(context.Background())
	var top string
	db.QueryRow(`SELECT id FROM entities WHERE kind='person' ORDER BY ref_count DESC LIMIT 1`).Scan(&top)
	for _, q := range []string{
		`SELECT count(*) FROM chunks c WHERE c.rowid IN (SELECT chunk_rowid FROM chunk_entities WHERE entity_id IN (?))`,
		`SELECT c.id FROM chunks c WHERE c.rowid IN (SELECT chunk_rowid FROM chunk_entities WHERE entity_id IN (?)) ORDER BY c.ts DESC, c.id LIMIT 20`,
	} {
		rows, _ := db.Query(`EXPLAIN QUERY PLAN `+q, top)
		for rows.Next() {
			var a, b, c int
			var d string
			rows.Scan(&a, &b, &c, &d)
			t.Logf("%s", d)
		}
		rows.Close()
		t0 := time.Now()
		r2, _ := db.Query(q, top)
		n := 0
		for r2.Next() {
			n++
		}
		r2.Close()
		t.Logf("%v rows=%d  %s", time.Since(t0), n, q)
	}
}
