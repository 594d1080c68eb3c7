package retrieval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The recall pipeline: search's list (search.go), then the offline meaning
// signals (expansions, expansion.go; associations, associations.go) and the
// store's vectors, fused under the literal lead (fusion.go, levels.go); hits not
// from search cite the messages saying a query word or an expansion (cite.go).

// Recall ranks chunks for query by meaning (see memtree's Store.Recall): the
// hits, the mode (abi.ModeLexical, ModeHybrid or ModeSemantic) and a note when
// the vectors could not be used.
func (e *Engine) Recall(ctx context.Context, st index.Backend, query string, k int) (hits []abi.ChunkHit, mode, note string, err error) {
	mode = abi.ModeLexical
	c, err := e.NewCall(ctx, st, query, k)
	if err != nil {
		return nil, "", "", err
	}
	lead, tail, lists, stems, rho, err := c.LexicalLists(ctx)
	if err != nil {
		return nil, "", "", err
	}
	vx, _ := st.(index.Vectors)
	embedded := false // the embedder gave the query's vector
	if model, ok := vectorModel(vx); ok {
		vh, err := vx.VectorList(ctx, query, e.p.RecallDepth)
		embedded = err == nil
		vl := List{Name: "vectors", Weight: 1, Hits: cut(vh, analysis.Words(query))}
		switch {
		case errors.Is(err, index.ErrEmbedRefused):
			note = "the query is not text of the client's arguments, so it was not sent to the embedder " + model + "; used offline lexical recall"
		case err != nil:
			slog.Warn("recall: embedder failed, using offline lexical recall", "model", model, "err", err)
			note = fmt.Sprintf("embedder %s failed (%v); fell back to offline lexical recall", model, err)
		case vl.Hits == nil:
			note = fmt.Sprintf("no vectors stored for model %s yet; run ingest with the embedder configured to embed the store. Used offline lexical recall", model)
		default:
			lexicalFound := false
			for _, l := range lists {
				lexicalFound = lexicalFound || len(l.Hits) > 0
			}
			// Vectors weigh less the more literal evidence the query has: a query
			// whose words the store says in many chunks is bm25's. With none, the
			// list weighs plain reciprocal-rank fusion's 1, as the expansion and
			// exact lists do (RATIONALE.md, fusion).
			vl.Weight = 1 - rho
			lists = append(lists, vl)
			mode = abi.ModeHybrid
			if !lexicalFound {
				mode = abi.ModeSemantic
			}
		}
	}
	hits = LeadThenFuse(&e.p, lead, lists, tail, k, DemoteDuplicates)
	// Hits search found keep its citations (conversation-aware, citation.go); the
	// others cite the messages saying a query word or one of its expansions.
	inLead := map[string]bool{}
	for _, h := range lead {
		inLead[h.ID] = true
	}
	fromSearch := map[string]bool{}
	for _, l := range append(lists, List{Hits: tail}) {
		if l.Name == "chunks" || l.Name == "" {
			for _, h := range l.Hits {
				fromSearch[h.ID] = true
			}
		}
	}
	var idx []int
	var sub []abi.ChunkHit
	for i, h := range hits {
		if !inLead[h.ID] && (!fromSearch[h.ID] || h.SourceKind != KindChat) {
			idx = append(idx, i)
			sub = append(sub, h)
		}
	}
	if err := CiteHits(ctx, &e.p, c.Msgs, sub, stems, nil, 1); err != nil {
		return nil, "", "", err
	}
	for x, i := range idx {
		hits[i] = sub[x]
	}
	if cv, ok := st.(index.ChunkVectors); ok && embedded {
		// The embedder's meaning list (meaning.go): below the hits that say a
		// query word, the named person's chunks in the embedder's order.
		ml, err := c.embedderMeaningList(ctx, cv)
		if err != nil {
			return nil, "", "", err
		}
		hits = meaningFirst(hits, ml, c.wordLead(hits), k)
	} else if w := e.p.MeaningRecall * (1 - rho); w > 0 {
		// The meaning list weighs as little as the query's literal evidence is
		// strong, and never moves the literal lead, as the other lists.
		ml, err := c.meaningList(ctx)
		if err != nil {
			return nil, "", "", err
		}
		hits = fuseMeaning(&e.p, hits, ml, w, len(lead), k)
	}
	return hits, mode, note, nil
}

