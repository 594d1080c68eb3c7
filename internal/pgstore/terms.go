package pgstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// The text index holds exactly internal/analysis's terms: the writer analyzes
// each chunk in Go and writes a tsvector *literal* ('term':1,4 'other':2), cast
// with ::tsvector, and queries are tsquery literals ('brake' <-> 'pad') cast with
// ::tsquery. Casting a literal runs neither PostgreSQL's parser nor a text search
// configuration, so no PostgreSQL stemmer, stopword list or tokenizer ever
// touches a term: the backend matches what the SQLite backend matches.

// maxLexemeBytes is the longest lexeme a tsvector holds (PostgreSQL: 2047 bytes).
// A longer term is indexed and queried as lexemeOf's hash of it, so it still
// matches exactly.
const maxLexemeBytes = 2046

// lexemeOf is the lexeme term t is indexed as.
func lexemeOf(t string) string {
	if len(t) <= maxLexemeBytes {
		return t
	}
	h := sha256.Sum256([]byte(t))
	return "~" + hex.EncodeToString(h[:])
}

// quoteLexeme quotes a lexeme for tsvector and tsquery input.
func quoteLexeme(l string) string {
	l = strings.ReplaceAll(l, `\`, `\\`)
	return "'" + strings.ReplaceAll(l, "'", "''") + "'"
}

// analyzed is a chunk's text and title as index terms, in order.
type analyzed struct {
	text, title []string
}

func analyze(title, text string) analyzed {
	a := analyzed{}
	for _, w := range analysis.Words(text) {
		a.text = append(a.text, lexemeOf(analysis.Stem(w)))
	}
	for _, w := range analysis.Words(title) {
		a.title = append(a.title, lexemeOf(analysis.Stem(w)))
	}
	return a
}

// count is the number of terms (BM25's document length, as FTS5 counts tokens
// over every column).
func (a analyzed) count() int { return len(a.text) + len(a.title) }

// tsvectorPositionMax is the largest position a tsvector keeps.
const tsvectorPositionMax = 16383

// tsvector is a's tsvector literal: the text's terms at positions 1…n, the
// title's after a gap of one, so that no phrase spans the two (FTS5 matches a
// phrase within one column).
func (a analyzed) tsvector() string {
	pos := map[string][]int{}
	var order []string
	add := func(t string, p int) {
		if _, ok := pos[t]; !ok {
			order = append(order, t)
		}
		pos[t] = append(pos[t], min(p, tsvectorPositionMax))
	}
	for i, t := range a.text {
		add(t, i+1)
	}
	for i, t := range a.title {
		add(t, len(a.text)+2+i)
	}
	sort.Strings(order)
	var b strings.Builder
	for i, t := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteLexeme(t))
		b.WriteByte(':')
		for j, p := range pos[t] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
		}
	}
	return b.String()
}

// distinct returns a's distinct terms, sorted.
func (a analyzed) distinct() []string {
	seen := map[string]bool{}
	var out []string
	for _, ts := range [][]string{a.text, a.title} {
		for _, t := range ts {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// phraseTerms are the index terms of a phrase's words (a word of several folded
// words, as "main street" in a name, gives each).
func phraseTerms(p index.Phrase) []string {
	var out []string
	for _, w := range p {
		for _, f := range analysis.Words(w) {
			out = append(out, lexemeOf(analysis.Stem(f)))
		}
	}
	return out
}

// maxQuorumClauses bounds the OR-of-ANDs an at-least-m-of-n query becomes, as
// the SQLite backend does (internal/memtree/fts.go): a broader query is
// index.ErrTooBroad, and the clauses are also what BM25 scores.
const maxQuorumClauses = 20

// compiled is a query as a tsquery literal and as the list of phrases BM25 sums
// over (FTS5 scores every phrase of its expression, an at-least query's subsets
// repeating phrases).
type compiled struct {
	tsquery string     // "" when the query can match nothing
	scored  [][]string // the phrases scored, as terms, clause by clause
	clause  int        // phrases per clause of scored: a clause counts only where all its phrases are said
}

// compile turns q into a tsquery and its scored phrases.
func compile(q index.Query) (compiled, error) {
	var ps [][]string
	for _, p := range q.Phrases {
		ps = append(ps, phraseTerms(p))
	}
	expr := func(p []string) string {
		qs := make([]string, len(p))
		for i, t := range p {
			qs[i] = quoteLexeme(t)
		}
		if len(qs) == 1 {
			return qs[0]
		}
		return "(" + strings.Join(qs, " <-> ") + ")"
	}
	// A phrase without a word matches nothing (FTS5's empty phrase).
	nonEmpty := func(ps [][]string) [][]string {
		var out [][]string
		for _, p := range ps {
			if len(p) > 0 {
				out = append(out, p)
			}
		}
		return out
	}
	join := func(ps [][]string, op string) string {
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = expr(p)
		}
		return strings.Join(parts, op)
	}
	switch q.Op {
	case index.All:
		if len(nonEmpty(ps)) < len(ps) || len(ps) == 0 {
			return compiled{}, nil
		}
		return compiled{tsquery: join(ps, " & "), scored: ps, clause: len(ps)}, nil
	case index.Any:
		ps = nonEmpty(ps)
		if len(ps) == 0 {
			return compiled{}, nil
		}
		return compiled{tsquery: join(ps, " | "), scored: ps, clause: 1}, nil
	case index.AtLeast:
		if q.M < 1 || q.M > len(q.Phrases) {
			return compiled{}, fmt.Errorf("full-text query: at least %d of %d phrases: invalid quorum", q.M, len(q.Phrases))
		}
		var clauses []string
		var scored [][]string
		var pick func(start int, cur [][]string) bool
		pick = func(start int, cur [][]string) bool {
			if len(cur) == q.M {
				if len(clauses) == maxQuorumClauses {
					return false
				}
				if len(nonEmpty(cur)) == len(cur) {
					clauses = append(clauses, "("+join(cur, " & ")+")")
					scored = append(scored, cur...)
				}
				return true
			}
			for i := start; i < len(ps); i++ {
				if !pick(i+1, append(cur, ps[i])) {
					return false
				}
			}
			return true
		}
		if !pick(0, make([][]string, 0, q.M)) {
			return compiled{}, fmt.Errorf("full-text query: at least %d of %d phrases takes more than %d clauses: %w", q.M, len(ps), maxQuorumClauses, index.ErrTooBroad)
		}
		if len(clauses) == 0 {
			return compiled{}, nil
		}
		return compiled{tsquery: strings.Join(clauses, " | "), scored: scored, clause: q.M}, nil
	}
	return compiled{}, fmt.Errorf("full-text query: unknown operator %d", q.Op)
}

// FTS5's BM25 constants (sqlite's fts5_aux.c), so scores match the SQLite
// backend's: k1 1.2, b 0.75, every column weighted 1.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// idf is FTS5's inverse document frequency of a phrase in hits of n chunks.
func idf(n, hits int) float64 {
	v := math.Log((float64(n) - float64(hits) + 0.5) / (float64(hits) + 0.5))
	if v <= 0 {
		v = 1e-6
	}
	return v
}

// bm25 is FTS5's bm25() of a chunk (higher is better; FTS5 returns it negated):
// the sum over the scored phrases of idf · f·(k1+1) / (f + k1·(1 − b + b·D/avgdl)),
// d the chunk's term count and f a phrase's occurrences in it (freq). As in
// FTS5, a phrase's instances count only within a clause the chunk matches (an
// at-least query's subset whose every phrase it says).
func bm25(d float64, freq func(p []string) int, c compiled, idfs []float64, avgdl float64) float64 {
	score := 0.0
	f := make([]float64, c.clause)
	for at := 0; at+c.clause <= len(c.scored); at += c.clause {
		matched := true
		for j := range c.clause {
			f[j] = float64(freq(c.scored[at+j]))
			if f[j] == 0 && c.clause > 1 {
				matched = false
				break
			}
		}
		if !matched {
			continue
		}
		for j, fj := range f {
			if fj == 0 {
				continue
			}
			score += idfs[at+j] * (fj * (bm25K1 + 1) / (fj + bm25K1*(1-bm25B+bm25B*d/avgdl)))
		}
	}
	return score
}
