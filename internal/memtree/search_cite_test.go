package memtree_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestSearchCitesMessagesSayingTwoWords: a plain keyword query cites, of a chunk's
// messages, those that say at least two of its words when any does; a one-word
// query cites every message saying it.
func TestSearchCitesMessagesSayingTwoWords(t *testing.T) {
	ctx := context.Background()
	st, err := memtree.Open(filepath.Join(t.TempDir(), "memory_tree", "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src := memtree.SourceInput{
		Kind: memtree.KindChat, SourceID: "slack:#finance", Title: "#finance", Provider: "slack",
		Messages: []memtree.MessageInput{
			{Ref: "m1", Author: "Dana Ruiz", TimestampMS: ms("2026-03-02T14:00:00Z"), Text: "The budget looks fine this month."},
			{Ref: "m2", Author: "Erik Lund", TimestampMS: ms("2026-03-02T14:05:00Z"), Text: "The budget review moved to Thursday."},
			{Ref: "m3", Author: "Dana Ruiz", TimestampMS: ms("2026-03-02T14:07:00Z"), Text: "Lunch first?"},
		},
	}
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	res, err := st.Search(ctx, abi.SearchRequest{Query: "budget review", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 1 || !slices.Equal(res.Chunks[0].SourceRefs, []string{"m2"}) || res.Chunks[0].SourceRef != "m2" {
		t.Fatalf("search %q cites %v, want only m2 (the message saying both words)", "budget review", refsOf(res.Chunks))
	}
	res, err = st.Search(ctx, abi.SearchRequest{Query: "budget", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 1 || !slices.Equal(res.Chunks[0].SourceRefs, []string{"m1", "m2"}) {
		t.Fatalf("search %q cites %v, want m1 and m2 (one word: every message saying it)", "budget", refsOf(res.Chunks))
	}
}
