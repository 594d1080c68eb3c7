package memtree

import (
	"slices"
	"strings"
	"testing"
)

// referenceDistinct is the summaries' term splitting as first written: fold the whole
// sentence, split it into words, drop stopwords and one-letter words, stem, keep
// first occurrences.
func referenceDistinct(s string) []string {
	var out []string
	for _, w := range words(s) {
		if stopwords[w] || len(w) < 2 {
			continue
		}
		if t := stem(w); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func TestDistinctTermsMatchReference(t *testing.T) {
	long := strings.Repeat("Antidisestablishmentarianism", 4)
	cases := []string{
		"",
		"a I x",
		"The quick brown Fox jumps over the lazy dog; the DOGS were running.",
		"Meeting at 10:30 re: Q3 budget — Relational conditional ACTIVATIONS, activations!",
		"Café Müller über naïve résumé façade, Ærøskøbing and ÉCOLE",
		"日本語のテキスト and English words mixed",
		"tab\tseparated\x01control\x7fchars_under_score-dash",
		long + " " + strings.ToLower(long) + " " + long[:70],
		"hopping hoping generalizations GENERALIZATIONS sky skies ponies caresses",
		"12 345 a1b2 B2B e-mail E-Mail",
	}
	terms := &sentTerms{bySent: map[string][]string{}}
	for round := 0; round < 2; round++ { // the second round reads the caches
		for _, s := range cases {
			want := referenceDistinct(s)
			got := terms.distinct(s)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("round %d distinct(%q) = %q, want %q", round, s, got, want)
			}
			if fresh := appendDistinctTerms(nil, s); !slices.Equal(fresh, got) {
				t.Errorf("appendDistinctTerms(%q) = %q, cached %q", s, fresh, got)
			}
		}
	}
	// Results handed out earlier are not overwritten by later sentences.
	first := terms.distinct(cases[2])
	snapshot := slices.Clone(first)
	for i := 0; i < 200; i++ {
		terms.distinct(strings.Repeat("word", i%7+1) + " sentence number " + strings.Repeat("x", i+2))
	}
	if !slices.Equal(first, snapshot) {
		t.Errorf("earlier terms changed: %q, was %q", first, snapshot)
	}
}
