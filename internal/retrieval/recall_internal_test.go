package retrieval

import "testing"

// TestNamedWords checks which query words the literal evidence measure takes as
// names or titles: capitalised within a sentence, or quoted.
func TestNamedWords(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string
		not   []string
	}{
		{`Would Caroline likely have Dr. Seuss books on her bookshelf?`, []string{"caroline", "dr", "seuss"}, []string{"would", "books", "bookshelf"}},
		{`Would Melanie enjoy the song "The Four Seasons" by Vivaldi?`, []string{"melanie", "the", "four", "seasons", "vivaldi"}, []string{"would", "song", "enjoy", "by"}},
		{`When did Melanie read the book "nothing is impossible"? Where is it?`, []string{"nothing", "impossible"}, []string{"where", "read", "book"}},
		{`discount on the package`, nil, []string{"discount", "package"}},
	} {
		got := NamedWords(c.query)
		for _, w := range c.want {
			if !got[w] {
				t.Errorf("NamedWords(%q) lacks %q (got %v)", c.query, w, got)
			}
		}
		for _, w := range c.not {
			if got[w] {
				t.Errorf("NamedWords(%q) takes %q as a name (got %v)", c.query, w, got)
			}
		}
	}
}

// TestQuorumExpr: a coordination level is the OR of the ANDs of every m-subset of
// the terms, quoted; it is refused past MaxQuorumClauses clauses.
func TestQuorumExpr(t *testing.T) {
	ts := []Term{{Word: "brake"}, {Word: "pads"}, {Word: `say "hi"`}}
	got, ok := QuorumExpr(ts, 2)
	want := `("brake" AND "pads") OR ("brake" AND "say ""hi""") OR ("pads" AND "say ""hi""")`
	if !ok || got != want {
		t.Fatalf("QuorumExpr(3 terms, 2) = %q, %v; want %q", got, ok, want)
	}
	var many []Term
	for _, w := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} {
		many = append(many, Term{Word: w})
	}
	// 7 choose 3 = 35 clauses > MaxQuorumClauses (20).
	if _, ok := QuorumExpr(many, 3); ok {
		t.Fatalf("QuorumExpr(7 terms, 3) accepted %d+ clauses, want refused past %d", 35, Default.MaxQuorumClauses)
	}
	if _, ok := QuorumExpr(ts, 0); ok {
		t.Fatal("QuorumExpr(m = 0) accepted")
	}
}

// TestPruneFrequentKeepsTheRarest: words in more than MaxDFShare of the chunks are
// dropped, unless that drops all of them: then the rarest stays.
func TestPruneFrequentKeepsTheRarest(t *testing.T) {
	ts := []Term{{Word: "common", DF: 900}, {Word: "rare", DF: 3}, {Word: "usual", DF: 500}}
	if got := PruneFrequent(ts, 1000); len(got) != 1 || got[0].Word != "rare" {
		t.Fatalf("PruneFrequent = %+v, want rare alone", got)
	}
	all := []Term{{Word: "common", DF: 900}, {Word: "usual", DF: 500}}
	if got := PruneFrequent(all, 1000); len(got) != 1 || got[0].Word != "usual" {
		t.Fatalf("PruneFrequent (all common) = %+v, want usual (the rarest)", got)
	}
}
