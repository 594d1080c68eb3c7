package retrieval

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Corpus association and set-based ranking for offline recall.
//
// A query word the store knows but rarely uses (a word said only in passing about a
// topic) is expanded into the words it co-occurs with in the store's own text:
// pointwise mutual information over the chunks that contain it. Those topical words
// find the items that talk about the same thing in other words. Associations are
// computed lazily from the chunks at query time and cached per store generation, so
// no schema change and no ingest step is needed.

// wterm is a weighted term of a set-ranking group: a folded word or phrase.
type wterm struct {
	phrase string
	stems  []string
	weight float64
}

// assocKey identifies a cached association list: the store generation, the
// word, and the parameters the list is computed with (two engines with different
// parameters may share a store).
type assocKey struct {
	gen  index.Generation
	stem string
	with assocParams
}

// assocParams are the parameters computeAssociates reads.
type assocParams struct {
	sample, terms int
}

var assocCache = struct {
	sync.Mutex
	m map[assocKey][]wterm
}{m: map[assocKey][]wterm{}}

// associates returns the words that co-occur with word in the store markedly more
// often than chance, best first, weights normalised to 1 for the best. Words whose
// stems are in skip are left out.
func associates(ctx context.Context, p *Params, st index.Backend, word string, skip map[string]bool) ([]wterm, error) {
	key := assocKey{st.Stats().Generation, analysis.Stem(word), assocParams{p.AssocSample, p.MaxGroupTerms}}
	assocCache.Lock()
	cached, ok := assocCache.m[key]
	assocCache.Unlock()
	if !ok {
		var err error
		if cached, err = computeAssociates(ctx, p, st, word); err != nil {
			return nil, err
		}
		assocCache.Lock()
		if len(assocCache.m) > 20000 {
			assocCache.m = map[assocKey][]wterm{}
		}
		assocCache.m[key] = cached
		assocCache.Unlock()
	}
	out := make([]wterm, 0, len(cached))
	for _, t := range cached {
		if !skip[t.stems[0]] {
			out = append(out, t)
		}
	}
	return out, nil
}

// computeAssociates reads the AssocSample best chunks saying word and keeps the
// words they say markedly more often than the store does (PMI).
func computeAssociates(ctx context.Context, p *Params, st index.Backend, word string) ([]wterm, error) {
	own := analysis.Stem(word)
	texts, err := st.Sample(ctx, index.Query{Op: index.All, Phrases: []index.Phrase{strings.Fields(word)}}, p.AssocSample)
	if err != nil {
		return nil, fmt.Errorf("association sample for %q: %w", word, err)
	}
	type cnt struct {
		word string
		docs int
	}
	counts := map[string]*cnt{}
	memo := map[string]string{}
	m := 0
	for _, text := range texts {
		m++
		seen := map[string]bool{}
		for _, w := range analysis.Words(text) {
			if len(w) < 3 || analysis.Stopwords[w] || IsDigits(w) {
				continue
			}
			sm, ok := memo[w]
			if !ok {
				sm = analysis.Stem(w)
				memo[w] = sm
			}
			if sm == own || seen[sm] {
				continue
			}
			seen[sm] = true
			c := counts[sm]
			if c == nil {
				c = &cnt{word: w}
				counts[sm] = c
			}
			c.docs++
		}
	}
	if m == 0 {
		return nil, nil
	}
	var out []wterm
	for sm, c := range counts {
		df, err := st.DocFreq(ctx, c.word)
		if err != nil {
			return nil, err
		}
		if df == 0 {
			continue
		}
		// Associated: said in the sample more often than in the store (PMI > 0).
		pmi := math.Log(float64(c.docs) / float64(m) * float64(st.Stats().Chunks) / float64(df))
		if pmi <= 0 {
			continue
		}
		out = append(out, wterm{phrase: c.word, stems: []string{sm}, weight: float64(c.docs) / float64(m) * pmi})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].weight != out[j].weight {
			return out[i].weight > out[j].weight
		}
		return out[i].phrase < out[j].phrase
	})
	if len(out) > p.MaxGroupTerms {
		out = out[:p.MaxGroupTerms]
	}
	if len(out) > 0 {
		top := out[0].weight
		for i := range out {
			out[i].weight /= top
		}
	}
	return out, nil
}

