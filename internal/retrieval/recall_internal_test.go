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

// TestPruneFrequentKeepsTheRarest: words in more than MaxDFShare of the chunks are
// dropped, unless that drops all of them: then the rarest stays.
func TestPruneFrequentKeepsTheRarest(t *testing.T) {
	dp := DefaultParams()
	ts := []Term{{Word: "common", DF: 900}, {Word: "rare", DF: 3}, {Word: "usual", DF: 500}}
	if got := PruneFrequent(&dp, ts, 1000); len(got) != 1 || got[0].Word != "rare" {
		t.Fatalf("PruneFrequent = %+v, want rare alone", got)
	}
	all := []Term{{Word: "common", DF: 900}, {Word: "usual", DF: 500}}
	if got := PruneFrequent(&dp, all, 1000); len(got) != 1 || got[0].Word != "usual" {
		t.Fatalf("PruneFrequent (all common) = %+v, want usual (the rarest)", got)
	}
}
