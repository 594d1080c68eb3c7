// Package fit keeps read results within abi.MaxResultBytes: it bounds the encoded
// size of results as encoding/json writes them, cuts hit messages' texts and drops
// trailing items, for the read API and every backend's plain reads alike.
package fit

import (
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// BoundTexts cuts every hit message's text to at most n characters.
func BoundTexts(hits []abi.ChunkHit, n int) {
	for i := range hits {
		for j := range hits[i].Messages {
			m := &hits[i].Messages[j]
			if t, cut := CutText(m.Text, n); cut {
				m.Text, m.Truncated = t, true
			}
		}
	}
}

// CutText returns s cut to at most n characters (on a word boundary when one is
// near, ending in "…") and whether it was cut.
func CutText(s string, n int) (string, bool) {
	if n < 1 || utf8.RuneCountInString(s) <= n {
		return s, false
	}
	r := []rune(s)[:n-1]
	out := string(r)
	if sp := strings.LastIndexAny(out, " \n\t"); sp > len(out)/2 {
		out = out[:sp]
	}
	return strings.TrimRight(out, " \n\t") + "…", true
}

// ResultBase bounds the encoded size of a result's fields other than its list.
const ResultBase = 512

// StrLen bounds the encoded size of s as a JSON string as encoding/json writes
// it: quotes, six bytes for each character it escapes (<, >, &, controls,
// U+2028/U+2029, and each invalid byte, written \ufffd; two for " and \).
func StrLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			case c == '"' || c == '\\':
				n += 2
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// StrsLen bounds the encoded size of a string array.
func StrsLen(xs []string) int {
	n := 2
	for _, x := range xs {
		n += StrLen(x) + 1
	}
	return n
}

// HitSize bounds the encoded size of a hit (field names and numbers counted at
// their longest).
func HitSize(h *abi.ChunkHit) int {
	n := 256 + StrLen(h.ID) + StrLen(h.SourceKind) + StrLen(h.SourceID) + StrLen(h.SourceRef) +
		StrsLen(h.SourceRefs) + StrLen(h.Title) + StrLen(h.Snippet) + StrsLen(h.Tags) + 16
	for i := range h.Messages {
		m := &h.Messages[i]
		n += 80 + StrLen(m.Ref) + StrLen(m.Author) + StrLen(m.Time) + StrLen(m.TimePrecision) + StrLen(m.Text)
	}
	return n
}

// Hits keeps hits within abi.MaxResultBytes beside rest bytes of other fields:
// first by lowering the message text bound (down to abi.HitMessageMinChars), then
// by leaving out trailing hits. It returns the hits kept and how many were left out.
func Hits(hits []abi.ChunkHit, bound *int, rest int) ([]abi.ChunkHit, int) {
	sizes := func() (int, []int) {
		sum, each := rest, make([]int, len(hits))
		for i := range hits {
			each[i] = HitSize(&hits[i]) + 1
			sum += each[i]
		}
		return sum, each
	}
	sum, each := sizes()
	if sum <= abi.MaxResultBytes {
		return hits, 0
	}
	for *bound > abi.HitMessageMinChars && sum > abi.MaxResultBytes {
		*bound = max(abi.HitMessageMinChars, *bound/2)
		BoundTexts(hits, *bound)
		sum, each = sizes()
	}
	n := len(hits)
	for n > 0 && sum > abi.MaxResultBytes {
		n--
		sum -= each[n]
	}
	return hits[:n], len(hits) - n
}

// NextOffset is the offset of the page after one at offset that kept n of the had
// items it read, of total; 0 after the last page. A page that could keep none (an
// item alone above the result budget) moves past that item rather than asking for
// it again.
func NextOffset(offset, n, had, total int) int {
	if n == 0 && had > 0 {
		n = 1
	}
	if end := offset + n; end < total {
		return end
	}
	return 0
}

// Count returns how many of items fit in abi.MaxResultBytes beside rest bytes of
// other fields, size bounding each item's encoded size.
func Count[T any](items []T, rest int, size func(*T) int) int {
	sum := rest
	for i := range items {
		sum += size(&items[i]) + 1
		if sum > abi.MaxResultBytes {
			return i
		}
	}
	return len(items)
}
