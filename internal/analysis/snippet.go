package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SnippetChars bounds snippets built without the full-text index (runes).
const SnippetChars = 300

// PlainSnippet returns up to SnippetChars runes of text, on a word boundary,
// starting near the first occurrence of any of terms (folded words).
func PlainSnippet(text string, terms []string) string {
	text = CollapseSpace(text)
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
	out := text[start:]
	if !utf8.ValidString(out) {
		out = string([]rune(out)) // each invalid byte becomes U+FFFD, as it always did
	}
	// Cut after SnippetChars runes, on the last space of the second half.
	n := 0
	for i := range out {
		if n == SnippetChars {
			out = out[:i]
			if sp := strings.LastIndexByte(out, ' '); sp > SnippetChars/2 {
				out = out[:sp]
			}
			out += "…"
			break
		}
		n++
	}
	if start > 0 {
		out = "…" + out
	}
	return out
}

// CollapseSpace returns s with leading and trailing white space removed and
// each inner run of it made one space: strings.Join(strings.Fields(s), " "),
// without the slice of words, and s itself when it has nothing to change.
func CollapseSpace(s string) string {
	if !needsCollapse(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	pending := false
	for i, r := range s {
		if isSpace(r) {
			pending = true
			continue
		}
		if pending && b.Len() > 0 {
			b.WriteByte(' ')
		}
		pending = false
		if r == utf8.RuneError {
			_, w := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+w]) // an invalid byte is kept as it is, as Fields keeps it
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// needsCollapse reports whether s has white space other than single ' '
// between words.
func needsCollapse(s string) bool {
	prevSpace := true // a space at the start is to remove
	for _, r := range s {
		sp := isSpace(r)
		if sp && (prevSpace || r != ' ') {
			return true
		}
		prevSpace = sp
	}
	return prevSpace && s != ""
}

// isSpace is the white space strings.Fields splits on.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r'
	}
	return unicode.IsSpace(r)
}
