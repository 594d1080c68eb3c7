package retrieval_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestSearchCitesMessagesSayingTwoWords: a plain keyword query cites, of a chunk's
// messages, those that say at least two of its words when any does (a reply saying
// none is cited only when it ranks near the best, see citation.go); a one-word
// query cites every message saying it, by its own score.
func TestSearchCitesMessagesSayingTwoWords(t *testing.T) {
	ctx := context.Background()
	st, _ := openEmpty(t)
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
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "budget review", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	// The chunk's other turns with evidence (m3 replies to m2, m1 says one word)
	// rank on their own after it (issue 30, turn units); the only hit, they
	// follow m2 in its citations.
	if len(res.Chunks) != 1 || !slices.Equal(res.Chunks[0].SourceRefs, []string{"m2", "m3", "m1"}) || res.Chunks[0].SourceRef != "m2" {
		t.Fatalf("search %q cites %v, want m2 (the message saying both words) first, then the reply m3 and m1 (one word)", "budget review", refsOf(res.Chunks))
	}
	res, err = memory.Default(st).Search(ctx, abi.SearchRequest{Query: "budget", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Both say the word: each is cited by its own score (what m1 passes on to its
	// reply m2 counts only for a reply saying none of the query's words), m1 first.
	// m3 replies to m2 and follows as its own turn.
	if len(res.Chunks) != 1 || !slices.Equal(res.Chunks[0].SourceRefs, []string{"m1", "m2", "m3"}) {
		t.Fatalf("search %q cites %v, want m1 then m2 (one word: every message saying it, by its own score), then the reply m3", "budget", refsOf(res.Chunks))
	}
}

// TestSearchRanksChunksByTheirBestMessage: of chunks saying the same number of a
// keyword query's words, a long e-mail thread whose one message says the rarer words
// ranks above short chat lines saying the common ones; the thread's length (other
// messages) does not count against that message.
func TestSearchRanksChunksByTheirBestMessage(t *testing.T) {
	ctx := context.Background()
	st, _ := openEmpty(t)
	filler := strings.Repeat("The quarterly offsite agenda covers roadmap themes, staffing levels, travel logistics, "+
		"venue catering options, shuttle timing from the station, dietary preferences, evening plans, "+
		"badge pickup, parking validation, projector rentals, breakout rooms and the printed schedule. ", 1)
	thread := memtree.SourceInput{Kind: memtree.KindEmail, SourceID: "thread-offsite", Title: "Offsite planning", Provider: "mail"}
	for i := range 4 {
		text := filler
		if i == 2 {
			text = "Send your interview scorecard today."
		}
		thread.Messages = append(thread.Messages, memtree.MessageInput{
			Ref: fmt.Sprintf("mail-%d", i), Author: "Dana Ruiz", AuthorAddr: "dana@corp.example", Subject: "Offsite planning",
			TimestampMS: ms("2026-03-02T09:00:00Z") + int64(i)*3600_000, Text: text,
		})
	}
	sources := []memtree.SourceInput{thread}
	for i := range 8 {
		sources = append(sources, memtree.SourceInput{
			Kind: memtree.KindChat, SourceID: fmt.Sprintf("slack:#team-%d", i), Title: fmt.Sprintf("#team-%d", i), Provider: "slack",
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("chat-%d", i), Author: "Erik Lund",
				TimestampMS: ms("2026-03-03T10:00:00Z") + int64(i)*60_000, Text: fmt.Sprintf("The engineer interview for the platform team is in room %d this afternoon; bring your questions.", i)}},
		})
	}
	for i := range 40 {
		sources = append(sources, memtree.SourceInput{
			Kind: memtree.KindChat, SourceID: fmt.Sprintf("slack:#misc-%d", i), Title: fmt.Sprintf("#misc-%d", i), Provider: "slack",
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("misc-%d", i), Author: "Erik Lund",
				TimestampMS: ms("2026-03-04T10:00:00Z") + int64(i)*60_000, Text: fmt.Sprintf("Lunch order number %d is here.", i)}},
		})
	}
	for _, src := range sources {
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "engineer interview scorecard", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) == 0 || res.Chunks[0].SourceRef != "mail-2" {
		t.Fatalf("search ranks %v first, want the thread's message mail-2 (says the rare word scorecard)", refsOf(res.Chunks))
	}
	for i := 1; i < len(res.Chunks); i++ {
		if res.Chunks[i].Score > res.Chunks[0].Score {
			t.Errorf("hit %d scores %.3f above the first hit's %.3f: the score is not the one ranked by", i, res.Chunks[i].Score, res.Chunks[0].Score)
		}
	}
}

// TestSearchFillsKBeyondARestriction: a query naming a person restricts search to
// that person's chunks first; when they hold fewer than k hits, the chunks saying
// the query's words elsewhere fill the remaining places, after them.
func TestSearchFillsKBeyondARestriction(t *testing.T) {
	ctx := context.Background()
	st, _ := openEmpty(t)
	src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: "chat:cleo", Title: "Cleo", Messages: []memtree.MessageInput{
		{Ref: "c1", Author: "Cleo Vance", AuthorAddr: "cleo@example.org", TimestampMS: ms("2026-03-02T14:00:00Z"), Text: "I planted tomatoes in the garden today."},
	}}
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		doc := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: fmt.Sprintf("doc:garden-%d", i), Title: fmt.Sprintf("Note %d", i),
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("docs/garden-%d.md", i), TimestampMS: ms("2026-03-03T10:00:00Z") + int64(i)*60_000,
				Text: fmt.Sprintf("The community garden plot %d needs tomatoes and water.", i)}}}
		if _, err := st.Ingest(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "Cleo Vance garden tomatoes", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	refs := refsOf(res.Chunks)
	if len(res.Chunks) != 5 || refs[0] != "c1" {
		t.Fatalf("search cites %v (%d hits), want c1 (Cleo's message) first and 5 hits", refs, len(res.Chunks))
	}
}
