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

// chatStore ingests one conversation of alternating Ana and Ben turns starting at
// start, one a minute, refs m1…, and filler conversations so the words are rare.
func chatStore(t *testing.T, start string, turns ...string) *memtree.Store {
	t.Helper()
	ctx := context.Background()
	st, _ := openEmpty(t)
	var msgs []memtree.MessageInput
	for i, text := range turns {
		msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("m%d", i+1), Author: []string{"Ana", "Ben"}[i%2],
			TimestampMS: ms(start) + int64(i)*60000, Text: text})
	}
	if _, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: "chat:ana-ben", Title: "Ana and Ben", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: fmt.Sprintf("chat:other-%d", i), Title: fmt.Sprintf("Other %d", i),
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("o%d", i), Author: "Cleo",
				TimestampMS: ms("2025-01-02T14:00:00Z") + int64(i)*86_400_000, Text: fmt.Sprintf("Small talk number %d about the weather and the garden.", i)}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestDatedQuestionCitesTheNamedPersonsTurns (issue 30, item 3): a question naming
// a participant and a month, whose other words no turn says, cites that
// participant's turns of that time first; the other participant's turns follow
// (with NamedFirst = 0 they are not cited at all: the person's name picks the
// messages).
func TestDatedQuestionCitesTheNamedPersonsTurns(t *testing.T) {
	ctx := context.Background()
	st := chatStore(t, "2026-03-10T14:00:00Z",
		"I finally finished the marathon!",
		"Wow, congratulations.",
		"My legs still hurt a bit.",
		"Take a rest then.")
	api := memory.Default(st)
	res, err := api.Search(ctx, abi.SearchRequest{Query: "What big achievement did Ana accomplish in March 2026?", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	refs := refsOf(res.Chunks)
	if len(refs) < 4 || !slices.Equal(refs[:2], []string{"m1", "m3"}) {
		t.Fatalf("refs %v, want Ana's turns m1, m3 first, then Ben's", refs)
	}
	off := retrieval.DefaultParams()
	off.NamedFirst = 0
	api = memory.New(st, off)
	res, err = api.Search(ctx, abi.SearchRequest{Query: "What big achievement did Ana accomplish in March 2026?", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if refs := refsOf(res.Chunks); slices.Contains(refs, "m2") {
		t.Fatalf("NamedFirst = 0: refs %v cite Ben's turn m2: the fixture no longer shows the change", refs)
	}
}
