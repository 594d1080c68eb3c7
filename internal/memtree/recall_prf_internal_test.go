package memtree

import (
	"context"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestFeedbackTerms: the feedback words are those the leading hits' snippets share
// and the query does not say, heaviest first; a word in one snippet only, a query
// word and a stopword are not feedback. The feedback ranking then puts a chunk saying
// the feedback word (and no query word) among its hits.
func TestFeedbackTerms(t *testing.T) {
	ctx := context.Background()
	saved := *knobs
	t.Cleanup(func() { *knobs = saved })
	knobs.FeedbackDocs = 5 // feedback on, whatever the default
	st := leadFixture(t)
	db, err := st.readers(ctx)
	if err != nil || db == nil {
		t.Fatalf("readers: %v", err)
	}
	snap, err := st.snapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	query, err := st.queryTerms(ctx, db, "Lisbon")
	if err != nil || len(query) != 1 {
		t.Fatalf("query terms %v, %v", query, err)
	}
	hits := []abi.ChunkHit{
		{ID: "a", Snippet: "A detective story set in Lisbon, with trams and old harbours."},
		{ID: "b", Snippet: "Lisbon trip: hotel near Alfama, tram 28, the Belem tower and the harbour at sunset."},
		{ID: "c", Snippet: "I went to Lisbon in April with my sister."},
	}
	fb, err := st.feedbackTerms(ctx, db, snap, hits, query)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range fb {
		got[f.Stem] = true
		if f.w <= 0 {
			t.Errorf("feedback word %q has weight %v", f.Word, f.w)
		}
	}
	for _, w := range []string{"tram", "harbour"} {
		if !got[stem(w)] {
			t.Errorf("feedback words %v lack %q, said in two of the three snippets", fb, w)
		}
	}
	for _, w := range []string{"lisbon", "sister", "with", "detective"} {
		if got[stem(w)] {
			t.Errorf("feedback words %v hold %q (a query word, a stopword or a word of one snippet)", fb, w)
		}
	}
	ranked, err := feedbackRank(ctx, db, snap, query, fb, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranked) == 0 {
		t.Fatal("feedback ranking found nothing")
	}
	for i := 1; i < len(ranked); i++ {
		if ranked[i].Score > ranked[i-1].Score {
			t.Fatalf("feedback ranking out of order at %d: %v after %v", i, ranked[i].Score, ranked[i-1].Score)
		}
	}
}
