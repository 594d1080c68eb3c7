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

// meaningStore holds 24 short chats of Ana with Ben, a day apart, each one chunk.
// One says what the question "What pets does Ana have?" asks without its words
// (turtles); Ben's dog is not Ana's; the other chats are about other things.
func meaningStore(t *testing.T) *memtree.Store {
	t.Helper()
	ctx := context.Background()
	st, _ := openEmpty(t)
	topics := []string{
		"The quarterly budget spreadsheet needs another column.",
		"I repainted the kitchen cabinets a pale blue.",
		"Traffic on the bridge was terrible this morning.",
		"My sister is moving to Lisbon next month.",
		"The new phone battery lasts two full days.",
		"I signed up for the pottery class on Thursdays.",
		"The train to the airport was cancelled again.",
		"We finally fixed the leaking roof in the attic.",
		"I am reading a long novel about sailors.",
		"The invoice from the plumber arrived today.",
		"Our team won the office quiz last night.",
		"I need new tyres before the winter.",
		"The museum has a new exhibition on maps.",
		"I baked sourdough bread for the first time.",
		"The printer at work jammed three times.",
		"I booked flights for the conference in May.",
		"My laptop keyboard stopped working.",
		"We planted tomatoes and basil in the garden.",
		"The electricity bill went up a lot.",
		"I started learning the guitar chords.",
		"Our two turtles love basking under the heat lamp.", // index 20: the answer
		"The dentist appointment is on Friday.",
		"I bought a second-hand bicycle.",
		"The neighbours are renovating their house.",
	}
	for i, text := range topics {
		msgs := []memtree.MessageInput{
			{Ref: fmt.Sprintf("a%d", i), Author: "Ana", TimestampMS: ms("2026-01-01T10:00:00Z") + int64(i)*86_400_000, Text: text},
			{Ref: fmt.Sprintf("b%d", i), Author: "Ben", TimestampMS: ms("2026-01-01T10:01:00Z") + int64(i)*86_400_000, Text: "I see, tell me more."},
		}
		if i == 3 {
			msgs[1].Text = "My dog barked at the mailman all afternoon."
		}
		if _, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: fmt.Sprintf("chat:ana-ben-%d", i), Title: "Ana and Ben", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestMeaningListFindsWhatTheWordsDoNot (issue 36): "What pets does Ana have?"
// shares no word with "Our two turtles love basking under the heat lamp", which
// search ranks only by the person (newest first); the meaning list (Ana's messages
// by the cosine of their word vectors to the question's) brings it into the first
// five of search and recall. Ben's dog is not cited above it: the list holds Ana's
// messages only. With the meaning weights at 0 the lists are as before.
func TestMeaningListFindsWhatTheWordsDoNot(t *testing.T) {
	ctx := context.Background()
	st := meaningStore(t)
	const q = "What pets does Ana have?"
	pos := func(p retrieval.Params, tool string) int {
		api := memory.New(st, p)
		var hits []abi.ChunkHit
		if tool == "search" {
			r, err := api.Search(ctx, abi.SearchRequest{Query: q, K: 30})
			if err != nil {
				t.Fatal(err)
			}
			hits = r.Chunks
		} else {
			r, err := api.Recall(ctx, abi.RecallRequest{Query: q, K: 30})
			if err != nil {
				t.Fatal(err)
			}
			hits = r.Chunks
		}
		refs := refsOf(hits)
		if i := slices.Index(refs, "b3"); i >= 0 && i < slices.Index(refs, "a20") {
			t.Errorf("%s: Ben's dog (b3) cited above Ana's turtles: %v", tool, refs)
		}
		return slices.Index(refs, "a20")
	}
	// Weights high enough to move a hit from the bottom of 24 (reciprocal-rank
	// fusion is flat: 1/84 against 1/61); the chosen weights are the folds'.
	on := retrieval.DefaultParams()
	on.MeaningSearch, on.MeaningRecall, on.MeaningKeep = 3, 3, 0
	off := on
	off.MeaningSearch, off.MeaningRecall = 0, 0
	for _, tool := range []string{"search", "recall"} {
		before, after := pos(off, tool), pos(on, tool)
		t.Logf("%s: the turtles (a20) cited at %d without the meaning list, at %d with it", tool, before, after)
		if before >= 0 && before < 5 {
			t.Fatalf("%s without meaning already cites the turtles at %d: the fixture does not test the list", tool, before)
		}
		if after < 0 || after >= 5 || (before >= 0 && after >= before) {
			t.Errorf("%s with the meaning list cites the turtles at %d (without: %d), want among the first five", tool, after, before)
		}
		if d := pos(retrieval.DefaultParams(), tool); d < 0 || (before >= 0 && d > before) {
			t.Errorf("%s with the default weights cites the turtles at %d, below %d without the list", tool, d, before)
		}
	}
}
