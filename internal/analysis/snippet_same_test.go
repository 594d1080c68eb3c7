package analysis

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// fieldsSnippet is PlainSnippet as it was written first (strings.Fields, a
// []rune copy of the rest): the reference the allocation-free one must equal.
func fieldsSnippet(text string, terms []string) string {
	text = strings.Join(strings.Fields(text), " ")
	start := 0
	if len(terms) > 0 {
		lower := strings.ToLower(text)
		best := -1
		for _, t := range terms {
			if i := strings.Index(lower, t); i >= 0 && (best < 0 || i < best) {
				best = i
			}
		}
		if best > 80 {
			start = best - 60
			for start < len(text) && !utf8.RuneStart(text[start]) {
				start++
			}
			if sp := strings.IndexByte(text[start:], ' '); sp >= 0 && sp < 20 {
				start += sp + 1
			}
		}
	}
	r := []rune(text[start:])
	out := string(r)
	if len(r) > SnippetChars {
		out = string(r[:SnippetChars])
		if sp := strings.LastIndexByte(out, ' '); sp > SnippetChars/2 {
			out = out[:sp]
		}
		out += "…"
	}
	if start > 0 {
		out = "…" + out
	}
	return out
}

// snippetPieces are the parts random texts are made of: words in several
// scripts, every kind of white space strings.Fields knows, U+FFFD itself and
// invalid bytes.
var snippetPieces = []string{"budget", "Meeting", "zürich", "İstanbul", "東京", "ПРИВЕТ", "a", "naïve",
	" ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\u00a0", "\u0085", "\u2003", "\u3000",
	"\ufffd", "\xff", "\xe2\x82", ".", ": ", "…"}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(400); n > 0; n-- {
		b.WriteString(snippetPieces[r.IntN(len(snippetPieces))])
	}
	return b.String()
}

// TestPlainSnippetIsTheFieldsSnippet: on 5,000 random texts (and the edge
// cases), PlainSnippet and CollapseSpace give exactly what the strings.Fields
// versions gave.
func TestPlainSnippetIsTheFieldsSnippet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	termSets := [][]string{nil, {"budget"}, {"東京", "zürich"}, {"istanbul"}, {"nothing"}}
	texts := []string{"", " ", "\t\n", "a", " a ", "a  b", "\xff", strings.Repeat("word ", 200), strings.Repeat("é", 400)}
	for range 5000 {
		texts = append(texts, randomText(r))
	}
	for _, text := range texts {
		if got, want := CollapseSpace(text), strings.Join(strings.Fields(text), " "); got != want {
			t.Fatalf("CollapseSpace(%q) = %q, want %q", text, got, want)
		}
		for _, terms := range termSets {
			if got, want := PlainSnippet(text, terms), fieldsSnippet(text, terms); got != want {
				t.Fatalf("PlainSnippet(%q, %q) = %q, want %q", text, terms, got, want)
			}
		}
	}
}

func BenchmarkPlainSnippet(b *testing.B) {
	text := strings.Repeat("The budget meeting moved to Thursday because the venue was booked. ", 40)
	b.ReportAllocs()
	for b.Loop() {
		PlainSnippet(text, []string{"venue"})
	}
}