// setRank ranks chunks by weighted coordination over groups, computed in sets of
// rowids (no chunk text is read): a chunk scores, per group, the weight of its best
// term relative to the group's best, summed over groups. Chunks in skip are left
// out. It returns up to limit hits, best first, Score set.
func setRank(ctx context.Context, p *Params, st index.Backend, groups [][]wterm, skip map[index.Key]bool, limit int) ([]abi.ChunkHit, error) {
	// One store call reads every term's rowids: term i's rows come tagged i.
	var qs []index.Query
	var rel []float64 // term weight relative to its group's best
	var grp []int
	for gi, g := range groups {
		top := 0.0
		for _, t := range g {
			top = math.Max(top, t.weight)
		}
		if top == 0 {
			continue
		}
		for _, t := range g {
			qs = append(qs, index.Query{Op: index.All, Phrases: []index.Phrase{strings.Fields(t.phrase)}})
			rel = append(rel, t.weight/top)
			grp = append(grp, gi)
		}
	}
	if len(qs) == 0 {
		return nil, nil
	}
	hs, err := st.Postings(ctx, qs, p.SetRankRows)
	if err != nil {
		return nil, fmt.Errorf("set ranking: %w", err)
	}
	mask := make(map[index.Key]uint64, len(hs)) // rowid → groups with a term in it
	for _, h := range hs {
		mask[h.Key] |= 1 << (uint(grp[h.Query]) % 64)
	}
	best := make(map[[2]int64]float64, len(hs)) // (group, key) → best relative weight
	for _, h := range hs {
		if skip[h.Key] {
			continue
		}
		k := [2]int64{int64(grp[h.Query]), int64(h.Key)}
		best[k] = math.Max(best[k], rel[h.Query])
	}
	score := make(map[index.Key]float64, len(mask))
	for k, v := range best {
		score[index.Key(k[1])] += v
	}
	type sc struct {
		id index.Key
		v  float64
	}
	all := make([]sc, 0, len(score))
	for id, v := range score {
		all = append(all, sc{id, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].id < all[j].id
	})
	if len(all) > limit {
		all = all[:limit]
	}
	if len(all) == 0 {
		return nil, nil
	}
	ids := make([]index.Key, len(all))
	for i, x := range all {
		ids[i] = x.id
	}
	byID, err := st.Hits(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]abi.ChunkHit, 0, len(ids))
	for _, rid := range ids {
		if h, ok := byID[rid]; ok {
			c := h.ChunkHit
			c.Snippet = analysis.PlainSnippet(prefix(h.Text, keyCut), nil)
			c.Score = score[rid]
			out = append(out, c)
		}
	}
	return out, nil
}

// associationGroups builds, for each query word's group (the word and its lexical
// expansions), the words the store associates with the query word itself. Only
// the query word is expanded (first in its group when the store has it):
// associates of WordNet expansions were measured to add noise. It also returns
// the phrases of the words it expanded.
func associationGroups(ctx context.Context, p *Params, st index.Backend, groups []termGroup, skip map[string]bool) ([][]wterm, []index.Phrase, error) {
	var out [][]wterm
	var members []index.Phrase
	for _, g := range groups {
		if len(g.terms) == 0 {
			continue
		}
		t := g.terms[0]
		if len(t.stems) != 1 || !skip[t.stems[0]] {
			continue
		}
		top := 0.0
		for _, x := range g.terms {
			top = math.Max(top, x.weight)
		}
		as, err := associates(ctx, p, st, t.phrase, skip)
		if err != nil {
			return nil, nil, err
		}
		if len(as) == 0 {
			continue
		}
		members = append(members, strings.Fields(t.phrase))
		// One associate per stem (associates gives each stem once), weighted by the
		// query word's weight in its group, best first.
		mw := t.weight / top
		ws := make([]wterm, 0, len(as))
		for _, a := range as {
			a.weight *= mw
			ws = append(ws, a)
		}
		sort.Slice(ws, func(i, j int) bool {
			if ws[i].weight != ws[j].weight {
				return ws[i].weight > ws[j].weight
			}
			return ws[i].phrase < ws[j].phrase
		})
		out = append(out, ws)
	}
	return out, members, nil
}

// keySet returns the keys of the chunks matching q (at most
// MaxSkipRows).
func keySet(ctx context.Context, p *Params, st index.Backend, q index.Query) (map[index.Key]bool, error) {
	ps, err := st.Postings(ctx, []index.Query{q}, p.MaxSkipRows)
	if err != nil {
		return nil, err
	}
	set := make(map[index.Key]bool, len(ps))
	for _, p := range ps {
		set[p.Key] = true
	}
	return set, nil
}