// NamedWords gives the folded words of query that are capitalised within a
// sentence or quoted: names and titles.
func NamedWords(query string) map[string]bool {
	out := map[string]bool{}
	start, quoted := true, false
	for _, f := range strings.Fields(query) {
		open := strings.HasPrefix(f, "\"") || strings.HasPrefix(f, "“")
		w := strings.TrimLeft(f, "\"“'(")
		r := []rune(w)
		if len(r) > 0 && (quoted || open || (!start && unicode.IsUpper(r[0]))) {
			for _, x := range analysis.Words(w) {
				out[x] = true
			}
		}
		if open {
			quoted = true
		}
		if strings.HasSuffix(strings.TrimRight(f, "?!.,;:"), "\"") || strings.HasSuffix(strings.TrimRight(f, "?!.,;:"), "”") {
			quoted = false
		}
		start = strings.ContainsAny(f[len(f)-1:], ".?!") && !strings.HasSuffix(f, "Dr.")
	}
	return out
}

// questionWords are words of a question's form rather than of what it asks about
// ("how does she describe ...", "according to him", "what kind of ..."): a store
// not saying them is no sign that the query is worded unlike the store, so the
// literal evidence measure leaves them out.
var questionWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`according describe described describes describing
	kind kinds type types sort sorts example examples mention mentioned mentions
	specific specifically particular particularly likely probably reason reasons`) {
		m[w] = true
	}
	return m
}()

// LexicalLists builds the offline rankings for query (see Call.LexicalLists).
func (e *Engine) LexicalLists(ctx context.Context, st index.Backend, query string, k int) (lead, tail []abi.ChunkHit, lists []List, stems []string, rho float64, err error) {
	c, err := e.NewCall(ctx, st, query, k)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	return c.LexicalLists(ctx)
}

// LexicalLists builds the offline rankings: chunk bm25 (search's list, with its
// people/date understanding), the chunks saying every query word, weighted
// coordination over the query words and their lexical expansions, and weighted
// coordination over the words the store associates with the query words
// (associations.go), which leaves out the chunks that say a query word
// themselves. lead is the part of search's list that leads recall as it is, tail
// what follows the fusion; stems are what recall's own hits cite; rho is the
// query's literal evidence in [0, 1].
func (c *Call) LexicalLists(ctx context.Context) (lead, tail []abi.ChunkHit, lists []List, stems []string, rho float64, err error) {
	// Search's own list for the same k: the same hits, citations and order that
	// memory.search returns for this query.
	hits, level, err := c.Search(ctx)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	c.level = level
	lead, tail = LiteralLead(hits, level)
	ev, err := c.literalEvidence(ctx, lead, level)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	rho = ev.rho
	if rho >= 1 {
		// Full literal evidence: search's list leads whole (with its
		// conversation-aware citations); the other lists only fill what it leaves.
		lead, tail = hits, nil
	} else {
		// Partial evidence: a share of search's literal prefix leads as it is, the
		// rest of it is fused with the other lists. The share is said² × rho
		// (said³ × known²): words said in few chunks (the generated corpus's related
		// queries, words said in passing) or a query the store partly does not say
		// (its paraphrase queries) make the literal hits weak evidence. Measured
		// (recall@10 / MRR@10): a lead of rho × the prefix cost related 0.426 → 0.394
		// and paraphrase 0.229 → 0.111; said³ alone, paraphrase → 0.126; said² × rho:
		// paraphrase 0.229 / 0.174, related 0.419 / 0.391, keyword, entity and
		// temporal unchanged, and LoCoMo recall 62.5/68.6/74.5/77.6 →
		// 62.6/68.7/74.6/77.9 (search 62.9/69.0/74.7/77.7).
		n := int(math.Floor(ev.said * ev.said * rho * float64(len(lead))))
		strong := lead[n:]
		lead = lead[:n]
		lists = append(lists, List{Name: "chunks", Weight: c.P.Chunks * rho, Hits: strong})
	}
	exact, err := c.exactList(ctx, ev)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	lists = append(lists, exact...)
	stems = StemsOf(c.Terms)
	if rho >= 1 {
		// Full literal evidence: the words are the store's own; expansions were
		// measured to add little here (keyword 0.862 → 0.859, temporal 0.845 → 0.837)
		// and cost a third of recall's time at 100k records.
		return lead, tail, lists, stems, rho, nil
	}
	meaning, more, err := c.meaningLists(ctx, ev)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	return lead, tail, append(lists, meaning...), append(stems, more...), rho, nil
}

