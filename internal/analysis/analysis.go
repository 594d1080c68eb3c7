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
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// Fold lowercases s and removes diacritics, as FTS5's unicode61 remove_diacritics does.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteString(foldRune(r))
	}
	return b.String()
}

var foldCache sync.Map // rune → string

// foldRune lowercases r and strips its combining marks (NFD, drop Mn).
func foldRune(r rune) string {
	if v, ok := foldCache.Load(r); ok {
		return v.(string)
	}
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, string(r))
	if err != nil || out == "" {
		out = string(r)
	}
	out = strings.ToLower(out)
	foldCache.Store(r, out)
	return out
}

// Words splits s into folded word tokens the way unicode61 does (letters and digits).
func Words(s string) []string {
	return strings.FieldsFunc(Fold(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
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
		if !isASCIIAlnum(c) {
			i++
			continue
		}
		j := i
		upper := false
		for j < len(s) && isASCIIAlnum(s[j]) {
			upper = upper || ('A' <= s[j] && s[j] <= 'Z')
			j++
		}
		w := s[i:j]
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

func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
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

// Stem applies the Porter (1980) stemmer, as SQLite's FTS5 porter tokenizer does:
// only ASCII lowercase words of 3 to 64 letters are stemmed.
func Stem(w string) string {
	if len(w) < 3 || len(w) > 64 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	p := porter{b: []byte(w)}
	p.step1ab()
	if len(p.b) > 2 {
		p.step1c()
		p.step2()
		p.step3()
		p.step4()
		p.step5()
	}
	return string(p.b)
}

type porter struct{ b []byte }

func (p *porter) cons(i int) bool {
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		if i == 0 {
			return true
		}
		return !p.cons(i - 1)
	}
	return true
}

// m measures the number of VC sequences in b[:j].
func (p *porter) m(j int) int {
	n, i := 0, 0
	for {
		if i >= j {
			return n
		}
		if !p.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i >= j {
				return n
			}
			if p.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i >= j {
				return n
			}
			if !p.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

func (p *porter) vowelIn(j int) bool {
	for i := 0; i < j; i++ {
		if !p.cons(i) {
			return true
		}
	}
	return false
}

func (p *porter) doublec(j int) bool {
	return j >= 1 && p.b[j] == p.b[j-1] && p.cons(j)
}

// cvc: b[i-2..i] is consonant-vowel-consonant and the last is not w, x or y.
func (p *porter) cvc(i int) bool {
	if i < 2 || !p.cons(i) || p.cons(i-1) || !p.cons(i-2) {
		return false
	}
	switch p.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func (p *porter) ends(s string) bool {
	return len(p.b) >= len(s) && string(p.b[len(p.b)-len(s):]) == s
}

// stemLen is the length of b without suffix s.
func (p *porter) stemLen(s string) int { return len(p.b) - len(s) }

func (p *porter) setto(s, r string) { p.b = append(p.b[:p.stemLen(s)], r...) }

// r replaces suffix s by r when m(stem) > 0.
func (p *porter) r(s, r string) bool {
	if !p.ends(s) {
		return false
	}
	if p.m(p.stemLen(s)) > 0 {
		p.setto(s, r)
	}
	return true
}

func (p *porter) step1ab() {
	if p.ends("s") {
		switch {
		case p.ends("sses"):
			p.setto("sses", "ss")
		case p.ends("ies"):
			p.setto("ies", "i")
		case !p.ends("ss"):
			p.b = p.b[:len(p.b)-1]
		}
	}
	if p.ends("eed") {
		if p.m(p.stemLen("eed")) > 0 {
			p.setto("eed", "ee")
		}
		return
	}
	var suf string
	if p.ends("ed") {
		suf = "ed"
	} else if p.ends("ing") {
		suf = "ing"
	} else {
		return
	}
	if !p.vowelIn(p.stemLen(suf)) {
		return
	}
	p.b = p.b[:p.stemLen(suf)]
	switch {
	case p.ends("at"):
		p.setto("at", "ate")
	case p.ends("bl"):
		p.setto("bl", "ble")
	case p.ends("iz"):
		p.setto("iz", "ize")
	case p.doublec(len(p.b) - 1):
		switch p.b[len(p.b)-1] {
		case 'l', 's', 'z':
		default:
			p.b = p.b[:len(p.b)-1]
		}
	case p.m(len(p.b)) == 1 && p.cvc(len(p.b)-1):
		p.b = append(p.b, 'e')
	}
}

func (p *porter) step1c() {
	if p.ends("y") && p.vowelIn(len(p.b)-1) {
		p.b[len(p.b)-1] = 'i'
	}
}

func (p *porter) step2() {
	for _, x := range [][2]string{
		{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"},
		{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
		{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"},
		{"fulness", "ful"}, {"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
		{"logi", "log"},
	} {
		if p.r(x[0], x[1]) {
			return
		}
	}
}

func (p *porter) step3() {
	for _, x := range [][2]string{
		{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
	} {
		if p.r(x[0], x[1]) {
			return
		}
	}
}

func (p *porter) step4() {
	for _, s := range []string{"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
		"ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize"} {
		if !p.ends(s) {
			continue
		}
		j := p.stemLen(s)
		if s == "ion" && (j < 1 || (p.b[j-1] != 's' && p.b[j-1] != 't')) {
			return
		}
		if p.m(j) > 1 {
			p.b = p.b[:j]
		}
		return
	}
}

func (p *porter) step5() {
	if p.ends("e") {
		j := len(p.b) - 1
		a := p.m(j)
		if a > 1 || (a == 1 && !p.cvc(j-1)) {
			p.b = p.b[:j]
		}
	}
	if p.ends("ll") && p.m(len(p.b)) > 1 {
		p.b = p.b[:len(p.b)-1]
	}
}

// EmailRE matches an e-mail address (the store extracts addresses with it too, so
// an address in a query is the entity the store linked).
var EmailRE = lazyre.New(`(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b`)
