package memtree

import (
	"context"
	"database/sql"

	"fmt"
	"log/slog"
	"math"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Recall finds chunks by meaning. Offline (no embedder, or the embedder failed) it
// fuses, by weighted reciprocal rank, bm25 over chunks, a coordination ranking over the query words'
// WordNet expansions, and one over the words the store itself associates with rare
// query words (recall_assoc.go); the less literal evidence the query has in the
// store, the more the last two count (Mode "lexical"). Recall's list begins with
// exactly search's for the same k (same hits, cited refs and order) as far as the
// query's literal evidence reaches: when it is full, search's whole list
// (conversation-aware, turnrank.go) leads and the fusion only adds below it; when it
// is partial, a share of search's hits that say the rarer query words leads and the
// rest of them is fused; the chunks saying only common query words come after the
// fusion. Near-duplicate hits are moved below distinct ones. With an
// embedder it fuses those with a vector scan, weighted by the literal evidence the
// query lacks, under the same rule (Mode "hybrid"; "semantic" when only vectors
// found anything).
func (s *Store) Recall(ctx context.Context, req abi.RecallRequest) (*abi.RecallResult, error) {
	if err := checkK("recall", req.K); err != nil {
		return nil, err
	}
	query := strings.TrimSpace(req.Query)
	if query == "" {
		return nil, fmt.Errorf("recall: empty query; describe what to remember: %w", ErrInvalid)
	}
	db, err := s.readers(ctx)
	if err != nil {
		return nil, err
	}
	res := &abi.RecallResult{Chunks: []abi.ChunkHit{}, Mode: abi.ModeLexical}
	if db == nil {
		res.Hint = EmptyHint
		return res, nil
	}
	snap, err := s.snapshot(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	if snap.n == 0 {
		res.Hint = EmptyHint
		return res, nil
	}
	ctx = withFTSMemo(ctx)
	lead, tail, lists, stems, rho, err := s.lexicalLists(ctx, db, snap, query, req.K)
	if err != nil {
		return nil, fmt.Errorf("recall %q: %w", query, err)
	}
	if emb := s.currentEmbedder(); emb != nil {
		vl, err := s.vectorList(ctx, db, emb, query)
		switch {
		case err != nil:
			slog.Warn("recall: embedder failed, using offline lexical recall", "model", emb.Model(), "err", err)
			res.Note = fmt.Sprintf("embedder %s failed (%v); fell back to offline lexical recall", emb.Model(), err)
		case vl.Hits == nil:
			res.Note = fmt.Sprintf("no vectors stored for model %s yet; run ingest with the embedder configured to embed the store. Used offline lexical recall", emb.Model())
		default:
			lexicalFound := false
			for _, l := range lists {
				lexicalFound = lexicalFound || len(l.Hits) > 0
			}
			// Vectors weigh less the more literal evidence the query has, as the
			// expansions do: a query whose words the store says in many chunks is
			// bm25's. Measured with USE-lite (weight 1 → 1 − 0.85ρ), recall@10 on
			// corpus seeds 1/2/3: keyword 0.850/0.837/0.782 → 0.921/0.878/0.815,
			// entity 0.810/0.914/0.773 → 0.835/0.901/0.798, temporal
			// 0.812/0.806/0.800 → 0.837/0.830/0.810, related and paraphrase within
			// ±0.01. Offline, seed 1 scores keyword 0.911, entity 0.848: a weak
			// embedder no longer makes literal recall worse than none.
			vl.Weight = knobs.Vectors * (knobs.LitFloor + (1-knobs.LitFloor)*(1-rho))
			lists = append(lists, vl)
			res.Mode = abi.ModeHybrid
			if !lexicalFound {
				res.Mode = abi.ModeSemantic
			}
		}
	}
	res.Chunks = retrieval.LeadThenFuse(lead, lists, tail, req.K, retrieval.DemoteDuplicates)
	// Hits search found keep its citations (conversation-aware, turnrank.go); the
	// others cite the messages saying a query word or one of its expansions.
	inLead := map[string]bool{}
	for _, h := range lead {
		inLead[h.ID] = true
	}
	fromSearch := map[string]bool{}
	for _, l := range append(lists, retrieval.List{Hits: tail}) {
		if l.Name == "chunks" || l.Name == "" {
			for _, h := range l.Hits {
				fromSearch[h.ID] = true
			}
		}
	}
	var idx []int
	var sub []abi.ChunkHit
	for i, h := range res.Chunks {
		if !inLead[h.ID] && (!fromSearch[h.ID] || h.SourceKind != KindChat) {
			idx = append(idx, i)
			sub = append(sub, h)
		}
	}
	if err := retrieval.CiteHits(ctx, newMessages(db), sub, stems, nil, 1); err != nil {
		return nil, fmt.Errorf("recall %q: %w", query, err)
	}
	for x, i := range idx {
		res.Chunks[i] = sub[x]
	}
	return s.finishRecall(ctx, db, res)
}

// namedWords gives the folded words of query that are capitalised within a
// sentence or quoted: names and titles.
func namedWords(query string) map[string]bool {
	out := map[string]bool{}
	start, quoted := true, false
	for _, f := range strings.Fields(query) {
		open := strings.HasPrefix(f, "\"") || strings.HasPrefix(f, "“")
		w := strings.TrimLeft(f, "\"“'(")
		r := []rune(w)
		if len(r) > 0 && (quoted || open || (!start && unicode.IsUpper(r[0]))) {
			for _, x := range words(w) {
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

// lexicalLists builds the offline rankings: chunk bm25 (with search's people/date
// understanding), weighted coordination over the
// query words and their lexical expansions, and weighted coordination over the
// words the store associates with the query words (recall_assoc.go), which leaves
// out the chunks that say a query word themselves. rho is the query's literal
// evidence in [0, 1].
func (s *Store) lexicalLists(ctx context.Context, db *sql.DB, snap *dfCache, query string, k int) (lead, tail []abi.ChunkHit, lists []retrieval.List, stems []string, rho float64, err error) {
	// Search's own list for the same k: the same hits, citations and order that
	// memory.search returns for this query.
	hits, level, err := s.search(ctx, db, snap, query, k)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	lead, tail = retrieval.LiteralLead(hits, level)
	evidence := 0
	for _, h := range lead {
		if l, ok := level[h.ID]; ok && l < retrieval.FillLevel {
			evidence++
		}
	}
	pq := retrieval.ParseQuery(query, s.reader(db, snap))
	// Literal evidence: a query whose words the store lacks or says in few chunks is
	// worded unlike the store's text; then recall leans on expansions and associations.
	litRef := min(knobs.LitRef, max(1, knobs.LitShare*float64(snap.n)))
	if evidence >= k && float64(evidence) < litRef {
		// A short list (small k) shows fewer chunks than the evidence measure
		// needs: count the chunks saying one of the rarer query words.
		all, err := retrieval.QueryTerms(ctx, s.reader(db, snap), pq.Text)
		if err != nil {
			return nil, nil, nil, nil, 0, err
		}
		if ts := retrieval.PruneFrequent(all, snap.n); len(ts) > 0 {
			ids, err := matchRowids(ctx, db, retrieval.OrExpr(ts), int(math.Ceil(litRef)))
			if err != nil {
				return nil, nil, nil, nil, 0, err
			}
			evidence = max(evidence, len(ids))
		}
	}
	rho = math.Min(1, float64(evidence)/litRef)
	said := rho // the share of the chunks the query's words are said in that makes them evidence
	names := namedWords(query)
	nw, known := 0, 0
	counted := map[string]bool{}
	for _, w := range words(pq.Text) {
		// Numbers are left out too: a year or a day is matched through the
		// chunks' times, not their words.
		if stopwords[w] || questionWords[w] || len(w) < 2 || isDigits(w) || counted[stem(w)] {
			continue
		}
		counted[stem(w)] = true
		nw++
		df, err := s.docFreq(ctx, db, stem(w))
		if err != nil {
			return nil, nil, nil, nil, 0, err
		}
		if df > 0 {
			known++
		} else if names[w] {
			// A name or title the store never says ("Vivaldi", "Dr. Seuss") has no
			// paraphrase to find: it is no sign the query is worded unlike the store.
			nw--
		}
	}
	// A store that says few distinct words lacks most everyday words, so a word it
	// does not say is weak evidence that the query is worded unlike it: the
	// words' absence counts in proportion to the store's vocabulary, up to
	// knobs.EverydayWords.
	vocab, err := s.storeVocab(ctx, db, snap.gen)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	absence := float64(vocab) / float64(knobs.EverydayWords)
	unknown := 0.0 // share of the query's words the store never says
	if nw > 0 {
		f := 1 - absence*float64(nw-known)/float64(nw)
		if f >= knobs.Anchored {
			// At most one word in four the store never says: the query is anchored
			// in the store's words, and the odd word is more likely phrasing or a
			// misspelling ("partake", "educaton") than the topic.
			f = 1
		}
		rho *= f * f
		unknown = 1 - f
	}
	if pq.To != 0 {
		// A time the query names restricts search's list to it; the other lists
		// know no time, so search's list leads.
		rho = 1
	}
	if len(pq.Entities) > 0 {
		// A person or address the store knows: the entity index is exact evidence
		// (recall entity 0.798 → 0.848).
		rho = 1
	}
	var strong []abi.ChunkHit
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
		n := int(math.Floor(said * said * rho * float64(len(lead))))
		strong = lead[n:]
		lead = lead[:n]
		lists = append(lists, retrieval.List{Name: "chunks", Weight: knobs.Chunks * (knobs.LitFloor + (1-knobs.LitFloor)*rho), Hits: strong})
	}

	terms, err := retrieval.QueryTerms(ctx, s.reader(db, snap), pq.Text)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	if nw >= 2 && known == nw && len(terms) >= 2 {
		// Chunks that say every query word keep a place however little literal
		// evidence the query has overall (a rare phrase such as "rotation handover"
		// otherwise drowned in expansions and associations).
		exact, err := s.reader(db, snap).Match(ctx, retrieval.Match{Expr: retrieval.AndExpr(terms), Estimate: retrieval.AndEstimate(terms), Limit: knobs.ExactN})
		if err != nil {
			return nil, nil, nil, nil, 0, err
		}
		if len(exact) > 0 {
			lists = append(lists, retrieval.List{Name: "exact", Weight: knobs.Exact, Hits: exact})
		}
	}
	terms = retrieval.PruneFrequent(terms, snap.n)
	stems = retrieval.StemsOf(terms)
	if rho >= 1 {
		// Full literal evidence: the words are the store's own; expansions were
		// measured to add little here (keyword 0.862 → 0.859, temporal 0.845 → 0.837)
		// and cost a third
		// of recall's time at 100k records.
		return lead, tail, lists, stems, rho, nil
	}
	groups, err := s.expansionGroups(ctx, db, snap, s.currentExpander(), pq.Text)
	if err != nil {
		return nil, nil, nil, nil, 0, err
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
		var skip map[int64]bool
		if len(terms) > 0 && float64(evidence) < knobs.LitRef {
			if skip, err = rowidSet(ctx, db, retrieval.OrExpr(terms)); err != nil {
				return nil, nil, nil, nil, 0, err
			}
		}
		eh, err := setRank(ctx, db, eg, skip, false, knobs.RecallDepth)
		if err != nil {
			return nil, nil, nil, nil, 0, err
		}
		lists = append(lists, retrieval.List{Name: "expansion", Weight: knobs.Expansion * (1 + knobs.ExpBoost*(1-rho) + knobs.ExpUnknown*unknown), Hits: eh})
	}
	if rho < 1 && len(groups) > 0 {
		own := map[string]bool{}
		for _, t := range terms {
			own[t.Stem] = true
		}
		ag, members, err := s.associationGroups(ctx, db, snap, groups, own)
		if err != nil {
			return nil, nil, nil, nil, 0, err
		}
		if len(ag) > 0 {
			for _, g := range ag {
				for _, a := range g {
					stems = append(stems, a.stems...)
				}
			}
			// Chunks that say an associated word themselves are the other lists' job.
			skip, err := rowidSet(ctx, db, strings.Join(members, " OR "))
			if err != nil {
				return nil, nil, nil, nil, 0, err
			}
			ah, err := setRank(ctx, db, ag, skip, true, knobs.RecallDepth)
			if err != nil {
				return nil, nil, nil, nil, 0, err
			}
			w := knobs.Assoc * (1 - rho) * math.Pow(float64(len(ag))/float64(len(groups)), knobs.Cover)
			lists = append(lists, retrieval.List{Name: "association", Weight: w, Hits: ah})
		}
	}
	return lead, tail, lists, stems, rho, nil
}
