package memtree

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestDebugGroups prints expansion and feedback groups for MEMTREE_DEBUG_GROUPS
// queries ("|"-separated) against the store at MEMTREE_DEBUG_STORE (development aid).
func TestDebugGroups(t *testing.T) {
	qs, path := os.Getenv("MEMTREE_DEBUG_GROUPS"), os.Getenv("MEMTREE_DEBUG_STORE")
	if qs == "" || path == "" {
		return
	}
	st, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	db, _ := st.readers(ctx)
	snap, _ := st.snapshot(ctx, db)
	for _, q := range strings.Split(qs, "|") {
		groups, err := st.expansionGroups(ctx, db, snap, st.currentExpander(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			var ts []string
			for _, x := range g.terms {
				ts = append(ts, x.phrase)
			}
			t.Logf("%q group: %v", q, ts)
		}
		_, top, _ := rankGroups(ctx, db, groups, 10)
		for i, c := range top {
			t.Logf("  exp %d %.2f %v %.100s", i, c.hit.Score, c.hit.SourceRefs, strings.Join(strings.Fields(c.text), " "))
		}
		fb, _ := st.feedbackGroups(ctx, db, snap, top, groups)
		var fw []string
		for _, g := range fb {
			fw = append(fw, g.terms[0].phrase)
		}
		t.Logf("  feedback: %v", fw)
	}
}
