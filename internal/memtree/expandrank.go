package memtree

import (
	"context"
	"database/sql"
	"math"
	"sort"
	"strings"
)

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

// Expansion limits.
const (
	maxExpandShare = 0.05 // expansion and association terms in more chunks than this are dropped
	maxGroupTerms  = 6
)

func idf(n, df int) float64 { return math.Log(1 + float64(n)/float64(df)) }

// newGTerm builds a group term for text (one word or a phrase) when every word is
// known to the store and not too common; ok is false otherwise.
func (s *Store) newGTerm(ctx context.Context, db *sql.DB, snap *dfCache, text string, w float64, maxShare float64) (gterm, bool, error) {
	ws := words(text)
	if len(ws) == 0 || len(ws) > 3 {
		return gterm{}, false, nil
	}
	g := gterm{phrase: strings.Join(ws, " ")}
	minIDF := math.Inf(1)
	for _, x := range ws {
		st := stem(x)
		df, err := s.docFreq(ctx, db, st)
		if err != nil {
			return g, false, err
		}
		if df == 0 {
			return g, false, nil
		}
		if len(ws) == 1 && float64(df) > maxShare*float64(snap.n) {
			return g, false, nil
		}
		minIDF = math.Min(minIDF, idf(snap.n, df))
		g.stems = append(g.stems, st)
	}
	if len(ws) > 1 {
		// A phrase is rarer than its rarest word; count it a little above that.
		minIDF *= 1.2
		if allStop(ws) {
			return g, false, nil
		}
	} else if stopwords[ws[0]] {
		return g, false, nil
	}
	g.weight = w * minIDF
	return g, true, nil
}

func allStop(ws []string) bool {
	for _, w := range ws {
		if !stopwords[w] {
			return false
		}
	}
	return true
}

// expansionGroups builds one group per content word of text: the word itself (when
// the store has it) plus its lexical expansions the store contains.
func (s *Store) expansionGroups(ctx context.Context, db *sql.DB, snap *dfCache, exp Expander, text string) ([]termGroup, error) {
	var groups []termGroup
	seenWord := map[string]bool{}
	for _, w := range words(text) {
		if stopwords[w] || len(w) < 2 || seenWord[stem(w)] {
			continue
		}
		seenWord[stem(w)] = true
		var g termGroup
		if t, ok, err := s.newGTerm(ctx, db, snap, w, 1, maxDFShare); err != nil {
			return nil, err
		} else if ok {
			g.terms = append(g.terms, t)
		}
		if exp != nil && len(w) >= 3 {
			var rel []gterm
			for _, r := range exp.Expand(w) {
				t, ok, err := s.newGTerm(ctx, db, snap, strings.ReplaceAll(r.Term, "_", " "), float64(r.Weight), maxExpandShare)
				if err != nil {
					return nil, err
				}
				if ok && !seenWord[t.phrase] {
					rel = append(rel, t)
				}
			}
			sort.SliceStable(rel, func(i, j int) bool { return rel[i].weight > rel[j].weight })
			if len(rel) > maxGroupTerms {
				rel = rel[:maxGroupTerms]
			}
			g.terms = append(g.terms, rel...)
		}
		if len(g.terms) > 0 {
			groups = append(groups, g)
		}
	}
	return groups, nil
}
