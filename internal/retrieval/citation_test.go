package retrieval_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestSearchCitesTheAnswerAcrossAChunkBoundary: a question ends one chat chunk and
// its answer, which shares no word with it, opens the next; search still returns the
// answer's chunk and cites the answer. A question naming a participant cites that
// participant's turn first.
func TestSearchCitesTheAnswerAcrossAChunkBoundary(t *testing.T) {
	ctx := context.Background()
	st, _ := openEmpty(t)
	var msgs []memtree.MessageInput
	say := func(author, text string) {
		n := len(msgs)
		msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("m%d", n+1), Author: author,
			TimestampMS: ms("2026-03-02T14:00:00Z") + int64(n)*60000, Text: text})
	}
	for i := 0; i < memtree.ChatChunkMessages-1; i++ {
		say([]string{"Ana", "Ben"}[i%2], fmt.Sprintf("Small talk number %d about the weather.", i))
	}
	say("Ben", "How long have you been married?") // the last message of the first chunk
	say("Ana", "Five years already!")             // the first of the next
	say("Ben", "Congratulations, that is wonderful.")
	say("Ana", "I went hiking in the mountains with my sister.")
	say("Ben", "I went hiking too, by the lake.")
	if _, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: "chat:ana-ben", Title: "Ana and Ben", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "How long have you been married?", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	refs := refsOf(res.Chunks)
	if len(refs) < 2 || refs[0] != "m8" || !slices.Contains(refs, "m9") {
		t.Fatalf("married: refs %v, want m8 (the question) first and m9 (the answer, in the next chunk) cited", refs)
	}
	res, err = memory.Default(st).Search(ctx, abi.SearchRequest{Query: "Where did Ben go hiking?", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if refs := refsOf(res.Chunks); len(refs) == 0 || refs[0] != "m12" {
		t.Fatalf("Ben hiking: refs %v, want m12 (Ben's turn) first", refs)
	}
}

// TestSearchRanksTheAnswerChunkWithItsQuestion: the chunk that opens with the answer
// to a question ending the chunk before it ranks with that question, above other
// chunks that say only some of the query's words, so a short list still holds the
// answer.
func TestSearchRanksTheAnswerChunkWithItsQuestion(t *testing.T) {
	ctx := context.Background()
	st, _ := openEmpty(t)
	var msgs []memtree.MessageInput
	say := func(author, text string) {
		n := len(msgs)
		msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("m%d", n+1), Author: author,
			TimestampMS: ms("2026-03-02T14:00:00Z") + int64(n)*60000, Text: text})
	}
	for i := 0; i < memtree.ChatChunkMessages-1; i++ {
		say([]string{"Ana", "Ben"}[i%2], fmt.Sprintf("Small talk number %d about the weather.", i))
	}
	say("Ben", "How long have you been married?") // the last message of the first chunk
	say("Ana", "Five years already!")             // the first of the next
	say("Ben", "Congratulations, that is wonderful.")
	if _, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: "chat:ana-ben", Title: "Ana and Ben", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	// Other conversations say one of the words ("long").
	for i := range 6 {
		src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: fmt.Sprintf("chat:other-%d", i), Title: fmt.Sprintf("Other %d", i),
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("o%d", i), Author: "Cleo",
				TimestampMS: ms("2026-04-02T14:00:00Z") + int64(i)*86_400_000, Text: fmt.Sprintf("The queue was long at shop %d.", i)}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "How long have you been married?", K: 2})
	if err != nil {
		t.Fatal(err)
	}
	refs := refsOf(res.Chunks)
	if len(res.Chunks) != 2 || refs[0] != "m8" || res.Chunks[1].SourceRef != "m9" {
		t.Fatalf("married, k = 2: refs %v, want m8 (the question) first and the next chunk, citing m9 (the answer), second", refs)
	}
}
