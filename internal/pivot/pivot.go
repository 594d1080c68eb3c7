// Package pivot derives English paraphrases from translating dictionaries by
// bilingual pivoting: two English words are paraphrases when they translate to the
// same words of another language ("certificate" and "cert" both give German
// "Zertifikat"; "guideline" and "policy" both give "Richtlinie"). It is how
// paraphrase databases such as PPDB are built, here from dictionaries instead of
// aligned text. Recall uses the table beside WordNet: the two find different pairs.
//
// The dictionaries are read at ingest from the user's machine (Debian's
// dict-freedict-eng-deu and dict-freedict-deu-eng by default) and never shipped in
// the binary: FreeDict's dictionaries are GPL-licensed.
package pivot

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Paraphrase is one English paraphrase of a word with a weight in (0, 1]: 1 for the
// word's best-supported paraphrase, the others relative to it.
type Paraphrase struct {
	Term   string
	Weight float64
}

// Entry is one English word or two-word compound and its paraphrases, best first.
type Entry struct {
	Word        string
	Paraphrases []Paraphrase
}

// Tuning of the table, measured on the generated corpus's paraphrase queries (seeds
// 1-5; see the memory tree issue's closing note).
const (
	// maxFanOut drops foreign words with more English translations than this
	// ("Abschluss" has dozens): they link unrelated senses.
	maxFanOut = 30
	// minScore is the least pivot probability a paraphrase needs.
	minScore = 0.04
	// maxParaphrases is how many paraphrases a word keeps.
	maxParaphrases = 5
)

// Version names the table Build makes from given dictionaries: raise it whenever
// the algorithm or its tuning changes, so that tables cached by it (one per
// machine, see internal/ingest's Paraphrases) are rebuilt.
const Version = "pivot-1"

// english is the English vocabulary kept: words and two-word compounds of letters,
// hyphens and apostrophes ("fender-bender", "blood test").
var english = regexp.MustCompile(`^[a-z][a-z'-]*( [a-z][a-z'-]*)?$`)

// Build pivots through every dictionary that translates English to or from another
// language; dictionaries of the same other language are used together. A word's
// score for a paraphrase p is the probability of reaching p by a random step to one
// of the word's translations (those with at most maxFanOut English translations)
// and a random step back to English. Entries are sorted by word.
//
// Build needs the dictionaries read whole; a Builder reads them one entry at a
// time and gives the same table.
func Build(ctx context.Context, dicts ...*Dictionary) ([]Entry, error) {
	b := NewBuilder()
	for _, d := range dicts {
		if !b.begin(d.From, d.To) {
			continue
		}
		// Sorted, so that the order of floating-point sums does not depend on
		// map order: the table is the same on every run.
		heads := slices.Sorted(maps.Keys(d.Entries))
		for n, head := range heads {
			if n%8192 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			b.add(0, []byte(head), d.Entries[head])
		}
	}
	return b.Finish(ctx)
}

// Builder builds the table of Build from dictionaries fed to it one entry at a
// time, keeping only interned words and their (English, foreign) pairs.
type Builder struct {
	eID    map[string]int32
	eWords []string
	fID    map[string]int32
	fWords []string
	// fFirst is where each foreign word was first met in the order Build reads
	// (dictionary, headword, index line, place among the translations): ids
	// are renumbered in that order at Finish, so that sums are added in the same
	// order, to the same last bit, however the entries came in.
	fFirst []place
	pairs  []uint64 // english id << 32 | foreign id
	key    []byte

	dict    int32 // the ordinal of the current dictionary, from 1
	other   string
	enHead  bool
	nextPos []int32 // per English headword id, translations seen so far in this dictionary
}

// place is where a foreign word is first met; head is an English word's id when
// the dictionary's headwords are English, else unused (the foreign word is the
// headword).
type place struct {
	dict, head, line, pos int32
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{eID: map[string]int32{}, fID: map[string]int32{}}
}

// ReadDictionary adds the dictd database at base (a path without extension whose
// name ends in a language pair, "freedict-eng-deu"), reading it one entry at a
// time. A dictionary that does not translate English to or from another language
// is left out. Errors name the file and, for a bad index line, its number; after
// one, the Builder holds part of the dictionary and is not to be finished.
func (b *Builder) ReadDictionary(ctx context.Context, base string) error {
	_, from, to, err := parseName(base)
	if err != nil {
		return err
	}
	if !b.begin(from, to) {
		if _, _, ok := Files(base); !ok {
			return fmt.Errorf("dictionary %s: needs %s.index and %s.dict.dz (or .dict)", base, base, base)
		}
		return nil
	}
	return scan(ctx, base, b.add)
}

