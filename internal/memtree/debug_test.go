package memtree_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestDebugQuery prints hits for MEMTREE_DEBUG_QUERY ids (development aid; runs only when set).
func TestDebugQuery(t *testing.T) {
	ids := os.Getenv("MEMTREE_DEBUG_QUERY")
	if ids == "" {
		return
	}
	dir, path := corpusFixture(t)
	st, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	qs := loadQueries(t, filepath.Join(dir, "eval", "queries.jsonl"))
	for _, q := range qs {
		if !strings.Contains(","+ids+",", ","+q.ID+",") {
			continue
		}
		t0 := time.Now()
		sr, _ := st.Search(context.Background(), abi.SearchRequest{Query: q.Query, K: 10})
		d := time.Since(t0)
		rel := map[string]bool{}
		for _, r := range q.Relevant {
			rel[r] = true
		}
		t.Logf("== %s %s %q (%v) relevant=%v", q.ID, q.Kind, q.Query, d, q.Relevant)
		found := map[string]bool{}
		for i, h := range sr.Chunks {
			var mark []string
			for _, r := range h.SourceRefs {
				if rel[r] {
					mark = append(mark, r)
					found[r] = true
				}
			}
			t.Logf("  %d %.2f %s %s refs=%d rel=%v | %.120s", i, h.Score, h.SourceID, time.UnixMilli(h.TimestampMS).UTC().Format("01-02"), len(h.SourceRefs), mark, h.Snippet)
		}
		for _, r := range q.Relevant {
			if !found[r] {
				res, _ := st.ListChunks(context.Background(), abi.ChunksListRequest{Query: r, K: 5})
				_ = res
				t.Logf("  MISSING %s", r)
			}
		}
	}
}
