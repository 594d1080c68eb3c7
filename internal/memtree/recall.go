package memtree

import (
	"context"
	"database/sql"
	"encoding/json"

	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Recall fusion parameters (weighted reciprocal rank fusion).
const (
	rrfK        = 60.0
	recallDepth = 50 // candidates taken from each ranked list
	wVectors    = 1.0
)

// tune holds the fusion weights of the offline lists (chunk bm25, summaries,
// expansion, feedback), chosen on the generated corpus: weights 1/0.5/1/0.8 gave
// recall keyword 0.81; 3/0.3/1/0.5 gives 0.875 with paraphrase and related unchanged
// within noise (0.02-0.09).
var tune = struct{ chunks, summaries, expansion, feedback float64 }{3.0, 0.3, 1.0, 0.5}

// Recall finds chunks by meaning. Offline (no embedder, or the embedder failed) it
// fuses bm25 over chunks, bm25 over summaries (expanded to their best chunks) and a
// bm25 query over the lexical expansion of the query words (Mode "lexical"). With an
// embedder it fuses bm25 with an exact vector scan (Mode "hybrid"; "semantic" when
// only vectors found anything).
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
	lists, stems, err := s.lexicalLists(ctx, db, snap, query)
	if err != nil {
		return nil, fmt.Errorf("recall %q: %w", query, err)
	}
	if emb := s.currentEmbedder(); emb != nil {
		vl, err := s.vectorList(ctx, db, emb, query)
		switch {
		case err != nil:
			slog.Warn("recall: embedder failed, using offline lexical recall", "model", emb.Model(), "err", err)
			res.Note = fmt.Sprintf("embedder %s failed (%v); fell back to offline lexical recall", emb.Model(), err)
		case vl.hits == nil:
			res.Note = fmt.Sprintf("no vectors stored for model %s yet; run ingest with the embedder configured to embed the store. Used offline lexical recall", emb.Model())
		default:
			lexicalFound := false
			for _, l := range lists {
				lexicalFound = lexicalFound || len(l.hits) > 0
			}
			lists = append(lists, vl)
			res.Mode = abi.ModeHybrid
			if !lexicalFound {
				res.Mode = abi.ModeSemantic
			}
		}
	}
	res.Chunks = fuse(lists, req.K)
	if err := citeHits(ctx, db, res.Chunks, stems, nil); err != nil {
		return nil, fmt.Errorf("recall %q: %w", query, err)
	}
	return res, nil
}

// rankedList is one ranking to fuse.
type rankedList struct {
	name   string
	weight float64
	hits   []abi.ChunkHit
}