// begin starts a dictionary from language from to language to, and says whether
// it is used.
func (b *Builder) begin(from, to string) bool {
	switch {
	case from == "eng" && to != "eng":
		b.other, b.enHead = to, true
	case to == "eng" && from != "eng":
		b.other, b.enHead = from, false
	default:
		return false
	}
	b.dict++
	b.nextPos = b.nextPos[:0]
	return true
}

// englishID returns the id of English word w, adding it; ok is false when w is
// not in the English vocabulary kept.
func englishID[T ~string | ~[]byte](b *Builder, w T) (int32, bool) {
	if id, ok := b.eID[string(w)]; ok {
		return id, true
	}
	s := string(w)
	if !english.MatchString(s) {
		return 0, false
	}
	id := int32(len(b.eWords))
	b.eID[s] = id
	b.eWords = append(b.eWords, s)
	return id, true
}

// foreignID returns the id of foreign word w of the current dictionary's other
// language, adding it with at as where it was met (or moving its first place
// earlier).
func foreignID[T ~string | ~[]byte](b *Builder, w T, at place) int32 {
	b.key = append(append(append(b.key[:0], b.other...), ':'), w...)
	if id, ok := b.fID[string(b.key)]; ok {
		if b.before(at, b.fFirst[id], id) {
			b.fFirst[id] = at
		}
		return id
	}
	id := int32(len(b.fWords))
	k := string(b.key)
	b.fID[k] = id
	b.fWords = append(b.fWords, k)
	b.fFirst = append(b.fFirst, at)
	return id
}

// before says whether place x comes before place y (of foreign word id y) in the
// order Build reads entries: by dictionary, then headword, line, translation.
func (b *Builder) before(x, y place, yID int32) bool {
	return b.comparePlaces(x, -1, y, yID) < 0
}

// comparePlaces orders two places; xID and yID are the foreign words' ids (-1 for
// one not yet added: its headword is then in b.key).
func (b *Builder) comparePlaces(x place, xID int32, y place, yID int32) int {
	if c := cmp.Compare(x.dict, y.dict); c != 0 {
		return c
	}
	var hx, hy string
	if x.head >= 0 {
		hx, hy = b.eWords[x.head], b.eWords[y.head]
	} else {
		// The headword is the foreign word; all of one dictionary's foreign
		// words have the same language prefix.
		hx, hy = b.foreignWord(xID), b.foreignWord(yID)
	}
	if c := strings.Compare(hx, hy); c != 0 {
		return c
	}
	if c := cmp.Compare(x.line, y.line); c != 0 {
		return c
	}
	return cmp.Compare(x.pos, y.pos)
}

func (b *Builder) foreignWord(id int32) string {
	if id < 0 {
		return string(b.key)
	}
	return b.fWords[id]
}

// add adds one dictionary entry: its index line, headword and translations.
func (b *Builder) add(line int32, head []byte, ts []string) {
	if b.enHead {
		e, ok := englishID(b, head)
		if !ok {
			return
		}
		for int(e) >= len(b.nextPos) {
			b.nextPos = append(b.nextPos, 0)
		}
		for _, t := range ts {
			at := place{dict: b.dict, head: e, line: line, pos: b.nextPos[e]}
			b.nextPos[e]++
			b.pairs = append(b.pairs, uint64(e)<<32|uint64(foreignID(b, t, at)))
		}
		return
	}
	f := int32(-1)
	for _, t := range ts {
		e, ok := englishID(b, t)
		if !ok {
			continue
		}
		if f < 0 {
			f = foreignID(b, head, place{dict: b.dict, head: -1})
		}
		b.pairs = append(b.pairs, uint64(e)<<32|uint64(f))
	}
}

