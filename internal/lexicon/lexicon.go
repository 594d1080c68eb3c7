// Package lexicon expands a query word into related words (synonyms and near hypernyms) from an
// embedded WordNet 3.0 table, so recall can match paraphrases offline.
//
// The table (table.bin.gz) is compiled from the Debian package wordnet-base by `go generate`
// (see gen/ and wnbuild/); it is derived from WordNet 3.0, Copyright 2006 by Princeton University,
// used under the WordNet licence reproduced in WORDNET-LICENSE beside this file.
package lexicon

//go:generate go run ./gen -wordnet /usr/share/wordnet -out table.bin.gz

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/openhuman/openhuman-core/internal/lexicon/wnbuild"
	"github.com/openhuman/openhuman-core/internal/pagehint"
)

//go:embed table.bin.gz
var tableGz []byte

// Related is one word related to the expanded word, with a weight in (0, 1]: 1 for the first
// sense's synonyms, down to 0.5 for rare senses, at most 0.4 for hypernyms and other relations.
type Related struct {
	Term   string // lowercase; the words of a collocation are joined by spaces
	Weight float32
}

// MaxRelated caps the list Expand returns.
const MaxRelated = 24

// Weights of the relations relative to the sense's synonym weight.
const (
	hypernymFactor = 0.4
	similarFactor  = 0.4
	alsoSeeFactor  = 0.3
	derivedFactor  = 0.3
	// otherBaseFactor damps the senses of a morphological base when the word is itself a lemma
	// ("meeting" the noun is preferred over "meet" the verb).
	otherBaseFactor = 0.8
)

// table is the decoded lexicon: packed arrays indexed by word and synset ids
// (packed.go says how and why).
type table struct {
	words   string  // concatenated lemmas
	wordOff offsets // word -> words[wordOff.at(w):wordOff.at(w+1)]
	synPos  []uint8
	members lists // synset -> its member words
	rels    lists // synset -> its relations (target<<2 | kind)
	senses  lists // word -> its synsets
	derived lists // word -> its derivationally related words
	excForm string
	excOff  []uint32 // exception entry -> excForm[excOff[e]:excOff[e+1]]
	excPos  []uint8
	excBOff []uint32 // exception entry -> excBase[excBOff[e]:excBOff[e+1]]
	excBase []uint32
}

var (
	loadOnce sync.Once
	loaded   *table
	loadErr  error
)

// get decodes the embedded table once. A table that fails to decode is a build defect: it is
// logged once and every lookup then returns nothing.
func get() *table {
	loadOnce.Do(func() {
		loaded, loadErr = decode(tableGz)
		// The compressed table is read once: its pages leave the resident set.
		pagehint.Release(tableGz)
		if loadErr != nil {
			slog.Error("lexicon: embedded WordNet table unusable; recall runs without expansion", "err", loadErr)
		}
	})
	return loaded
}

// Err reports whether the embedded table decoded; nil when expansion is available.
func Err() error {
	get()
	return loadErr
}

type reader struct {
	r   *bytes.Reader
	err error
}

func (r *reader) uv() uint32 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r.r)
	if err != nil {
		r.err = fmt.Errorf("truncated varint at byte %d: %w", r.r.Size()-int64(r.r.Len()), err)
		return 0
	}
	if v > 1<<31 {
		r.err = fmt.Errorf("value %d out of range at byte %d", v, r.r.Size()-int64(r.r.Len()))
		return 0
	}
	return uint32(v)
}

// count reads a length and checks it against the bytes left (each element takes ≥ 1 byte).
func (r *reader) count() int {
	n := int(r.uv())
	if r.err == nil && n > r.r.Len() {
		r.err = fmt.Errorf("count %d exceeds the %d bytes left", n, r.r.Len())
		return 0
	}
	return n
}

// frontCoded reads n front-coded strings into one blob plus offsets; after each string,
// each(i) may read per-entry fields.
func (r *reader) frontCoded(n int, each func(i int)) (string, []uint32) {
	blob := make([]byte, 0, 4*n)
	off := make([]uint32, 1, n+1)
	for i := 0; i < n && r.err == nil; i++ {
		shared, suffix := int(r.uv()), int(r.uv())
		if r.err != nil {
			break
		}
		start := len(blob)
		prevStart := 0
		if i > 0 {
			prevStart = int(off[i-1])
		}
		if shared > start-prevStart || suffix > r.r.Len() {
			r.err = fmt.Errorf("string %d: bad front coding (%d shared, %d new)", i, shared, suffix)
			break
		}
		blob = append(blob, blob[prevStart:prevStart+shared]...)
		blob = append(blob, make([]byte, suffix)...)
		if _, err := io.ReadFull(r.r, blob[start+shared:]); err != nil {
			r.err = fmt.Errorf("string %d: %w", i, err)
			break
		}
		off = append(off, uint32(len(blob)))
		if each != nil {
			each(i)
		}
	}
	return string(blob), off
}

