package retrieval

import (
	"context"
	"fmt"
	"sort"
	"unicode"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Follow-up stage (issue 30, item 3: multi-hop questions followed through the
// people and things the first hits name): the words the first hits' matching
// messages say that the query does not — names first, then rare words — are
// searched again together with the query's rarer words, and that second ranking
// is fused with search's hits that are not literal evidence (from FillLevel
// down, levels.go), so every hit saying a rarer query word, or the person or date
// the query names, keeps its place above it. Placed among the hits saying one
// rarer word (OrLevel) instead, it lost on held-out conversations (RATIONALE.md,
// Follow-up).

// Follow reorders the part of out after its last literal-evidence hit (a level
// below FillLevel) by fusing it, weighted Default.FollowWeight against 1, with a
// second pass over the query's rarer words and the words the first hits name;
// out's literal prefix keeps its places. level is out's levels (hits the second
// pass adds get none: they are not literal evidence).
func (c *Call) Follow(ctx context.Context, out []abi.ChunkHit, level map[string]int) ([]abi.ChunkHit, error) {
	p := &Default
	if p.FollowTop <= 0 || len(c.Terms) == 0 || len(out) == 0 {
		return out, nil
	}
	split := 0
	for i, h := range out {
		if l, ok := level[h.ID]; ok && l < FillLevel {
			split = i + 1
		}
	}
	if split == 0 || split >= c.K {
		return out, nil
	}
	words, err := c.followWords(ctx, out[:split])
	if err != nil || len(words) == 0 {
		return out, err
	}
	terms := append(append([]Term(nil), c.Terms...), words...)
	skip := map[string]bool{}
	for _, h := range out[:split] {
		skip[h.ID] = true
	}
	second, err := c.St.Match(ctx, Match{Expr: OrExpr(terms), Estimate: OrEstimate(terms), Limit: c.K, Skip: skip})
	if err != nil {
		return nil, fmt.Errorf("follow-up pass: %w", err)
	}
	if len(second) == 0 {
		return out, nil
	}
	stems := StemsOf(terms)
	if err := CiteHits(ctx, c.Msgs, second, stems, c.Query.Names, 1); err != nil {
		return nil, err
	}
	// The weak part keeps its own citations; hits only the second pass found cite
	// the messages saying a query word or a followed word.
	byID := map[string]abi.ChunkHit{}
	for _, h := range out[split:] {
		byID[h.ID] = h
	}
	fused := Fuse([]List{{Name: "search", Weight: 1, Hits: out[split:]}, {Name: "follow", Weight: p.FollowWeight, Hits: second}}, c.K-split, nil)
	res := append([]abi.ChunkHit(nil), out[:split]...)
	for _, h := range fused {
		if o, ok := byID[h.ID]; ok {
			h = o
		}
		res = append(res, h)
	}
	return res, nil
}

// followWords are the Default.FollowTerms words the first Default.FollowTop hits
// (of the literal prefix) say in the messages that say a query word, that the
// query does not say: ranked by the number of those hits saying them ×
// idf, a capitalised word (a name) counting double. Words in more than
// MaxExpandShare of the chunks are left out.
func (c *Call) followWords(ctx context.Context, lead []abi.ChunkHit) ([]Term, error) {
	p := &Default
	if len(lead) > p.FollowTop {
		lead = lead[:p.FollowTop]
	}
	ids := make([]string, 0, len(lead))
	for _, h := range lead {
		ids = append(ids, h.ID)
	}
	texts, err := c.Msgs.Read(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("follow-up words: %w", err)
	}
	inQuery := map[string]bool{}
	for _, t := range c.All {
		inQuery[t.Stem] = true
	}
	for _, n := range c.Query.Names {
		for _, w := range Words(n) {
			inQuery[Stem(w)] = true
		}
	}
	type cand struct {
		word  string
		hits  int
		named bool
	}
	cands := map[string]*cand{}
	var order []string
	for _, id := range ids {
		ct, ok := texts[id]
		if !ok {
			continue
		}
		var segs []string
		for i := range ct.Spans {
			if s, ok := ct.Message(i); ok {
				segs = append(segs, s)
			}
		}
		if len(segs) == 0 {
			segs = []string{ct.Text}
		}
		inHit := map[string]bool{}
		for _, seg := range segs {
			says := false
			for _, w := range Words(seg) {
				if inQuery[c.Msgs.Stem(w)] {
					says = true
					break
				}
			}
			if !says {
				continue
			}
			for _, tok := range splitKeepCase(seg) {
				w := Fold(tok.word)
				if Stopwords[w] || len(w) < 3 || IsDigits(w) || questionWords[w] {
					continue
				}
				st := c.Msgs.Stem(w)
				if inQuery[st] {
					continue
				}
				cd, ok := cands[st]
				if !ok {
					cd = &cand{word: w}
					cands[st] = cd
					order = append(order, st)
				}
				if tok.named {
					cd.named = true
				}
				if !inHit[st] {
					inHit[st] = true
					cd.hits++
				}
			}
		}
	}
	n := c.St.Chunks()
	type scored struct {
		t     Term
		score float64
	}
	var sc []scored
	for _, st := range order {
		cd := cands[st]
		df, err := c.St.DocFreq(ctx, st)
		if err != nil {
			return nil, err
		}
		if df == 0 || float64(df) > p.MaxExpandShare*float64(n)+1 {
			continue
		}
		s := float64(cd.hits) * IDF(n, df)
		if cd.named {
			s *= 2
		}
		sc = append(sc, scored{Term{Word: cd.word, Stem: st, DF: df, Weight: 1}, s})
	}
	sort.SliceStable(sc, func(a, b int) bool { return sc[a].score > sc[b].score })
	var out []Term
	for i := 0; i < len(sc) && i < p.FollowTerms; i++ {
		out = append(out, sc[i].t)
	}
	return out, nil
}

// keptWord is a word of a message and whether it is capitalised within a sentence.
type keptWord struct {
	word  string
	named bool
}

// splitKeepCase splits s into letter-and-digit words, marking those capitalised
// after the first word of a sentence.
func splitKeepCase(s string) []keptWord {
	var out []keptWord
	start := true
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			if r == '.' || r == '!' || r == '?' || r == ':' || r == '\n' {
				start = true
			}
			i++
			continue
		}
		j := i
		for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsNumber(rs[j])) {
			j++
		}
		out = append(out, keptWord{word: string(rs[i:j]), named: !start && unicode.IsUpper(r)})
		start = false
		i = j
	}
	return out
}