// vectorModel is vx's embedder model, ok false when st keeps no vectors or has
// no embedder configured.
func vectorModel(vx index.Vectors) (string, bool) {
	if vx == nil {
		return "", false
	}
	return vx.VectorModel()
}

// evidence is the query's literal evidence in the store, as recall weighs it.
type evidence struct {
	hits      int     // chunks of search's list saying a rarer query word (or more, counted)
	rho       float64 // the evidence in [0, 1]: hits against LitRef, the words the store lacks, a person or date named
	said      float64 // hits against LitRef alone
	unknown   float64 // share of the query's words the store never says
	nw, known int     // the query's content words, and those the store says
}

// literalEvidence measures how much of the query the store says literally: a
// query whose words the store lacks or says in few chunks is worded unlike the
// store's text; then recall leans on expansions and associations. lead is search's
// literal prefix, level its evidence levels.
func (c *Call) literalEvidence(ctx context.Context, lead []abi.ChunkHit, level map[string]int) (evidence, error) {
	st, pq, k := c.St, &c.Query, c.K
	var ev evidence
	for _, h := range lead {
		if l, ok := level[h.ID]; ok && l < FillLevel {
			ev.hits++
		}
	}
	litRef := min(c.P.LitRef, max(1, c.P.LitShare*float64(st.Stats().Chunks)))
	if ev.hits >= k && float64(ev.hits) < litRef {
		// A short list (small k) shows fewer chunks than the evidence measure
		// needs: count the chunks saying one of the rarer query words.
		if ts := c.Terms; len(ts) > 0 {
			ids, err := st.Postings(ctx, []index.Query{termQuery(index.Any, ts)}, int(math.Ceil(litRef)))
			if err != nil {
				return ev, err
			}
			ev.hits = max(ev.hits, len(ids))
		}
	}
	ev.rho = math.Min(1, float64(ev.hits)/litRef)
	ev.said = ev.rho // the share of the chunks the query's words are said in that makes them evidence
	names := NamedWords(pq.Raw)
	counted := map[string]bool{}
	for _, w := range analysis.Words(pq.Text) {
		// Numbers are left out too: a year or a day is matched through the
		// chunks' times, not their words.
		if analysis.Stopwords[w] || questionWords[w] || len(w) < 2 || IsDigits(w) || counted[analysis.Stem(w)] {
			continue
		}
		counted[analysis.Stem(w)] = true
		ev.nw++
		df, err := st.DocFreq(ctx, w)
		if err != nil {
			return ev, err
		}
		if df > 0 {
			ev.known++
		} else if names[w] {
			// A name or title the store never says ("Vivaldi", "Dr. Seuss") has no
			// paraphrase to find: it is no sign the query is worded unlike the store.
			ev.nw--
		}
	}
	// A store that says few distinct words lacks most everyday words, so a word it
	// does not say is weak evidence that the query is worded unlike it: the
	// words' absence counts in proportion to the store's vocabulary, up to
	// EverydayWords.
	vocab, err := st.Vocabulary(ctx, c.P.EverydayWords)
	if err != nil {
		return ev, err
	}
	absence := float64(vocab) / float64(c.P.EverydayWords)
	if ev.nw > 0 {
		f := 1 - absence*float64(ev.nw-ev.known)/float64(ev.nw)
		if f >= c.P.Anchored {
			// At most one word in four the store never says: the query is anchored
			// in the store's words, and the odd word is more likely phrasing or a
			// misspelling ("partake", "educaton") than the topic.
			f = 1
		}
		ev.rho *= f * f
		ev.unknown = 1 - f
	}
	if pq.To != 0 {
		// A time the query names restricts search's list to it; the other lists
		// know no time, so search's list leads.
		ev.rho = 1
	}
	if len(pq.Entities) > 0 {
		// A person or address the store knows: the entity index is exact evidence
		// (recall entity 0.798 → 0.848).
		ev.rho = 1
	}
	return ev, nil
}