// ids reads one count-prefixed list of ids below limit, appending to dst.
func (r *reader) ids(dst []uint32, limit int, what string) []uint32 {
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		v := r.uv()
		if r.err == nil && int(v) >= limit {
			r.err = fmt.Errorf("%s id %d out of range (%d)", what, v, limit)
		}
		dst = append(dst, v)
	}
	return dst
}

// list reads one count-prefixed list of ids below limit as the next entry of l.
func (r *reader) list(l *lists, limit int, what string) {
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		v := r.uv()
		if r.err == nil && (int(v) >= limit || v > maxID) {
			r.err = fmt.Errorf("%s id %d out of range (%d)", what, v, min(limit, maxID+1))
		}
		l.ids.push(v)
	}
	r.check(l.end())
}

// check keeps the first error.
func (r *reader) check(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
}

func decode(gz []byte) (*table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("lexicon table: %w (regenerate with go generate ./internal/lexicon)", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("lexicon table: decompress: %w (regenerate with go generate ./internal/lexicon)", err)
	}
	if !bytes.HasPrefix(raw, []byte(wnbuild.Magic)) {
		return nil, errors.New("lexicon table: bad magic (regenerate with go generate ./internal/lexicon)")
	}
	r := &reader{r: bytes.NewReader(raw[len(wnbuild.Magic):])}
	t := &table{}
	nw := r.count()
	var wordOff []uint32
	t.words, wordOff = r.frontCoded(nw, nil)
	t.wordOff = newOffsets(len(wordOff))
	for _, o := range wordOff {
		r.check(t.wordOff.push(o))
	}
	ns := r.count()
	t.synPos = make([]uint8, 0, ns)
	t.members, t.rels = newLists(ns), newLists(ns)
	for i := 0; i < ns && r.err == nil; i++ {
		t.synPos = append(t.synPos, uint8(r.uv()&3))
		r.list(&t.members, nw, "member word")
		n := r.count()
		for j := 0; j < n && r.err == nil; j++ {
			v := r.uv()
			if int(v>>2) >= ns || v > maxID {
				r.err = fmt.Errorf("synset %d: relation target %d out of range", i, v>>2)
			}
			t.rels.ids.push(v)
		}
		r.check(t.rels.end())
	}
	t.senses = newLists(nw)
	for i := 0; i < nw && r.err == nil; i++ {
		r.list(&t.senses, ns, "sense synset")
	}
	t.derived = newLists(nw)
	for i := 0; i < nw && r.err == nil; i++ {
		r.list(&t.derived, nw, "derived word")
	}
	for _, l := range []*lists{&t.members, &t.rels, &t.senses, &t.derived} {
		l.clip()
	}
	ne := r.count()
	t.excBOff = []uint32{0}
	t.excForm, t.excOff = r.frontCoded(ne, func(int) {
		t.excPos = append(t.excPos, uint8(r.uv()&3))
		t.excBase = r.ids(t.excBase, nw, "exception base")
		t.excBOff = append(t.excBOff, uint32(len(t.excBase)))
	})
	if r.err != nil {
		return nil, fmt.Errorf("lexicon table corrupt: %w (regenerate with go generate ./internal/lexicon)", r.err)
	}
	if r.r.Len() != 0 {
		return nil, fmt.Errorf("lexicon table corrupt: %d trailing bytes (regenerate with go generate ./internal/lexicon)", r.r.Len())
	}
	return t, nil
}

func (t *table) word(i uint32) string { return t.words[t.wordOff.at(i):t.wordOff.at(i+1)] }

// lookup returns the id of lemma w.
func (t *table) lookup(w string) (uint32, bool) {
	n := t.wordOff.entries()
	i := sort.Search(n, func(i int) bool { return t.word(uint32(i)) >= w })
	if i < n && t.word(uint32(i)) == w {
		return uint32(i), true
	}
	return 0, false
}

// hasPOS reports whether word id w has a sense with part of speech p.
func (t *table) hasPOS(w uint32, p uint8) bool {
	for s := range t.senses.of(w) {
		if t.synPos[s] == p {
			return true
		}
	}
	return false
}

