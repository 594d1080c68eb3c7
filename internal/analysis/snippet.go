package analysis

import (
	"strings"
	"unicode/utf8"
)

// SnippetChars bounds snippets built without the full-text index (runes).
const SnippetChars = 300

// PlainSnippet returns up to SnippetChars runes of text, on a word boundary,
// starting near the first occurrence of any of terms (folded words).
func PlainSnippet(text string, terms []string) string {
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
