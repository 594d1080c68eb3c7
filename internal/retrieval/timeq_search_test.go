package retrieval_test

import (
	"context"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestWhenQuestionRanksTheTurnTellingTheTime (issue 30, item 3): asked when
// something happened, search cites first the turn that tells the event with a
// time ("last week"), above a turn saying the event's word more often without
// one; with TimeBoost = 0 the order is the other way round.
func TestWhenQuestionRanksTheTurnTellingTheTime(t *testing.T) {
	ctx := context.Background()
	st := chatStore(t, "2026-03-02T14:00:00Z",
		"Camping is fun, camping is the best thing.",
		"Sounds good to me.",
		"We went camping by the lake last week.",
		"Nice, I hope the weather was good.")
	api := memory.Default(st)
	first := func() string {
		res, err := api.Search(ctx, abi.SearchRequest{Query: "When did Ana go camping?", K: 5})
		if err != nil {
			t.Fatal(err)
		}
		refs := refsOf(res.Chunks)
		if len(refs) == 0 {
			t.Fatal("no hits")
		}
		return refs[0]
	}
	if got := first(); got != "m3" {
		t.Fatalf("first cited %s, want m3 (the turn telling when)", got)
	}
	off := retrieval.DefaultParams()
	off.TimeBoost = 0
	api = memory.New(st, off)
	if got := first(); got != "m1" {
		t.Fatalf("TimeBoost = 0: first cited %s, want m1 (more of the word): the fixture no longer shows the signal", got)
	}
}