// fuse combines lists by weighted reciprocal rank; each hit's Score is its fused score.
func fuse(lists []rankedList, k int) []abi.ChunkHit {
	type acc struct {
		hit   abi.ChunkHit
		score float64
	}
	byID := map[string]*acc{}
	var order []string
	for _, l := range lists {
		for r, h := range l.hits {
			a, ok := byID[h.ID]
			if !ok {
				a = &acc{hit: h}
				byID[h.ID] = a
				order = append(order, h.ID)
			} else if a.hit.Snippet == "" {
				a.hit.Snippet = h.Snippet
			}
			a.score += l.weight / (rrfK + float64(r+1))
		}
	}
	out := make([]abi.ChunkHit, 0, len(order))
	for _, id := range order {
		a := byID[id]
		a.hit.Score = a.score
		out = append(out, a.hit)
	}
	sortHits(out)
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// lexicalLists builds the offline rankings: chunk bm25 (with search's people/date
// understanding), summary bm25 expanded to chunks, weighted coordination over the
// query words and their lexical expansions, and pseudo-relevance feedback from the
// best of those.
func (s *Store) lexicalLists(ctx context.Context, db *sql.DB, snap *dfCache, query string) ([]rankedList, []string, error) {
	var lists []rankedList
	hits, err := s.search(ctx, db, snap, query, recallDepth)
	if err != nil {
		return nil, nil, err
	}
	lists = append(lists, rankedList{name: "chunks", weight: tune.chunks, hits: hits})

	pq := parseQuery(query, snap)
	terms, err := s.queryTerms(ctx, db, pq.Text)
	if err != nil {
		return nil, nil, err
	}
	terms = pruneFrequent(terms, snap.n)
	if len(terms) > 0 && tune.summaries > 0 {
		sh, err := summaryChunks(ctx, db, orExpr(terms), terms, recallDepth)
		if err != nil {
			return nil, nil, err
		}
		lists = append(lists, rankedList{name: "summaries", weight: tune.summaries, hits: sh})
	}
	groups, err := s.expansionGroups(ctx, db, snap, s.currentExpander(), pq.Text)
	if err != nil {
		return nil, nil, err
	}
	eh, top, err := rankGroups(ctx, db, groups, recallDepth)
	if err != nil {
		return nil, nil, err
	}
	lists = append(lists, rankedList{name: "expansion", weight: tune.expansion, hits: eh})
	stems := stemsOf(terms)
	for _, g := range groups {
		for _, t := range g.terms {
			stems = append(stems, t.stems...)
		}
	}
	if tune.feedback > 0 && len(top) > 0 {
		fb, err := s.feedbackGroups(ctx, db, snap, top, groups)
		if err != nil {
			return nil, nil, err
		}
		fh, _, err := rankGroups(ctx, db, fb, recallDepth)
		if err != nil {
			return nil, nil, err
		}
		lists = append(lists, rankedList{name: "feedback", weight: tune.feedback, hits: fh})
		for _, g := range fb {
			for _, t := range g.terms {
				stems = append(stems, t.stems...)
			}
		}
	}
	return lists, stems, nil
}

// summaryHits is how many summaries recall expands.
const summaryHits = 10

// summaryChunks ranks summaries by bm25 for expr and expands each hit, in summary
// order, to its two best chunks for expr (one bm25 query over all their leaves).
func summaryChunks(ctx context.Context, db *sql.DB, expr string, _ []term, limit int) ([]abi.ChunkHit, error) {
	rows, err := db.QueryContext(ctx, `SELECT s.leaf_ids_json FROM summaries_fts
		JOIN summaries s ON s.rowid = summaries_fts.rowid WHERE summaries_fts MATCH ? ORDER BY rank LIMIT ?`, expr, summaryHits)
	if err != nil {
		return nil, fmt.Errorf("summary query: %w", err)
	}
	var groups [][]string
	var all []any
	for rows.Next() {
		var leaves string
		if err := rows.Scan(&leaves); err != nil {
			rows.Close()
			return nil, fmt.Errorf("summary query: %w", err)
		}
		var ids []string
		if err := json.Unmarshal([]byte(leaves), &ids); err != nil {
			rows.Close()
			return nil, fmt.Errorf("summary query: damaged leaf list: %w", err)
		}
		if len(ids) > 200 {
			ids = ids[:200] // a very high-level node: its first leaves stand for it
		}
		groups = append(groups, ids)
		for _, id := range ids {
			all = append(all, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summary query: %w", err)
	}
	if len(all) == 0 {
		return nil, nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(all)), ",")
	ranked, err := ftsChunks(ctx, db, expr, filter{where: []string{"c.id IN (" + ph + ")"}, args: all}, len(all), nil)
	if err != nil {
		return nil, err
	}
	pos := map[string]int{}
	for i, h := range ranked {
		pos[h.ID] = i
	}
	seen := map[string]bool{}
	var out []abi.ChunkHit
	for _, ids := range groups {
		var best []int
		for _, id := range ids {
			if p, ok := pos[id]; ok && !seen[id] {
				best = append(best, p)
			}
		}
		sort.Ints(best)
		for i := 0; i < len(best) && i < 2 && len(out) < limit; i++ {
			h := ranked[best[i]]
			seen[h.ID] = true
			out = append(out, h)
		}
	}
	return out, nil
}
