package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/sdk/abi"
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
	maxExpandShare   = 0.05 // expansion and feedback terms in more chunks than this are dropped
	maxGroupTerms    = 12
	expandCandidates = 100
	feedbackDocs     = 6
	feedbackTerms    = 12
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

// groupExpr is an FTS OR query over every term of the groups.
func groupExpr(groups []termGroup) string {
	seen := map[string]bool{}
	var q []string
	for _, g := range groups {
		for _, t := range g.terms {
			if !seen[t.phrase] {
				seen[t.phrase] = true
				q = append(q, quoteFTS(t.phrase))
			}
		}
	}
	return strings.Join(q, " OR ")
}

// candidate is a chunk considered by weighted coordination ranking.
type candidate struct {
	hit  abi.ChunkHit
	text string
	bm25 float64
}

// ftsCandidates fetches up to limit chunks matching expr (best bm25 first) with text.
func ftsCandidates(ctx context.Context, db *sql.DB, expr string, limit int) ([]candidate, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+hitColumns+`, c.text, bm25(chunks_fts, 1.0, 0.5) AS r
		FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? ORDER BY r LIMIT ?`, expr, limit)
	if err != nil {
		return nil, fmt.Errorf("expansion query: %w", err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		h, err := scanHit(rows, &c.text, &c.bm25)
		if err != nil {
			return nil, fmt.Errorf("expansion query: %w", err)
		}
		c.hit = h
		out = append(out, c)
	}
	return out, rows.Err()
}

// chunkStems returns the folded words of text and the set of their stems.
func chunkStems(text string, memo map[string]string) ([]string, map[string]bool) {
	ws := words(text)
	set := make(map[string]bool, len(ws))
	for _, w := range ws {
		st, ok := memo[w]
		if !ok {
			st = stem(w)
			memo[w] = st
		}
		set[st] = true
	}
	return ws, set
}

// coordScore scores a chunk: for each group, the weight of its best term present.
func coordScore(groups []termGroup, ws []string, set map[string]bool) (float64, int) {
	var joined string
	var score float64
	covered := 0
	for _, g := range groups {
		best := 0.0
		for _, t := range g.terms {
			if t.weight <= best {
				continue
			}
			present := true
			for _, st := range t.stems {
				present = present && set[st]
			}
			if present && len(t.stems) > 1 {
				if joined == "" {
					joined = " " + strings.Join(ws, " ") + " "
				}
				present = strings.Contains(joined, " "+t.phrase+" ")
			}
			if present {
				best = t.weight
			}
		}
		if best > 0 {
			covered++
		}
		score += best
	}
	return score, covered
}

// rankGroups ranks chunks by weighted coordination over groups.
func rankGroups(ctx context.Context, db *sql.DB, groups []termGroup, limit int) ([]abi.ChunkHit, []candidate, error) {
	if len(groups) == 0 {
		return nil, nil, nil
	}
	cands, err := ftsCandidates(ctx, db, groupExpr(groups), expandCandidates)
	if err != nil {
		return nil, nil, err
	}
	type sc struct {
		i     int
		score float64
	}
	var scored []sc
	memo := map[string]string{}
	for i, c := range cands {
		ws, set := chunkStems(c.text, memo)
		s, _ := coordScore(groups, ws, set)
		if s > 0 {
			scored = append(scored, sc{i, s - 0.01*c.bm25})
		}
	}
	sort.SliceStable(scored, func(a, b int) bool { return scored[a].score > scored[b].score })
	var out []abi.ChunkHit
	var top []candidate
	for _, x := range scored {
		if len(out) == limit {
			break
		}
		c := cands[x.i]
		c.hit.Score = x.score
		c.hit.Snippet = plainSnippet(c.text, groupWords(groups))
		out = append(out, c.hit)
		top = append(top, c)
	}
	return out, top, nil
}

func groupWords(groups []termGroup) []string {
	var out []string
	for _, g := range groups {
		for _, t := range g.terms {
			out = append(out, t.phrase)
		}
	}
	return out
}

// feedbackGroups picks terms that characterise the top chunks (pseudo-relevance
// feedback): frequent in them, rare in the store, not already in the query.
func (s *Store) feedbackGroups(ctx context.Context, db *sql.DB, snap *dfCache, top []candidate, exclude []termGroup) ([]termGroup, error) {
	if len(top) > feedbackDocs {
		top = top[:feedbackDocs]
	}
	skip := map[string]bool{}
	for _, g := range exclude {
		for _, t := range g.terms {
			for _, st := range t.stems {
				skip[st] = true
			}
		}
	}
	type fw struct {
		word  string
		score float64
		docs  int
	}
	agg := map[string]*fw{}
	for _, c := range top {
		seen := map[string]bool{}
		for _, w := range words(c.text) {
			if stopwords[w] || len(w) < 3 || isDigits(w) {
				continue
			}
			st := stem(w)
			if skip[st] || seen[st] {
				continue
			}
			seen[st] = true
			if agg[st] == nil {
				agg[st] = &fw{word: w}
			}
			agg[st].docs++
		}
	}
	var cands []*fw
	for st, f := range agg {
		if f.docs < 2 {
			continue
		}
		df, err := s.docFreq(ctx, db, st)
		if err != nil {
			return nil, err
		}
		if df < 2 || float64(df) > maxExpandShare*float64(snap.n) {
			continue
		}
		f.score = float64(f.docs) * idf(snap.n, df)
		cands = append(cands, f)
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].word < cands[j].word
	})
	if len(cands) > feedbackTerms {
		cands = cands[:feedbackTerms]
	}
	var groups []termGroup
	for _, f := range cands {
		t, ok, err := s.newGTerm(ctx, db, snap, f.word, 1, maxExpandShare)
		if err != nil {
			return nil, err
		}
		if ok {
			groups = append(groups, termGroup{terms: []gterm{t}})
		}
	}
	return groups, nil
}
