package memtree

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestScoresFollowTheOrder is issue 30's "scores that mean what they say": in both
// memory.search and memory.recall a hit's score is never higher than the score of
// the hit above it, for random queries and k over a store of chat, mail and notes.
// Before, recall's fused hits and search's lower levels (fewer of the query's words,
// a relaxed restriction) could carry a higher bm25 than the hits ranked above them
// ("6.37, 5.97, 10.54"). The test also requires that raw scores did rise somewhere
// (the stages order by more than bm25), so it exercises the pattern.
func TestScoresFollowTheOrder(t *testing.T) {
	ctx := context.Background()
	st := leadFixture(t)
	vocab := []string{"what", "when", "did", "Ana", "Ben", "spouse", "January 2026", "novel", "holiday", "canine"}
	for _, l := range []string{"married pottery painting sunsets lake book club mystery novel Lisbon hiking mountains",
		"dog Max walks forest shelter volunteer grandmother bread yeast dough charity run river knee swimming",
		"brake pads quote grinding noise rotors labour spouse wedding canine puppy baking jogging photograph"} {
		vocab = append(vocab, strings.Fields(l)...)
	}
	rng := rand.New(rand.NewPCG(30, 2026))
	checked, scored := 0, 0
	check := func(tool, query string, k int, hs []abi.ChunkHit) {
		checked++
		for i := 1; i < len(hs); i++ {
			if hs[i].Score > hs[i-1].Score {
				t.Fatalf("%s %q k=%d: hit %d (%s) scores %v above hit %d's %v", tool, query, k, i, hs[i].ID, hs[i].Score, i-1, hs[i-1].Score)
			}
		}
		if len(hs) > 0 && hs[0].Score > 0 {
			scored++
		}
	}
	for range 300 {
		var q []string
		for range 1 + rng.IntN(4) {
			q = append(q, vocab[rng.IntN(len(vocab))])
		}
		query := strings.Join(q, " ")
		if rng.IntN(3) == 0 {
			query = "What did " + query + "?"
		}
		k := 1 + rng.IntN(20)
		sr, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: query, K: k})
		if err != nil {
			t.Fatalf("search %q: %v", query, err)
		}
		check("search", query, k, sr.Chunks)
		rc, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: query, K: k})
		if err != nil {
			t.Fatalf("recall %q: %v", query, err)
		}
		check("recall", query, k, rc.Chunks)
	}
	if scored < checked/2 {
		t.Fatalf("only %d of %d results had a scored first hit: the queries do not exercise the scores", scored, checked)
	}
}
