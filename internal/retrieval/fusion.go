package retrieval

import (
	"sort"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Fusion stage: literal evidence first, then the weighted reciprocal-rank fusion of
// the other rankings (expansions, associations, summaries, feedback, vectors).

// List is one ranking to fuse: its hits best first and its weight.
type List struct {
	Name   string
	Weight float64
	Hits   []abi.ChunkHit
}

// LeadThenFuse puts lead (search's hits that say the query's words: its literal
// evidence) first, in search's order, fills the remaining places with the fusion
// of lists without them, then with tail: the other rankings add below the literal
// matches and never push them down (issue 16: fused, they diluted the top ranks;
// on LoCoMo recall@5 was 29 against search's 54). dedupe moves near-duplicate hits
// below distinct ones in the fused part (nil: none).
func LeadThenFuse(p *Params, lead []abi.ChunkHit, lists []List, tail []abi.ChunkHit, k int, dedupe func([]abi.ChunkHit) []abi.ChunkHit) []abi.ChunkHit {
	out := make([]abi.ChunkHit, 0, k)
	seen := map[string]bool{}
	for _, h := range lead {
		if len(out) == k {
			return out
		}
		seen[h.ID] = true
		out = append(out, h)
	}
	rest := make([]List, 0, len(lists))
	for _, l := range lists {
		var hs []abi.ChunkHit
		for _, h := range l.Hits {
			if !seen[h.ID] {
				hs = append(hs, h)
			}
		}
		rest = append(rest, List{Name: l.Name, Weight: l.Weight, Hits: hs})
	}
	for _, h := range Fuse(p, rest, k-len(out), dedupe) {
		seen[h.ID] = true
		out = append(out, h)
	}
	for _, h := range tail {
		if len(out) == k {
			break
		}
		if !seen[h.ID] {
			seen[h.ID] = true
			out = append(out, h)
		}
	}
	return out
}

// Fuse combines lists by weighted reciprocal rank (a list's hit at rank r adds
// weight / (RRFK + r)), best first, at most k; each hit's Score is its fused score.
// dedupe, when not nil, moves near-duplicates below distinct hits before the cut.
func Fuse(p *Params, lists []List, k int, dedupe func([]abi.ChunkHit) []abi.ChunkHit) []abi.ChunkHit {
	type acc struct {
		hit   abi.ChunkHit
		score float64
	}
	byID := map[string]*acc{}
	var order []string
	for _, l := range lists {
		for r, h := range l.Hits {
			a, ok := byID[h.ID]
			if !ok {
				a = &acc{hit: h}
				byID[h.ID] = a
				order = append(order, h.ID)
			} else if a.hit.Snippet == "" {
				a.hit.Snippet = h.Snippet
			}
			a.score += l.Weight / (p.RRFK + float64(r+1))
		}
	}
	out := make([]abi.ChunkHit, 0, len(order))
	for _, id := range order {
		a := byID[id]
		a.hit.Score = a.score
		out = append(out, a.hit)
	}
	SortHits(out)
	if dedupe != nil {
		out = dedupe(out)
	}
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// SortHits orders hits by score descending, then timestamp descending, then id.
func SortHits(h []abi.ChunkHit) {
	sort.SliceStable(h, func(i, j int) bool {
		if h[i].Score != h[j].Score {
			return h[i].Score > h[j].Score
		}
		if h[i].TimestampMS != h[j].TimestampMS {
			return h[i].TimestampMS > h[j].TimestampMS
		}
		return h[i].ID < h[j].ID
	})
}
