package retrieval

import (
	"context"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The search pipeline: one Call per memory.search (and recall's literal list),
// through the stages candidates (candidates.go) → scoring (scoring.go) →
// conversation-aware citation (citation.go, cite.go), under each restriction the
// query names, most specific first.

// Call is one read call as the stages see it: the store at one generation, the
// query understood, its terms, and the per-call reader of chunk texts the scoring
// and citation stages share.
type Call struct {
	// P are the engine's parameters.
	P  *Params
	St index.Backend
	K  int
	// Query is the query understood (people, addresses, dates, the rest).
	Query ParsedQuery
	// Entities are the entity ids the query names that the store holds.
	Entities []string
	// All are the query's content terms; Terms those rare enough to rank
	// (PruneFrequent).
	All, Terms []Term
	// SnipTerms are the words snippets are cut around.
	SnipTerms []string
	// HasTime and HasEnt: the query names a date, or a person or address.
	HasTime, HasEnt bool
	// Msgs reads chunk texts once per call.
	Msgs *Messages

	// level is the evidence level of search's hits (LexicalLists).
	level map[string]int
}

// NewCall understands query against st (ParseQuery, KnownEntities, QueryTerms).
func (e *Engine) NewCall(ctx context.Context, st index.Backend, query string, k int) (*Call, error) {
	pq0, err := ParseQuery(ctx, query, st)
	if err != nil {
		return nil, err
	}
	c := &Call{P: &e.p, St: st, K: k, Query: pq0, Msgs: NewMessages(st)}
	pq := &c.Query
	ents, err := st.KnownEntities(ctx, pq.Entities)
	if err != nil {
		return nil, err
	}
	c.Entities = ents
	if c.All, err = QueryTerms(ctx, st, pq.Text); err != nil {
		return nil, err
	}
	c.Terms = PruneFrequent(&e.p, c.All, st.Stats().Chunks)
	for _, t := range c.Terms {
		c.SnipTerms = append(c.SnipTerms, t.Word)
	}
	c.SnipTerms = append(c.SnipTerms, pq.Names...)
	c.SnipTerms = append(c.SnipTerms, pq.Emails...)
	c.HasTime = pq.To != 0
	c.HasEnt = len(ents) > 0 || len(pq.Names) > 0
	return c, nil
}

// Search ranks chunks for query (see memtree's Store.Search) and gives the level
// each hit came from (levels.go: below OrLevel a hit says at least two of the
// query's rarer words, or its only one; below FillLevel at least one; a hit
// without a level is a chunk that follows a hit in its conversation).
func (e *Engine) Search(ctx context.Context, st index.Backend, query string, k int) (hits []abi.ChunkHit, level map[string]int, err error) {
	c, err := e.NewCall(ctx, st, query, k)
	if err != nil {
		return nil, nil, err
	}
	return c.Ranked(ctx)
}

// Ranked is memory.search's ranking: the pipeline (Search), then the meaning
// list fused below its literal lead when MeaningSearch is on.
func (c *Call) Ranked(ctx context.Context) (hits []abi.ChunkHit, level map[string]int, err error) {
	hits, level, err = c.Search(ctx)
	if err != nil || c.P.MeaningSearch <= 0 {
		return hits, level, err
	}
	ml, err := c.meaningList(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Below search's literal lead only (LiteralLead): the hits saying the query's
	// rarer words keep their places.
	lead, _ := LiteralLead(hits, level)
	return fuseMeaning(c.P, hits, ml, c.P.MeaningSearch, len(lead), c.K), level, nil
}

// Search runs the pipeline under each restriction in turn (Restrictions).
func (c *Call) Search(ctx context.Context) ([]abi.ChunkHit, map[string]int, error) {
	k := c.K
	tries := c.Restrictions()
	// The first combination that matches leads; when it holds fewer than k hits,
	// the next (less restricted) ones fill the remaining places, each ranked after
	// the previous (a person or date matched in two chunks must not leave search
	// with two hits when the store says the query's words elsewhere).
	var out []abi.ChunkHit
	outLevel := map[string]int{}
	for i, f := range tries {
		restricted := i < len(tries)-1
		hits, level, err := c.rankCited(ctx, f, restricted)
		if err != nil {
			return nil, nil, err
		}
		// Issue 30 item 2: a chunk may come again within one try (a turn ranked on
		// its own), not again in a later try.
		shown := make(map[string]bool, len(outLevel))
		for id := range outLevel {
			shown[id] = true
		}
		for _, h := range hits {
			if len(out) == k {
				break
			}
			if shown[h.ID] {
				continue
			}
			l, ok := level[h.ID]
			if !ok {
				l = FillLevel + 1 // a chunk following a hit: after the literal evidence
			}
			outLevel[h.ID] = l
			out = append(out, h)
		}
		if len(out) >= k {
			break
		}
	}
	if out == nil {
		out = []abi.ChunkHit{}
	}
	for id, l := range outLevel {
		if l == FillLevel+1 {
			delete(outLevel, id)
		}
	}
	return out, outLevel, nil
}

// Restrictions are the filters search tries, most specific first: the people and
// the date the query names together, each alone, then none.
func (c *Call) Restrictions() []index.Filter {
	pq := &c.Query
	var timeF, entF index.Filter
	if c.HasTime {
		timeF = index.Filter{From: pq.From, To: pq.To}
	}
	if c.HasEnt {
		entF = index.Filter{EntityIDs: c.Entities, Names: pq.Names}
	}
	switch {
	case c.HasEnt && c.HasTime:
		return []index.Filter{{EntityIDs: c.Entities, Names: pq.Names, From: pq.From, To: pq.To}, entF, timeF, {}}
	case c.HasEnt:
		return []index.Filter{entF, {}}
	case c.HasTime:
		return []index.Filter{timeF, {}}
	default:
		return []index.Filter{{}}
	}
}

// rankCited is the candidates stage under one filter f (with the scoring stage
// ordering a plain keyword query's levels by message), then the conversation-aware
// ordering and citations.
func (c *Call) rankCited(ctx context.Context, f index.Filter, restricted bool) ([]abi.ChunkHit, map[string]int, error) {
	k, terms, all := c.K, c.Terms, c.All
	var order func([]abi.ChunkHit) ([]abi.ChunkHit, error)
	if !c.HasTime && !c.HasEnt {
		// A plain keyword query (no person, no date) ranks by message.
		order = func(hs []abi.ChunkHit) ([]abi.ChunkHit, error) {
			return ByMessage(ctx, c.Msgs, c.St.Stats().Chunks, hs, terms)
		}
	}
	hits, level, err := Candidates(ctx, c.P, c.St, terms, all, f, restricted, k, c.SnipTerms, order)
	if err != nil {
		return nil, nil, err
	}
	if len(hits) == 0 {
		return nil, level, nil
	}
	// A plain keyword query (no person, no date) cites the messages that say at
	// least MinCiteWords of its words when any does: a message matching one word
	// (often only its subject or an address) is rarely what was asked for.
	minCite := 1
	if !c.HasTime && !c.HasEnt && len(terms) >= 2 {
		minCite = c.P.MinCiteWords
	}
	cited := map[string]bool{}
	if HasChat(hits) && len(all) > 0 {
		// Conversations: rank and cite by turn (citation.go).
		nexts, err := c.St.Following(ctx, hits)
		if err != nil {
			return nil, nil, err
		}
		next := make([]abi.ChunkHit, len(nexts))
		for i, n := range nexts {
			next[i] = n.ChunkHit
			next[i].Snippet = nearSnippet(n.Text, c.SnipTerms)
		}
		if hits, cited, err = OrderByTurns(ctx, c.P, c.Msgs, append(hits, next...), level, all, minCite, c.St.Stats().Chunks, c.Query.Raw, c.Query.Speakers); err != nil {
			return nil, nil, err
		}
		hits = DemoteDuplicates(hits)
	}
	if len(hits) > k {
		hits = hits[:k]
	}
	var rest []int
	var sub []abi.ChunkHit
	for j, h := range hits {
		if !cited[h.ID] {
			rest = append(rest, j)
			sub = append(sub, h)
		}
	}
	if err := CiteHits(ctx, c.P, c.Msgs, sub, StemsOf(terms), c.Query.Names, minCite); err != nil {
		return nil, nil, err
	}
	for x, j := range rest {
		hits[j] = sub[x]
	}
	return hits, level, nil
}