// Detachment rules of WordNet's morphy, per part of speech (suffix, replacement).
var detach = [4][][2]string{
	{{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}},
	{{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
	{{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}},
	nil,
}

// bases returns the lemma ids for w (already normalised), the word itself first when it is a lemma.
func (t *table) bases(w string) []uint32 {
	var out []uint32
	add := func(id uint32) {
		for _, o := range out {
			if o == id {
				return
			}
		}
		out = append(out, id)
	}
	if id, ok := t.lookup(w); ok {
		add(id)
	}
	// Exceptions (all parts of speech).
	ne := len(t.excOff) - 1
	i := sort.Search(ne, func(i int) bool { return t.excForm[t.excOff[i]:t.excOff[i+1]] >= w })
	for ; i < ne && t.excForm[t.excOff[i]:t.excOff[i+1]] == w; i++ {
		for _, b := range t.excBase[t.excBOff[i]:t.excBOff[i+1]] {
			add(b)
		}
	}
	for p, rules := range detach {
		for _, r := range rules {
			if !strings.HasSuffix(w, r[0]) || len(w) <= len(r[0]) {
				continue
			}
			cand := w[:len(w)-len(r[0])] + r[1]
			if id, ok := t.lookup(cand); ok && t.hasPOS(id, uint8(p)) {
				add(id)
			}
		}
	}
	return out
}

// normalize lowercases word, trims it and joins the words of a phrase with '_'.
func normalize(word string) string {
	return strings.Join(strings.Fields(strings.ToLower(word)), "_")
}

// Base returns the morphological base forms (WordNet lemmas) of word: "cars" → ["car"],
// "went" → ["go"]; the word itself comes first when it is a lemma. Collocations are returned
// with spaces. Unknown words give nil.
func Base(word string) []string {
	t := get()
	w := normalize(word)
	if t == nil || w == "" {
		return nil
	}
	ids := t.bases(w)
	if len(ids) == 0 {
		return nil
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strings.ReplaceAll(t.word(id), "_", " ")
	}
	return out
}

// senseWeight is the synonym weight of the rank-th sense (0-based) within one part of speech.
func senseWeight(rank int) float32 {
	w := 1 - 0.1*float32(rank)
	if w < 0.5 {
		w = 0.5
	}
	return w
}

// Expand returns words related to word — a lowercase single word, or a WordNet collocation with
// its words joined by '_' or spaces — best first: synonyms from every sense (weighted by sense
// rank, 1.0 down to 0.5), then hypernyms one level up, "similar to" adjectives, "also see" and
// derivationally related forms (weight ≤ 0.4). Morphology applies first ("cars" expands like
// "car"); the word itself and its inflections are left out; terms are unique (the highest
// weight kept), sorted by weight then term, at most MaxRelated, multiword terms with spaces.
// A word WordNet does not know gives nil. Safe for concurrent use.
func Expand(word string) []Related {
	t, bases, excluded, selfLemma := lookup(word)
	if t == nil {
		return nil
	}
	best := map[uint32]float32{}
	add := func(id uint32, wt float32) {
		if excluded[id] {
			return
		}
		if wt > best[id] {
			best[id] = wt
		}
	}
	for bi, b := range bases {
		factor := float32(1)
		if selfLemma && bi > 0 {
			factor = otherBaseFactor
		}
		rank, lastPos := 0, uint8(255)
		for s := range t.senses.of(b) {
			if t.synPos[s] != lastPos {
				rank, lastPos = 0, t.synPos[s]
			}
			sw := factor * senseWeight(rank)
			rank++
			for m := range t.members.of(s) {
				add(m, sw)
			}
			for rel := range t.rels.of(s) {
				var f float32
				switch rel & 3 {
				case wnbuild.RelHypernym:
					f = hypernymFactor
				case wnbuild.RelSimilar:
					f = similarFactor
				case wnbuild.RelAlsoSee:
					f = alsoSeeFactor
				default:
					continue
				}
				tgt := rel >> 2
				for k, end := t.members.span(tgt); k < end; k++ {
					add(t.members.ids.at(k), sw*f)
				}
			}
		}
		for d := range t.derived.of(b) {
			add(d, factor*derivedFactor)
		}
	}
	if len(best) == 0 {
		return nil
	}
	out := relatedTerms(t, best, excluded)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Weight != out[j].Weight {
			return out[i].Weight > out[j].Weight
		}
		return out[i].Term < out[j].Term
	})
	if len(out) > MaxRelated {
		out = out[:MaxRelated]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func isInflection(t *table, term string, excluded map[uint32]bool) bool {
	// Only lemmas that differ morphologically from a base can be inflections; the lookup is cheap.
	for _, b := range t.bases(term) {
		if excluded[b] {
			return true
		}
	}
	return false
}

// Narrower returns the hyponyms one level down (more specific terms: "journalist" →
// "reporter", "excursion" → "field trip") of the first maxNarrowSenses senses of each
// part of speech of word, weighted narrowerFactor × the sense's weight; best first,
// unique, at most MaxRelated, multiword terms with spaces. Expand leaves them out
// because a general word's hyponyms are many; callers that rank terms by how the
// store uses them can add them. A word WordNet does not know gives nil. Safe for
// concurrent use.
func Narrower(word string) []Related {
	return walkFirstSenses(word, narrowerFactor, func(t *table, s uint32, sw float32, put func(syn uint32, wt float32)) {
		for rel := range t.rels.of(s) {
			if rel&3 == wnbuild.RelHyponym {
				put(rel>>2, sw)
			}
		}
	})
}

// Siblings returns the co-hyponyms of word (the other hyponyms of the hypernyms of its
// first maxNarrowSenses senses: "notebook computer" → "laptop") and its hypernyms two
// levels up ("fender-bender" → "accident"), weighted siblingFactor × the sense's
// weight; ordered and capped like Narrower. Safe for concurrent use.
func Siblings(word string) []Related {
	return walkFirstSenses(word, siblingFactor, func(t *table, s uint32, sw float32, put func(syn uint32, wt float32)) {
		for rel := range t.rels.of(s) {
			if rel&3 != wnbuild.RelHypernym {
				continue
			}
			up := rel >> 2
			for k, end := t.rels.span(up); k < end; k++ {
				switch r2 := t.rels.ids.at(k); r2 & 3 {
				case wnbuild.RelHyponym:
					if r2>>2 != s {
						put(r2>>2, sw)
					}
				case wnbuild.RelHypernym:
					put(r2>>2, sw)
				}
			}
		}
	})
}

// lookup finds word's base forms in the table (nil table when the table is
// unavailable or WordNet does not know the word), the set of those bases (to leave
// out of results), and whether the word is itself a dictionary entry.
func lookup(word string) (t *table, bases []uint32, excluded map[uint32]bool, selfLemma bool) {
	t = get()
	w := normalize(word)
	if t == nil || w == "" {
		return nil, nil, nil, false
	}
	bases = t.bases(w)
	if len(bases) == 0 {
		return nil, nil, nil, false
	}
	excluded = make(map[uint32]bool, len(bases))
	for _, b := range bases {
		excluded[b] = true
	}
	return t, bases, excluded, t.word(bases[0]) == w
}

// walkFirstSenses calls visit for the first maxNarrowSenses senses of each part of
// speech of each base form of word, with the sense's weight × factor (other base
// forms of a dictionary word count otherBaseFactor less); visit hands related synsets
// to put, which keeps each member term's best weight. The result is ranked and capped
// by rankRelated, without the word itself and its inflections.
func walkFirstSenses(word string, factor float32, visit func(t *table, s uint32, sw float32, put func(syn uint32, wt float32))) []Related {
	t, bases, excluded, selfLemma := lookup(word)
	if t == nil {
		return nil
	}
	best := map[uint32]float32{}
	put := func(syn uint32, wt float32) {
		for m := range t.members.of(syn) {
			if !excluded[m] && wt > best[m] {
				best[m] = wt
			}
		}
	}
	for bi, b := range bases {
		baseFactor := float32(1)
		if selfLemma && bi > 0 {
			baseFactor = otherBaseFactor
		}
		rank, lastPos := 0, uint8(255)
		for s := range t.senses.of(b) {
			if t.synPos[s] != lastPos {
				rank, lastPos = 0, t.synPos[s]
			}
			sw := baseFactor * senseWeight(rank) * factor
			rank++
			if rank > maxNarrowSenses {
				continue
			}
			visit(t, s, sw, put)
		}
	}
	return rankRelated(t, best, excluded)
}

// relatedTerms lists the terms of best with their weights, unordered, leaving
// out inflections of the word (a term whose bases include one of the word's
// bases, excluded).
func relatedTerms(t *table, best map[uint32]float32, excluded map[uint32]bool) []Related {
	out := make([]Related, 0, len(best))
	for id, wt := range best {
		term := t.word(id)
		if isInflection(t, term, excluded) {
			continue
		}
		out = append(out, Related{Term: strings.ReplaceAll(term, "_", " "), Weight: wt})
	}
	return out
}

// rankRelated orders terms by weight, then fewer words, then shorter, then
// alphabetically, drops inflections of the word, and caps the list at MaxNarrower.
func rankRelated(t *table, best map[uint32]float32, excluded map[uint32]bool) []Related {
	out := relatedTerms(t, best, excluded)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Weight != out[j].Weight {
			return out[i].Weight > out[j].Weight
		}
		ni, nj := strings.Count(out[i].Term, " "), strings.Count(out[j].Term, " ")
		if ni != nj {
			return ni < nj
		}
		if len(out[i].Term) != len(out[j].Term) {
			return len(out[i].Term) < len(out[j].Term)
		}
		return out[i].Term < out[j].Term
	})
	if len(out) > MaxNarrower {
		out = out[:MaxNarrower]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Narrower's parameters: the senses per part of speech whose hyponyms count, and
// their weight relative to the sense's synonyms.
const (
	// MaxNarrower caps the list Narrower returns.
	MaxNarrower     = 64
	maxNarrowSenses = 3
	narrowerFactor  = 0.4
	siblingFactor   = 0.25
)