// Finish returns the table of everything added. The Builder is spent.
func (b *Builder) Finish(ctx context.Context) ([]Entry, error) {
	if b.dict == 0 {
		return nil, fmt.Errorf("pivot: no dictionary translates English to or from another language")
	}
	// Renumber the foreign words in the order Build first meets them.
	order := make([]int32, len(b.fWords))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return b.comparePlaces(b.fFirst[x], x, b.fFirst[y], y) })
	renum := make([]int32, len(order))
	for n, id := range order {
		renum[id] = int32(n)
	}
	nForeign := len(order)
	pairs := b.pairs
	for i, p := range pairs {
		pairs[i] = p&^0xffffffff | uint64(renum[int32(p)])
	}
	eWords := b.eWords
	*b = Builder{}
	slices.Sort(pairs)
	pairs = slices.Compact(pairs)
	e2f := csr(len(eWords), pairs, func(p uint64) (int32, int32) { return int32(p >> 32), int32(p) })
	f2e := csr(nForeign, pairs, func(p uint64) (int32, int32) { return int32(p), int32(p >> 32) })

	// kept[e] is how many of e's translations pass maxFanOut.
	kept := make([]int32, len(eWords))
	for e := range eWords {
		for _, f := range e2f.row(int32(e)) {
			if len(f2e.row(f)) <= maxFanOut {
				kept[e]++
			}
		}
	}
	score := make([]float64, len(eWords))
	back := make([]float64, len(eWords)) // the reverse probability, to break ties
	var touched []int32
	var out []Entry
	for e := range eWords {
		if e%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var fs []int32
		for _, f := range e2f.row(int32(e)) {
			if n := len(f2e.row(f)); n <= maxFanOut {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		for _, f := range fs {
			es := f2e.row(f)
			for _, p := range es {
				if p == int32(e) {
					continue
				}
				if score[p] == 0 {
					touched = append(touched, p)
				}
				score[p] += 1 / float64(len(fs)) / float64(len(es))
				back[p] += 1 / float64(kept[p]) / float64(len(es))
			}
		}
		var ps []Paraphrase
		var rev []float64
		for _, p := range touched {
			if score[p] >= minScore {
				ps = append(ps, Paraphrase{Term: eWords[p], Weight: score[p]})
				rev = append(rev, back[p])
			}
			score[p], back[p] = 0, 0
		}
		touched = touched[:0]
		if len(ps) == 0 {
			continue
		}
		// Equal scores are common (every paraphrase through one foreign word ties):
		// the one more likely to pivot back to the word comes first.
		sort.Sort(byScore{ps, rev})
		if len(ps) > maxParaphrases {
			n := maxParaphrases
			for n < len(ps) && n < 2*maxParaphrases && ps[n].Weight == ps[maxParaphrases-1].Weight {
				n++
			}
			ps = ps[:n]
		}
		top := ps[0].Weight
		for i := range ps {
			ps[i].Weight /= top
		}
		out = append(out, Entry{Word: eWords[e], Paraphrases: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Word < out[j].Word })
	return out, nil
}

// byScore orders paraphrases by score, then by reverse probability, then by term.
type byScore struct {
	ps  []Paraphrase
	rev []float64
}

func (b byScore) Len() int { return len(b.ps) }
func (b byScore) Swap(i, j int) {
	b.ps[i], b.ps[j] = b.ps[j], b.ps[i]
	b.rev[i], b.rev[j] = b.rev[j], b.rev[i]
}
func (b byScore) Less(i, j int) bool {
	if b.ps[i].Weight != b.ps[j].Weight {
		return b.ps[i].Weight > b.ps[j].Weight
	}
	if b.rev[i] != b.rev[j] {
		return b.rev[i] > b.rev[j]
	}
	return b.ps[i].Term < b.ps[j].Term
}

// adjacency is a compressed sparse row graph: the neighbours of node i are
// to[start[i]:start[i+1]].
type adjacency struct {
	start []int32
	to    []int32
}

func (a adjacency) row(i int32) []int32 { return a.to[a.start[i]:a.start[i+1]] }

// csr builds the adjacency of n nodes from edges split by split into (from, to).
func csr(n int, edges []uint64, split func(uint64) (int32, int32)) adjacency {
	a := adjacency{start: make([]int32, n+1), to: make([]int32, len(edges))}
	for _, e := range edges {
		from, _ := split(e)
		a.start[from+1]++
	}
	for i := 1; i <= n; i++ {
		a.start[i] += a.start[i-1]
	}
	next := slices.Clone(a.start[:n])
	for _, e := range edges {
		from, to := split(e)
		a.to[next[from]] = to
		next[from]++
	}
	return a
}
