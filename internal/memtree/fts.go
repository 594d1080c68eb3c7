package memtree

import (
	"context"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// The backend's own cost bounds: how much work one FTS5 query may cost. They
// bound time, not quality, and are the backend's own: the engine's parameters hold
// no FTS5 cost (internal/retrieval/RATIONALE.md, "Count", lists the engine's bounds).
const (
	// maxQuorumClauses bounds the OR-of-ANDs an at-least-m-of-n query becomes
	// (a 6-word query at m = 3 has 20 subsets); a broader one is index.ErrTooBroad.
	maxQuorumClauses = 20
	// maxRanked: an unrestricted bm25 query that may match more chunks ranks its
	// maxRanked newest only (rankcap.go): a common word cost 130–500 ms a search
	// at 168k chunks; idf stays the store's.
	maxRanked = 2000
)

// quoteFTS quotes s as an FTS5 string (a phrase of its words).
func quoteFTS(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// ftsExpr is q as an FTS5 expression: each phrase quoted (FTS5 tokenizes it
// with the store's tokenizer, internal/analysis's twin), combined by AND, OR or,
// for at least m of n, the OR of the ANDs of every m-subset.
func ftsExpr(q index.Query) (string, error) {
	ps := make([]string, len(q.Phrases))
	for i, p := range q.Phrases {
		ps[i] = quoteFTS(strings.Join(p, " "))
	}
	switch q.Op {
	case index.All:
		return strings.Join(ps, " AND "), nil
	case index.Any:
		return strings.Join(ps, " OR "), nil
	case index.AtLeast:
		return quorumExpr(ps, q.M)
	}
	return "", fmt.Errorf("full-text query: unknown operator %d", q.Op)
}

// quorumExpr is the OR of the ANDs of every m-subset of the quoted phrases ps;
// index.ErrTooBroad past maxQuorumClauses clauses.
func quorumExpr(ps []string, m int) (string, error) {
	if m < 1 || m > len(ps) {
		return "", fmt.Errorf("full-text query: at least %d of %d phrases: %w", m, len(ps), ErrInvalid)
	}
	var clauses []string
	var pick func(start int, cur []string) bool
	pick = func(start int, cur []string) bool {
		if len(cur) == m {
			if len(clauses) == maxQuorumClauses {
				return false
			}
			clauses = append(clauses, "("+strings.Join(cur, " AND ")+")")
			return true
		}
		for i := start; i < len(ps); i++ {
			if !pick(i+1, append(cur, ps[i])) {
				return false
			}
		}
		return true
	}
	if !pick(0, make([]string, 0, m)) {
		return "", fmt.Errorf("full-text query: at least %d of %d phrases takes more than %d clauses: %w", m, len(ps), maxQuorumClauses, index.ErrTooBroad)
	}
	return strings.Join(clauses, " OR "), nil
}

// estimate bounds q's matches from document frequencies: for All, its rarest
// phrase's chunks; otherwise the sum of its phrases' chunks (a phrase counts as
// its rarest word).
func (r storeReader) estimate(ctx context.Context, q index.Query) (int, error) {
	est, sum := -1, 0
	for _, p := range q.Phrases {
		pdf := -1
		for _, w := range p {
			df, err := r.DocFreq(ctx, w)
			if err != nil {
				return 0, err
			}
			if pdf < 0 || df < pdf {
				pdf = df
			}
		}
		pdf = max(pdf, 0)
		if est < 0 || pdf < est {
			est = pdf
		}
		sum += pdf
	}
	if q.Op == index.All {
		return max(est, 0), nil
	}
	return sum, nil
}
