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
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
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

// english is the English vocabulary kept: words and two-word compounds of letters,
// hyphens and apostrophes ("fender-bender", "blood test").
var english = regexp.MustCompile(`^[a-z][a-z'-]*( [a-z][a-z'-]*)?$`)

// Build pivots through every dictionary that translates English to or from another
// language; dictionaries of the same other language are used together. A word's
// score for a paraphrase p is the probability of reaching p by a random step to one
// of the word's translations (those with at most maxFanOut English translations)
// and a random step back to English. Entries are sorted by word.
func Build(ctx context.Context, dicts ...*Dictionary) ([]Entry, error) {
	eID := map[string]int32{}
	var eWords []string
	fID := map[string]int32{}
	var pairs []uint64 // english id << 32 | foreign id
	idOf := func(m map[string]int32, s string, list *[]string) int32 {
		if id, ok := m[s]; ok {
			return id
		}
		id := int32(len(m))
		m[s] = id
		if list != nil {
			*list = append(*list, s)
		}
		return id
	}
	used := 0
	for _, d := range dicts {
		var other string
		enHead := false
		switch {
		case d.From == "eng" && d.To != "eng":
			other, enHead = d.To, true
		case d.To == "eng" && d.From != "eng":
			other = d.From
		default:
			continue
		}
		used++
		// Sorted, so that ids, and with them the order of floating-point sums, do
		// not depend on map order: the table is the same on every run.
		heads := slices.Sorted(maps.Keys(d.Entries))
		for n, head := range heads {
			ts := d.Entries[head]
			if n%8192 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			if enHead {
				if !english.MatchString(head) {
					continue
				}
				e := idOf(eID, head, &eWords)
				for _, t := range ts {
					pairs = append(pairs, uint64(e)<<32|uint64(idOf(fID, other+":"+t, nil)))
				}
				continue
			}
			f := idOf(fID, other+":"+head, nil)
			for _, t := range ts {
				if english.MatchString(t) {
					pairs = append(pairs, uint64(idOf(eID, t, &eWords))<<32|uint64(f))
				}
			}
		}
	}
	if used == 0 {
		return nil, fmt.Errorf("pivot: no dictionary translates English to or from another language")
	}
	slices.Sort(pairs)
	pairs = slices.Compact(pairs)
	e2f := csr(len(eWords), pairs, func(p uint64) (int32, int32) { return int32(p >> 32), int32(p) })
	f2e := csr(len(fID), pairs, func(p uint64) (int32, int32) { return int32(p), int32(p >> 32) })

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
