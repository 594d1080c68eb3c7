package retrieval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestSearchFollowsWhatTheFirstHitNames: a question whose answer says none of its
// words ("pets Nate" → the note about Shelly, a pet the first hit names) finds it
// through the second pass over the names the first hit says, placed below every
// hit saying a query word (literal evidence leads); without the follow-up pass
// the note is not found at all.
func TestSearchFollowsWhatTheFirstHitNames(t *testing.T) {
	ctx := context.Background()
	st, _ := openEmpty(t)
	docs := map[string]string{
		"doc:adopt":   "Nate adopted two pets last spring, Shelly and Bolt.",
		"doc:shelter": "The shelter keeps pets in warm rooms over winter.",
		"doc:shelly":  "Shelly ate lettuce on the balcony this morning.",
	}
	topics := []string{"invoice", "roadmap", "deploy", "database", "kitchen", "garden", "bicycle", "concert",
		"passport", "library", "printer", "laptop", "harbour", "museum", "marathon", "recipe", "violin",
		"telescope", "ferry", "orchard", "glacier", "lantern", "compass", "meadow"}
	for i, w := range topics {
		docs[fmt.Sprintf("doc:filler%d", i)] = fmt.Sprintf("The %s notes for week %d are filed under %s.", w, i+3, w)
	}
	i := 0
	for id, text := range docs {
		i++
		src := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: id, Title: id, Provider: "markdown",
			Messages: []memtree.MessageInput{{Ref: id, TimestampMS: ms("2026-01-20T12:00:00Z") + int64(i)*60000, Text: text}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	search := func() []string {
		res, err := st.Search(ctx, abi.SearchRequest{Query: "Which pets does Nate have?", K: 5})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range res.Chunks {
			ids = append(ids, h.SourceID)
		}
		return ids
	}
	got := search()
	want := []string{"doc:adopt", "doc:shelter", "doc:shelly"}
	if len(got) < 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("search cites sources %v, want %v first (the hits saying the query's words, then the note naming what the first hit names)", got, want)
	}
	saved := retrieval.Default
	defer func() { retrieval.Default = saved }()
	retrieval.Default.FollowTop = 0
	for _, id := range search() {
		if id == "doc:shelly" {
			t.Fatalf("without the follow-up pass search still finds doc:shelly (%v): the test does not exercise it", search())
		}
	}
}