// exactList is the list of the chunks saying every query word (RecallDepth of
// them, best first, as every list), when the store says every one of them: they
// keep a place however little literal evidence the query has overall (a rare
// phrase such as "rotation handover" otherwise drowned in expansions and
// associations).
func (c *Call) exactList(ctx context.Context, ev evidence) ([]List, error) {
	terms := c.All
	if ev.nw < 2 || ev.known != ev.nw || len(terms) < 2 {
		return nil, nil
	}
	exact, err := match(ctx, c.St, index.Match{Query: termQuery(index.All, terms), Limit: c.P.RecallDepth}, nil)
	if err != nil || len(exact) == 0 {
		return nil, err
	}
	return []List{{Name: "exact", Weight: 1, Hits: exact}}, nil
}

// meaningLists are recall's offline meaning signals under partial literal
// evidence: the expansion list (expansion.go) and the association list
// (associations.go), with the stems their hits cite.
func (c *Call) meaningLists(ctx context.Context, ev evidence) (lists []List, stems []string, err error) {
	st, terms, rho := c.St, c.Terms, ev.rho
	groups, err := expansionGroups(ctx, c.P, st, c.Query.Text)
	if err != nil {
		return nil, nil, err
	}
	var eg [][]wterm
	for _, g := range groups {
		var ws []wterm
		for _, t := range g.terms {
			ws = append(ws, wterm{phrase: t.phrase, stems: t.stems, weight: t.weight})
			stems = append(stems, t.stems...)
		}
		eg = append(eg, ws)
	}
	if len(eg) > 0 {
		// With little literal evidence, the chunks that say a query word are the bm25
		// list's job: this list then holds only what matches through expansions.
		var skip map[index.Key]bool
		if len(terms) > 0 && float64(ev.hits) < c.P.LitRef {
			if skip, err = keySet(ctx, c.P, st, termQuery(index.Any, terms)); err != nil {
				return nil, nil, err
			}
		}
		eh, err := setRank(ctx, c.P, st, eg, skip, c.P.RecallDepth)
		if err != nil {
			return nil, nil, err
		}
		// The expansion list is the unit the other lists' weights are relative to
		// (fusion ranks by weighted reciprocal rank, so one weight is free), raised
		// by the share of query words the store never says (they match only through
		// expansions).
		lists = append(lists, List{Name: "expansion", Weight: 1 + c.P.ExpUnknown*ev.unknown, Hits: eh})
	}
	if rho < 1 && len(groups) > 0 {
		own := map[string]bool{}
		for _, t := range terms {
			own[t.Stem] = true
		}
		ag, members, err := associationGroups(ctx, c.P, st, groups, own)
		if err != nil {
			return nil, nil, err
		}
		if len(ag) > 0 {
			for _, g := range ag {
				for _, a := range g {
					stems = append(stems, a.stems...)
				}
			}
			// Chunks that say an associated word themselves are the other lists' job.
			skip, err := keySet(ctx, c.P, st, index.Query{Op: index.Any, Phrases: members})
			if err != nil {
				return nil, nil, err
			}
			ah, err := setRank(ctx, c.P, st, ag, skip, c.P.RecallDepth)
			if err != nil {
				return nil, nil, err
			}
			w := c.P.Assoc * (1 - rho) * math.Pow(float64(len(ag))/float64(len(groups)), c.P.Cover)
			lists = append(lists, List{Name: "association", Weight: w, Hits: ah})
		}
	}
	return lists, stems, nil
}
