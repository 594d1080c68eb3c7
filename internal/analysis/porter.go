package analysis

// This file is the Porter (1980) stemmer exactly as SQLite's FTS5 porter
// tokenizer applies it (ext/fts5/fts5_tokenize.c): to any word of 3 to 64 bytes,
// byte by byte, where a, e, i, o, u are vowels, y is a vowel after a consonant,
// and every other byte (digits, bytes of non-ASCII letters) is a consonant. So
// "1900s" stems to "1900" and "straße" to "straß", as FTS5 indexes them.

// maxStemBytes is FTS5_PORTER_MAX_TOKEN: longer words are not stemmed.
const maxStemBytes = 64

// Stem returns the Porter stem of folded word w as FTS5's porter tokenizer
// makes it; words shorter than 3 or longer than 64 bytes are their own stem.
func Stem(w string) string {
	if len(w) < 3 || len(w) > maxStemBytes {
		return w
	}
	var buf [maxStemBytes + 8]byte
	b := stem(append(buf[:0], w...))
	if string(b) == w {
		return w
	}
	return string(b)
}

func stem(b []byte) []byte {
	b = step1a(b)
	var stripped bool
	if b, stripped = step1b(b); stripped {
		if n, ok := applyRules(b, step1b2Rules); ok {
			b = n
		} else if c := b[len(b)-1]; !isVowel(c, false) && c != 'l' && c != 's' && c != 'z' && len(b) >= 2 && c == b[len(b)-2] {
			b = b[:len(b)-1]
		} else if mEq1(b) && oStar(b) {
			b = append(b, 'e')
		}
	}
	// Step 1c.
	if b[len(b)-1] == 'y' && hasVowel(b[:len(b)-1]) {
		b[len(b)-1] = 'i'
	}
	for _, rules := range [][]rule{step2Rules, step3Rules, step4Rules} {
		if n, ok := applyRules(b, rules); ok && n != nil {
			b = n
		}
	}
	// Step 5a.
	if b[len(b)-1] == 'e' {
		if s := b[:len(b)-1]; mGt1(s) || mEq1(s) && !oStar(s) {
			b = s
		}
	}
	// Step 5b.
	if len(b) > 1 && b[len(b)-1] == 'l' && b[len(b)-2] == 'l' && mGt1(b[:len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// step1a removes plural endings: sses → ss, ies → i, s → (but not after s).
func step1a(b []byte) []byte {
	n := len(b)
	if b[n-1] != 's' {
		return b
	}
	switch {
	case b[n-2] == 'e':
		if n > 4 && b[n-4] == 's' && b[n-3] == 's' || n > 3 && b[n-3] == 'i' {
			return b[:n-2]
		}
		return b[:n-1]
	case b[n-2] != 's':
		return b[:n-1]
	}
	return b
}

// rule replaces suffix by out when the stem before it satisfies cond.
type rule struct {
	suffix, out string
	cond        condition
}

// condition is a rule's condition on the stem (a value, not a func, so that
// the stemmer's buffer stays on the stack).
type condition uint8

const (
	always   condition = iota
	mGt0Cond           // m > 0
	mGt1Cond           // m > 1
	ionCond            // m > 1 and the stem ends in s or t
)

func (c condition) holds(stem []byte) bool {
	switch c {
	case mGt0Cond:
		return mGt0(stem)
	case mGt1Cond:
		return mGt1(stem)
	case ionCond:
		return mGt1SorT(stem)
	}
	return true
}

// applyRules finds the first rule whose suffix ends b with at least one byte
// before it (ok) and, when its condition holds, returns b rewritten (n != nil).
// Like FTS5, a step stops at the first matching suffix whether or not its
// condition holds.
func applyRules(b []byte, rules []rule) (n []byte, ok bool) {
	for _, r := range rules {
		if len(b) <= len(r.suffix) || string(b[len(b)-len(r.suffix):]) != r.suffix {
			continue
		}
		stem := b[:len(b)-len(r.suffix)]
		if !r.cond.holds(stem) {
			return nil, true
		}
		return append(stem, r.out...), true
	}
	return nil, false
}

// step1b rewrites eed to ee (m > 0) or strips ed or ing (when the stem has a
// vowel), reporting whether it stripped ed or ing (then step 1b goes on).
func step1b(b []byte) ([]byte, bool) {
	n := len(b)
	switch {
	case n > 3 && string(b[n-3:]) == "eed":
		if mGt0(b[:n-3]) {
			return b[:n-1], false
		}
		return b, false
	case n > 2 && string(b[n-2:]) == "ed":
		if hasVowel(b[:n-2]) {
			return b[:n-2], true
		}
		return b, false
	case n > 3 && string(b[n-3:]) == "ing":
		if hasVowel(b[:n-3]) {
			return b[:n-3], true
		}
	}
	return b, false
}

var step1b2Rules = []rule{{"at", "ate", always}, {"bl", "ble", always}, {"iz", "ize", always}}

var step2Rules = []rule{
	{"ational", "ate", mGt0Cond}, {"tional", "tion", mGt0Cond},
	{"enci", "ence", mGt0Cond}, {"anci", "ance", mGt0Cond},
	{"izer", "ize", mGt0Cond},
	{"logi", "log", mGt0Cond},
	{"bli", "ble", mGt0Cond}, {"alli", "al", mGt0Cond}, {"entli", "ent", mGt0Cond}, {"eli", "e", mGt0Cond}, {"ousli", "ous", mGt0Cond},
	{"ization", "ize", mGt0Cond}, {"ation", "ate", mGt0Cond}, {"ator", "ate", mGt0Cond},
	{"alism", "al", mGt0Cond}, {"iveness", "ive", mGt0Cond}, {"fulness", "ful", mGt0Cond}, {"ousness", "ous", mGt0Cond},
	{"aliti", "al", mGt0Cond}, {"iviti", "ive", mGt0Cond}, {"biliti", "ble", mGt0Cond},
}

var step3Rules = []rule{
	{"ical", "ic", mGt0Cond},
	{"ness", "", mGt0Cond},
	{"icate", "ic", mGt0Cond}, {"iciti", "ic", mGt0Cond},
	{"ful", "", mGt0Cond},
	{"ative", "", mGt0Cond},
	{"alize", "al", mGt0Cond},
}

var step4Rules = []rule{
	{"al", "", mGt1Cond},
	{"ance", "", mGt1Cond}, {"ence", "", mGt1Cond},
	{"er", "", mGt1Cond},
	{"ic", "", mGt1Cond},
	{"able", "", mGt1Cond}, {"ible", "", mGt1Cond},
	{"ant", "", mGt1Cond}, {"ement", "", mGt1Cond}, {"ment", "", mGt1Cond}, {"ent", "", mGt1Cond},
	{"ion", "", ionCond}, {"ou", "", mGt1Cond},
	{"ism", "", mGt1Cond},
	{"ate", "", mGt1Cond}, {"iti", "", mGt1Cond},
	{"ous", "", mGt1Cond},
	{"ive", "", mGt1Cond},
	{"ize", "", mGt1Cond},
}

func isVowel(c byte, yIsVowel bool) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	case 'y':
		return yIsVowel
	}
	return false
}

// gobbleVC returns the index after the first vowel-consonant sequence of s (0
// when there is none); prevCons says whether the byte before s is a consonant.
func gobbleVC(s []byte, prevCons bool) int {
	cons := prevCons
	i := 0
	for ; i < len(s); i++ {
		if cons = !isVowel(s[i], cons); !cons {
			break
		}
	}
	for i++; i < len(s); i++ {
		if cons = !isVowel(s[i], cons); cons {
			return i + 1
		}
	}
	return 0
}

// mGt0 is Porter's m > 0, mGt1 m > 1 and mEq1 m = 1, m counting the VC
// sequences of the stem.
func mGt0(s []byte) bool { return gobbleVC(s, false) != 0 }

func mGt1(s []byte) bool {
	n := gobbleVC(s, false)
	return n != 0 && gobbleVC(s[n:], true) != 0
}

func mEq1(s []byte) bool {
	n := gobbleVC(s, false)
	return n != 0 && gobbleVC(s[n:], true) == 0
}

// mGt1SorT is step 4's condition for -ion: m > 1 and the stem ends in s or t.
func mGt1SorT(s []byte) bool {
	return len(s) > 0 && (s[len(s)-1] == 's' || s[len(s)-1] == 't') && mGt1(s)
}

// oStar is Porter's *o: the stem ends consonant-vowel-consonant, the last
// consonant not w, x or y.
func oStar(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	switch s[len(s)-1] {
	case 'w', 'x', 'y':
		return false
	}
	mask, cons := 0, false
	for _, c := range s {
		cons = !isVowel(c, cons)
		mask <<= 1
		if cons {
			mask |= 1
		}
	}
	return mask&7 == 5
}

// hasVowel is Porter's *v*: a, e, i, o or u anywhere, or y after the first byte.
func hasVowel(s []byte) bool {
	for i, c := range s {
		if isVowel(c, i > 0) {
			return true
		}
	}
	return false
}
