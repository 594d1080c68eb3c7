package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Pseudo-relevance feedback: recall's meaning signal from the store itself.
//
// The first hits that say the query's rarer words (search's literal evidence) are
// taken as relevant; the words their snippets share that the query does not say,
// weighted by how many of those snippets say them and by their idf (a form of RM3
// with document presence as the relevance model), expand the query. Chunks are then
// ranked by the idf of the query words they say plus FeedbackWeight × the weights of
// the feedback words, in rowid sets (no chunk text read). The list is fused below
// the literal evidence, with the rest of search's list: a chunk that says what the
// best hits talk about (the person, the place, the thing the question only implies)
// moves up among the chunks that say only common words.

// feedbackTerm is a word the feedback snippets share, with its weight.
type feedbackTerm struct {
	term
	w float64
}

// feedbackTerms picks the expansion words from the snippets of hits (the literal
// evidence, best first): at most knobs.FeedbackTerms words said in at least
// knobs.FeedbackMinDocs of the first knobs.FeedbackDocs snippets, not query words,
// not too common to rank (MaxDFShare).
func (s *Store) feedbackTerms(ctx context.Context, db *sql.DB, snap *dfCache, hits []abi.ChunkHit, query []term) ([]feedbackTerm, error) {
	if len(hits) > knobs.FeedbackDocs {
		hits = hits[:knobs.FeedbackDocs]
	}
	if len(hits) < knobs.FeedbackMinDocs {
		return nil, nil
	}
	own := map[string]bool{}
	for _, t := range query {
		own[t.Stem] = true
	}
	docs := map[string]int{} // stem → snippets saying it
	word := map[string]string{}
	for _, h := range hits {
		seen := map[string]bool{}
		for _, w := range words(h.Snippet) {
			if stopwords[w] || questionWords[w] || len(w) < 3 || isDigits(w) {
				continue
			}
			st := stem(w)
			if own[st] || seen[st] {
				continue
			}
			seen[st] = true
			docs[st]++
			if _, ok := word[st]; !ok {
				word[st] = w
			}
		}
	}
	var cand []string
	for st, n := range docs {
		if n >= knobs.FeedbackMinDocs {
			cand = append(cand, st)
		}
	}
	sort.Strings(cand)
	limit := int(knobs.MaxDFShare*float64(snap.n)) + 1
	var out []feedbackTerm
	for _, st := range cand {
		df, err := s.docFreq(ctx, db, st)
		if err != nil {
			return nil, err
		}
		if df == 0 || df > limit {
			continue
		}
		out = append(out, feedbackTerm{term: term{Word: word[st], Stem: st, DF: df, Weight: 1},
			w: float64(docs[st]) / float64(len(hits)) * idf(snap.n, df)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].w > out[j].w })
	if len(out) > knobs.FeedbackTerms {
		out = out[:knobs.FeedbackTerms]
	}
	return out, nil
}

// feedbackRank ranks chunks by the idf of the query terms they say plus
// knobs.FeedbackWeight × the weights of the feedback terms they say, in rowid sets
// (each term's first knobs.SetRankRows matches). It returns up to limit hits, best
// first, Score set.
func feedbackRank(ctx context.Context, db *sql.DB, snap *dfCache, query []term, fb []feedbackTerm, limit int) ([]abi.ChunkHit, error) {
	var parts []string
	var args []any
	var w []float64
	for _, t := range query {
		parts = append(parts, fmt.Sprintf(`SELECT %d, rowid FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT %d)`, len(w), knobs.SetRankRows))
		args = append(args, quoteFTS(t.Word))
		w = append(w, idf(snap.n, max(t.DF, 1)))
	}
	for _, t := range fb {
		parts = append(parts, fmt.Sprintf(`SELECT %d, rowid FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT %d)`, len(w), knobs.SetRankRows))
		args = append(args, quoteFTS(t.Word))
		w = append(w, knobs.FeedbackWeight*t.w)
	}
	if len(parts) == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, fmt.Errorf("feedback ranking: %w", err)
	}
	score := map[int64]float64{}
	for rows.Next() {
		var ti int
		var id int64
		if err := rows.Scan(&ti, &id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("feedback ranking: %w", err)
		}
		score[id] += w[ti]
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("feedback ranking: %w", err)
	}
	ids := make([]int64, 0, len(score))
	for id := range score {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if score[ids[i]] != score[ids[j]] {
			return score[ids[i]] > score[ids[j]]
		}
		return ids[i] > ids[j]
	})
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return hitsByRowid(ctx, db, ids, score)
}
