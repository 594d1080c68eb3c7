package retrieval

import (
	"context"
	"errors"
	"strings"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Candidates stage: which chunks are considered, and at which evidence level
// (levels.go). Each level is a full-text query to the store, ranked by bm25.

// Candidates runs AND, then coordination levels (chunks holding n-1, n-2, … of the
// n words), then OR bm25 queries under f, then (to fill k whenever the store has
// candidates) OR over every content word of the query including those too common
// to rank (all: the unpruned terms), each level ranked after the previous one; when
// f is a restriction (entity or time) and restricted is set, the remaining places
// are filled with its newest chunks. order, when not nil, reorders the hits of the
// AND and coordination levels (the scoring stage's message ranking, for a plain
// keyword query). level gives each hit's level (0 = all words; higher = fewer).
func Candidates(ctx context.Context, p *Params, st index.Backend, terms, all []Term, f index.Filter, restricted bool, k int, snipTerms []string, order func([]abi.ChunkHit) ([]abi.ChunkHit, error)) ([]abi.ChunkHit, map[string]int, error) {

	lv := func(hs []abi.ChunkHit) ([]abi.ChunkHit, error) {
		if order == nil {
			return hs, nil
		}
		return order(hs)
	}
	seen := map[string]bool{}
	level := map[string]int{}
	cur := 0
	var out []abi.ChunkHit
	add := func(hs []abi.ChunkHit) {
		for _, h := range hs {
			if !seen[h.ID] && len(out) < k+p.DupSlack {
				seen[h.ID] = true
				level[h.ID] = cur
				out = append(out, h)
			}
		}
		cur++
	}
	if len(terms) > 0 {
		hs, err := match(ctx, st, index.Match{Query: termQuery(index.All, terms), Filter: f, Limit: k + p.DupSlack}, nil)
		if err != nil {
			return nil, nil, err
		}
		if hs, err = lv(hs); err != nil {
			return nil, nil, err
		}
		add(hs)
		// Coordination levels: chunks with more of the words before those with fewer.
		for m := len(terms) - 1; m >= 2 && len(out) < k+p.DupSlack; m-- {
			q := termQuery(index.AtLeast, terms)
			q.M = m
			hs, err := match(ctx, st, index.Match{Query: q, Filter: f, Limit: k + p.DupSlack - len(out), Skip: seen}, nil)
			if errors.Is(err, index.ErrTooBroad) {
				break
			}
			if err != nil {
				return nil, nil, err
			}
			if hs, err = lv(hs); err != nil {
				return nil, nil, err
			}
			add(hs)
		}
		if len(out) < k+p.DupSlack && len(terms) > 1 {
			cur = OrLevel
			hs, err := match(ctx, st, index.Match{Query: termQuery(index.Any, terms), Filter: f, Limit: k + p.DupSlack - len(out), Skip: seen}, nil)
			if err != nil {
				return nil, nil, err
			}
			add(hs)
		}
	}
	// Fill: the words too common to rank alone still find chunks a plain OR bm25
	// would return. Words in at most MaxFillDF chunks are ranked by bm25; commoner
	// ones (a large store) take their first matches unranked, so no query reads a
	// whole posting list.
	cur = FillLevel
	if len(out) < k+p.DupSlack && len(all) > len(terms) {
		var ranked, common []Term
		for _, t := range all {
			if t.DF <= p.MaxFillDF {
				ranked = append(ranked, t)
			} else {
				common = append(common, t)
			}
		}
		if len(ranked) > 0 {
			hs, err := match(ctx, st, index.Match{Query: termQuery(index.Any, ranked), Filter: f, Limit: k + p.DupSlack - len(out), Skip: seen},
				append(append([]string{}, snipTerms...), analysis.Words(orWords(ranked))...))
			if err != nil {
				return nil, nil, err
			}
			add(hs)
		}
		if len(common) > 0 && len(out) < k+p.DupSlack {
			hs, err := match(ctx, st, index.Match{Query: termQuery(index.Any, common), Filter: f, Unranked: true, Limit: k + p.DupSlack - len(out), Skip: seen}, nil)
			if err != nil {
				return nil, nil, err
			}
			add(hs)
		}
	}
	out = DemoteDuplicates(out)
	if restricted && len(out) < k && (len(terms) == 0 || len(out) > 0 || f.Restricts()) {
		if len(terms) > 0 && len(out) == 0 {
			return out, level, nil // the restriction matched none of the words: relax it instead
		}
		rs, err := st.Recent(ctx, f, k-len(out), seen)
		if err != nil {
			return nil, nil, err
		}
		hs := cut(rs, snipTerms)
		cur = RecentLevel // the person or date matched: literal evidence too
		add(hs)
	}
	return out, level, nil
}

// PruneFrequent drops terms in more than MaxDFShare of n chunks; when that
// would drop everything it keeps the rarest term.
func PruneFrequent(p *Params, ts []Term, n int) []Term {
	limit := int(p.MaxDFShare*float64(n)) + 1
	var out []Term
	for _, t := range ts {
		if t.DF <= limit {
			out = append(out, t)
		}
	}
	if len(out) == 0 && len(ts) > 0 {
		best := ts[0]
		for _, t := range ts[1:] {
			if t.DF < best.DF {
				best = t
			}
		}
		out = []Term{best}
	}
	return out
}

// termQuery is the query of ts's words combined by op.
func termQuery(op index.Op, ts []Term) index.Query {
	q := index.Query{Op: op, Phrases: make([]index.Phrase, len(ts))}
	for i, t := range ts {
		q.Phrases[i] = index.Phrase{t.Word}
	}
	return q
}

// orWords joins the words of ts.
func orWords(ts []Term) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Word)
		b.WriteByte(' ')
	}
	return b.String()
}

// IsDigits reports whether s is a non-empty run of ASCII digits.
func IsDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// dupKey normalises a snippet for near-duplicate detection: the chat "Author
// (time):" prefix, digits and punctuation are dropped.
func dupKey(snippet string) string {
	if i := strings.Index(snippet, "): "); i >= 0 && i < 80 {
		snippet = snippet[i+3:]
	}
	var b strings.Builder
	for _, w := range analysis.Words(snippet) {
		if IsDigits(w) {
			continue
		}
		b.WriteString(w)
		b.WriteByte(' ')
		if b.Len() > 100 {
			break
		}
	}
	return b.String()
}

// DemoteDuplicates moves hits whose text repeats an earlier hit's (templated
// notifications, re-posted messages) after the distinct ones, keeping order
// otherwise.
func DemoteDuplicates(hs []abi.ChunkHit) []abi.ChunkHit {
	seen := map[string]bool{}
	var uniq, dups []abi.ChunkHit
	for _, h := range hs {
		key := dupKey(h.Snippet)
		if key != "" && seen[key] {
			dups = append(dups, h)
			continue
		}
		seen[key] = true
		uniq = append(uniq, h)
	}
	return append(uniq, dups...)
}
