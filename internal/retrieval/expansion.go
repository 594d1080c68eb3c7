package retrieval

import (
	"context"
	"math"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// Expansion (recall's offline meaning signal): each query word with the related
// terms the expander (WordNet, the paraphrase table) gives and the store says.

// A termGroup is one query word with its related terms: a chunk gets credit for a
// group once, for its best term present (weighted coordination).
type termGroup struct {
	terms []gterm
}

type gterm struct {
	phrase string   // folded words joined by spaces (one word for single terms)
	stems  []string // stem of each word
	weight float64  // relation weight × idf
}

// dedupeTerms keeps the heaviest term of each phrase, in first-seen order.
func dedupeTerms(ts []gterm) []gterm {
	at := map[string]int{}
	out := ts[:0]
	for _, t := range ts {
		if i, ok := at[t.phrase]; ok {
			if t.weight > out[i].weight {
				out[i] = t
			}
			continue
		}
		at[t.phrase] = len(out)
		out = append(out, t)
	}
	return out
}

// newGTerm builds a group term for text (one word or a phrase) when every word is
// known to the store and not too common; ok is false otherwise.
func newGTerm(ctx context.Context, p *Params, st index.Backend, text string, w float64, maxShare float64) (gterm, bool, error) {
	ws := analysis.Words(text)
	if len(ws) == 0 || len(ws) > 3 {
		return gterm{}, false, nil
	}
	g := gterm{phrase: strings.Join(ws, " ")}
	minIDF := math.Inf(1)
	for _, x := range ws {
		sm := analysis.Stem(x)
		df, err := st.DocFreq(ctx, x)
		if err != nil {
			return g, false, err
		}
		if df == 0 {
			return g, false, nil
		}
		if len(ws) == 1 && float64(df) > maxShare*float64(st.Stats().Chunks) {
			return g, false, nil
		}
		minIDF = math.Min(minIDF, IDF(st.Stats().Chunks, df))
		g.stems = append(g.stems, sm)
	}
	if len(ws) > 1 {
		// A phrase weighs its rarest word's idf.
		if allStop(ws) {
			return g, false, nil
		}
	} else if analysis.Stopwords[ws[0]] {
		return g, false, nil
	}
	g.weight = w * minIDF
	return g, true, nil
}

func allStop(ws []string) bool {
	for _, w := range ws {
		if !analysis.Stopwords[w] {
			return false
		}
	}
	return true
}

// expansionGroups builds one group per content word of text: the word itself (when
// the store has it) plus its lexical expansions the store contains. When a word and
// the next one form a compound the expander knows ("fender bender", "blood test"),
// the compound's expansions join the second word's group.
func expansionGroups(ctx context.Context, p *Params, st index.Backend, text string) ([]termGroup, error) {
	var groups []termGroup
	seenWord := map[string]bool{}
	ws := analysis.Words(text)
	var pending []index.Related // the previous word's compound with this one
	for i, w := range ws {
		if analysis.Stopwords[w] || len(w) < 2 || seenWord[analysis.Stem(w)] {
			pending = nil
			continue
		}
		seenWord[analysis.Stem(w)] = true
		var g termGroup
		if t, ok, err := newGTerm(ctx, p, st, w, 1, p.MaxDFShare); err != nil {
			return nil, err
		} else if ok {
			g.terms = append(g.terms, t)
		}
		if expands(st) && len(w) >= 3 {
			more, err := expand(ctx, st, w)
			if err != nil {
				return nil, err
			}
			rs := append(pending, more...)
			rel, err := relatedTerms(ctx, p, st, rs, seenWord)
			if err != nil {
				return nil, err
			}
			g.terms = append(g.terms, rel...)
		}
		pending = nil
		if expands(st) && i+1 < len(ws) && !analysis.Stopwords[ws[i+1]] && len(ws[i+1]) >= 2 {
			var err error
			if pending, err = compoundExpansions(ctx, p, st, w, ws[i+1]); err != nil {
				return nil, err
			}
		}
		if len(g.terms) > 0 {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// compoundExpansions expands a and b as one compound ("a_b", then "a-b"); nil when
// the expander does not know it.
func compoundExpansions(ctx context.Context, p *Params, st index.Backend, a, b string) ([]index.Related, error) {
	for _, c := range []string{a + "_" + b, a + "-" + b} {
		rs, err := expand(ctx, st, c)
		if err != nil || len(rs) > 0 {
			return rs, err
		}
	}
	return nil, nil
}

// relatedTerms turns expansions into group terms the store contains, heaviest
// (relation weight × idf) first, at most MaxGroupTerms.
func relatedTerms(ctx context.Context, p *Params, st index.Backend, rs []index.Related, seenWord map[string]bool) ([]gterm, error) {
	var rel []gterm
	for _, r := range rs {
		r.Weight = float32(math.Pow(float64(r.Weight), p.RelPow))
		t, ok, err := newGTerm(ctx, p, st, strings.ReplaceAll(r.Term, "_", " "), float64(r.Weight), 1)
		if err != nil {
			return nil, err
		}
		if ok && !seenWord[t.phrase] {
			rel = append(rel, t)
		}
	}
	rel = dedupeTerms(rel)
	sort.SliceStable(rel, func(i, j int) bool { return rel[i].weight > rel[j].weight })
	if len(rel) > p.MaxGroupTerms {
		rel = rel[:p.MaxGroupTerms]
	}
	return rel, nil
}

// expands reports whether st keeps paraphrases and has an expander configured.
func expands(st index.Backend) bool {
	px, ok := st.(index.Paraphrases)
	return ok && px.Expands()
}

// expand is st's expansions of word (none when st keeps no paraphrases).
func expand(ctx context.Context, st index.Backend, word string) ([]index.Related, error) {
	px, ok := st.(index.Paraphrases)
	if !ok {
		return nil, nil
	}
	return px.Expand(ctx, word)
}
