package retrieval_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// turnUnitStore holds one chat chunk whose first turn says every word of "pottery
// class schedule" and whose sixth says only "pottery", a second conversation
// saying two of the words, and filler so that the words are rare.
func turnUnitStore(t *testing.T) *memtree.Store {
	t.Helper()
	ctx := context.Background()
	st, _ := openEmpty(t)
	var msgs []memtree.MessageInput
	say := func(author, text string) {
		n := len(msgs)
		msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("a%d", n+1), Author: author,
			TimestampMS: ms("2026-03-02T14:00:00Z") + int64(n)*60000, Text: text})
	}
	say("Ana", "The pottery class schedule changed again this week.")
	say("Ben", "Oh no, what happened?")
	say("Ana", "The teacher moved to Tuesdays.")
	say("Ben", "Tuesdays are fine for me.")
	say("Ana", "Good, then we go together.")
	say("Ben", "I made a bowl in pottery last month, it cracked in the kiln.")
	say("Ana", "That happens to everyone.")
	say("Ben", "Next time I will glaze it better.")
	if _, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: "chat:ana-ben", Title: "Ana and Ben", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	other := []string{"The class schedule for the autumn term is posted on the board."}
	for i := range 16 {
		other = append(other, fmt.Sprintf("Small talk number %d about the weather and the garden.", i))
	}
	for i, text := range other {
		src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: fmt.Sprintf("chat:other-%d", i), Title: fmt.Sprintf("Other %d", i),
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("o%d", i), Author: "Cleo",
				TimestampMS: ms("2026-04-02T14:00:00Z") + int64(i)*86_400_000, Text: text}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestSearchRanksTurnsOnTheirOwn (issue 30, item 2): a chat chunk's turn that says
// a query word but scores too little to be cited where its chunk ranks is not
// dropped: it ranks by its own evidence, after the conversation that says more of
// the query's words, as a further hit on its chunk citing that turn. With
// TurnShare = 0 (the mechanism off) the turn is not cited at all.
func TestSearchRanksTurnsOnTheirOwn(t *testing.T) {
	ctx := context.Background()
	st := turnUnitStore(t)
	api := memory.Default(st)
	search := func() []abi.ChunkHit {
		res, err := api.Search(ctx, abi.SearchRequest{Query: "pottery class schedule", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		return res.Chunks
	}
	hits := search()
	refs := refsOf(hits)
	a1, o0, a6 := slices.Index(refs, "a1"), slices.Index(refs, "o0"), slices.Index(refs, "a6")
	if a1 != 0 || o0 < 0 || a6 < 0 || a6 < o0 {
		t.Fatalf("refs %v: want a1 first, then o0 (two of the words), then a6 (one word) ranked on its own", refs)
	}
	// a5 (Ana) is what a6 (Ben) responds to: it follows a6 on its own.
	if a5 := slices.Index(refs, "a5"); a5 < a6 {
		t.Errorf("refs %v: want a5 (the turn a6 responds to) cited after a6", refs)
	}
	var chunkOfA1, chunkOfA6 string
	for _, h := range hits {
		if slices.Contains(h.SourceRefs, "a1") {
			chunkOfA1 = h.ID
		}
		if slices.Contains(h.SourceRefs, "a6") {
			chunkOfA6 = h.ID
			if h.SourceRef != "a6" {
				t.Errorf("the turn's hit cites %q first, want a6", h.SourceRef)
			}
		}
	}
	if chunkOfA1 != chunkOfA6 {
		t.Errorf("a6 is shown by chunk %s, a1 by %s: want the same chunk (the context a client reads)", chunkOfA6, chunkOfA1)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("score of hit %d (%v) above the hit before it (%v)", i, hits[i].Score, hits[i-1].Score)
		}
	}

	off := retrieval.DefaultParams()
	off.TurnShare = 0
	api = memory.New(st, off)
	if refs := refsOf(search()); slices.Contains(refs, "a6") {
		t.Fatalf("TurnShare = 0: refs %v cite a6; the test no longer shows the mechanism", refs)
	}
}
