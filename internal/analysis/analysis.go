// Package analysis is the one text analyzer of the memory tree: folding, word
// splitting, stopwords and the Porter stemmer. Every backend indexes exactly its
// output and every query is analyzed by it, so a query's terms are the index's
// terms (the SQLite backend's FTS5 tokenizer, porter over unicode61 with
// remove_diacritics 2, is proved equal to it by internal/memtree's
// TestFTSTokenizerIsTheAnalyzer).
package analysis

import (
	"slices"
	"strings"
	"sync"
)

// Fold folds every code point of s as FTS5's unicode61 tokenizer with
// remove_diacritics 2 folds the characters of a word: to lower case without
// diacritics, dropping the combining marks it counts as diacritics.
func Fold(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c < 0x80 {
			b = append(b, lowerASCII(c))
			i++
			continue
		}
		var r uint32
		r, i = decode(s, i)
		if f := foldRune(r); f != 0 {
			b = appendCode(b, f)
		}
	}
	return string(b)
}

// Words splits s into folded words exactly as FTS5's unicode61 tokenizer (with
// remove_diacritics 2) does: runs of letters, numbers, private-use characters and
// code points SQLite's table does not list (emoji among them), with the
// diacritics inside them removed, cut to MaxTermBytes. Stem of each is the term
// the SQLite backend indexes.
func Words(s string) []string {
	if !isASCII(s) {
		return unicodeWords(nil, s)
	}
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			s = strings.ToLower(s)
			break
		}
	}
	n, in := 0, false
	for i := 0; i < len(s); i++ {
		t := isTokenASCII(s[i])
		if t && !in {
			n++
		}
		in = t
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < len(s); {
		if !isTokenASCII(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isTokenASCII(s[j]) {
			j++
		}
		out = append(out, s[i:min(j, i+MaxTermBytes)])
		i = j
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// termCache maps a folded word to the content term the summaries score it as: its
// Porter stem, or "" for a stopword or a one-letter word. Stems depend on the word
// alone, so one cache serves every source and every preparing goroutine; it stops
// growing at termCacheMax words (later new words are stemmed each time).
var termCache = struct {
	mu sync.RWMutex
	m  map[string]string
}{m: map[string]string{}}

const termCacheMax = 1 << 17

// ContentTerm returns the content term of folded word w ("" when w is not one).
func ContentTerm(w string) string {
	termCache.mu.RLock()
	st, ok := termCache.m[w]
	termCache.mu.RUnlock()
	if ok {
		return st
	}
	return storeTerm(w)
}

// ContentTermBytes is ContentTerm for a folded word held in a reused buffer; it
// copies the word only when it is not cached yet.
func ContentTermBytes(b []byte) string {
	termCache.mu.RLock()
	st, ok := termCache.m[string(b)]
	termCache.mu.RUnlock()
	if ok {
		return st
	}
	return storeTerm(string(b))
}

func storeTerm(w string) string {
	st := ""
	if len(w) >= 2 && !Stopwords[w] {
		st = Stem(w)
	}
	termCache.mu.Lock()
	if len(termCache.m) < termCacheMax {
		termCache.m[w] = st
	}
	termCache.mu.Unlock()
	return st
}

// AppendDistinctTerms appends to dst the distinct stemmed, non-stopword terms of s
// in the order they first occur: what Words(s), dropping stopwords and one-letter
// words and stemming the rest, then keeping first occurrences, gives. ASCII text
// is split in place, without folding a copy of s.
func AppendDistinctTerms(dst []string, s string) []string {
	base := len(dst)
	add := func(t string) {
		if t != "" && !slices.Contains(dst[base:], t) { // sentences are short: a scan beats a map
			dst = append(dst, t)
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			for _, w := range Words(s) {
				add(ContentTerm(w))
			}
			return dst
		}
	}
	var buf [64]byte
	for i := 0; i < len(s); {
		c := s[i]
		if !isTokenASCII(c) {
			i++
			continue
		}
		j := i
		upper := false
		for j < len(s) && isTokenASCII(s[j]) {
			upper = upper || ('A' <= s[j] && s[j] <= 'Z')
			j++
		}
		w := s[i:min(j, i+MaxTermBytes)]
		i = j
		if len(w) < 2 {
			continue
		}
		if !upper {
			add(ContentTerm(w))
			continue
		}
		var b []byte
		if len(w) <= len(buf) {
			b = buf[:len(w)]
		} else {
			b = make([]byte, len(w))
		}
		for k := 0; k < len(w); k++ {
			c := w[k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[k] = c
		}
		add(ContentTermBytes(b))
	}
	return dst
}

// Stopwords are the words queries and summaries do not score.
var Stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren as at be because been
	before being below between both but by can cannot could did didn do does doesn doing don down during each few for
	from further had has have having he her here hers herself him himself his how i if in into is isn it its itself
	just me more most my myself no nor not now of off on once only or other our ours ourselves out over own re s same
	she should so some such t than that the their theirs them themselves then there these they this those through to
	too under until up very was wasn we were what when where which while who whom why will with won would you your
	yours yourself yourselves ll ve d m o y also get got let us via per any anything something
	said say says tell told message messages mail mails email emails note notes thing things about regarding`) {
		m[w] = true
	}
	return m
}()
