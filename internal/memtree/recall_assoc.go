package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"sync"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Corpus association and set-based ranking for offline recall.
//
// A query word the store knows but rarely uses (a word said only in passing about a
// topic) is expanded into the words it co-occurs with in the store's own text:
// pointwise mutual information over the chunks that contain it. Those topical words
// find the items that talk about the same thing in other words. Associations are
// computed lazily from the chunks at query time and cached per store generation, so
// no schema change and no ingest step is needed.

// wterm is a weighted term of a set-ranking group: a folded word or phrase.
type wterm struct {
	phrase string
	stems  []string
	weight float64
}

// assocKey identifies a cached association list.
type assocKey struct {
	s    *Store
	gen  string
	stem string
}

var assocCache = struct {
	sync.Mutex
	m map[assocKey][]wterm
}{m: map[assocKey][]wterm{}}

// associates returns the words that co-occur with word in the store markedly more
// often than chance, best first, weights normalised to 1 for the best. Words whose
// stems are in skip are left out.
func (s *Store) associates(ctx context.Context, db *sql.DB, snap *dfCache, word string, skip map[string]bool) ([]wterm, error) {
	st := stem(word)
	key := assocKey{s, snap.gen, st}
	assocCache.Lock()
	cached, ok := assocCache.m[key]
	assocCache.Unlock()
	if !ok {
		var err error
		if cached, err = s.computeAssociates(ctx, db, snap, word); err != nil {
			return nil, err
		}
		assocCache.Lock()
		if len(assocCache.m) > 20000 {
			assocCache.m = map[assocKey][]wterm{}
		}
		assocCache.m[key] = cached
		assocCache.Unlock()
	}
	out := make([]wterm, 0, len(cached))
	for _, t := range cached {
		if !skip[t.stems[0]] {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *Store) computeAssociates(ctx context.Context, db *sql.DB, snap *dfCache, word string) ([]wterm, error) {
	own := stem(word)
	rows, err := db.QueryContext(ctx, `SELECT c.text FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?`, quoteFTS(word), knobs.AssocSample)
	if err != nil {
		return nil, fmt.Errorf("association sample for %q: %w", word, err)
	}
	type cnt struct {
		word string
		docs int
	}
	counts := map[string]*cnt{}
	memo := map[string]string{}
	m := 0
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			rows.Close()
			return nil, fmt.Errorf("association sample for %q: %w", word, err)
		}
		m++
		seen := map[string]bool{}
		for _, w := range words(text) {
			if len(w) < 3 || stopwords[w] || isDigits(w) {
				continue
			}
			st, ok := memo[w]
			if !ok {
				st = stem(w)
				memo[w] = st
			}
			if st == own || seen[st] {
				continue
			}
			seen[st] = true
			c := counts[st]
			if c == nil {
				c = &cnt{word: w}
				counts[st] = c
			}
			c.docs++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("association sample for %q: %w", word, err)
	}
	if m == 0 {
		return nil, nil
	}
	var out []wterm
	for st, c := range counts {
		if c.docs < knobs.AssocMinDocs {
			continue
		}
		df, err := s.docFreq(ctx, db, st)
		if err != nil {
			return nil, err
		}
		if df == 0 || float64(df) > knobs.MaxExpandShare*float64(snap.n) {
			continue
		}
		pmi := math.Log(float64(c.docs) / float64(m) * float64(snap.n) / float64(df))
		if pmi < knobs.AssocMinPMI {
			continue
		}
		out = append(out, wterm{phrase: c.word, stems: []string{st}, weight: float64(c.docs) / float64(m) * pmi})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].weight != out[j].weight {
			return out[i].weight > out[j].weight
		}
		return out[i].phrase < out[j].phrase
	})
	if len(out) > knobs.AssocTerms {
		out = out[:knobs.AssocTerms]
	}
	if len(out) > 0 {
		top := out[0].weight
		for i := range out {
			out[i].weight /= top
		}
	}
	return out, nil
}

// matchRowids returns the rowids of up to limit chunks matching FTS expression expr.
func matchRowids(ctx context.Context, db *sql.DB, expr string, limit int) ([]int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?`, expr, limit)
	if err != nil {
		return nil, fmt.Errorf("full-text match %s: %w", expr, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("full-text match %s: %w", expr, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// setRank ranks chunks by weighted coordination over groups, computed in sets of
// rowids (no chunk text is read): a chunk scores, per group, the weight of its best
// term relative to the group's best, summed over groups. With senses, a term that
// shares no chunk with another group's terms keeps only knobs.SenseDamp of its weight. Chunks in skip
// are left out. It returns up to limit hits, best first, Score set.
func setRank(ctx context.Context, db *sql.DB, groups [][]wterm, skip map[int64]bool, senses bool, limit int) ([]abi.ChunkHit, error) {
	// One statement reads every term's rowids: term i's rows come tagged i.
	var parts []string
	var args []any
	var rel []float64 // term weight relative to its group's best
	var grp []int
	for gi, g := range groups {
		top := 0.0
		for _, t := range g {
			top = math.Max(top, t.weight)
		}
		if top == 0 {
			continue
		}
		for _, t := range g {
			parts = append(parts, fmt.Sprintf(`SELECT %d, rowid FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT %d)`, len(rel), knobs.SetRankRows))
			args = append(args, quoteFTS(t.phrase))
			rel = append(rel, t.weight/top)
			grp = append(grp, gi)
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, fmt.Errorf("set ranking: %w", err)
	}
	type hit struct {
		ti int
		id int64
	}
	var hs []hit
	mask := map[int64]uint64{} // rowid → groups with a term in it
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.ti, &h.id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("set ranking: %w", err)
		}
		hs = append(hs, h)
		mask[h.id] |= 1 << (uint(grp[h.ti]) % 64)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("set ranking: %w", err)
	}
	if senses {
		// A term that never shares a chunk with another query word's terms is
		// probably off the query's topic; it counts less. Measured: on the
		// association list related 0.422 → 0.434; on the WordNet list it cost
		// paraphrase 0.117 → 0.072 (a story's synonyms rarely share a chunk).
		confirmed := make([]bool, len(rel))
		present := uint64(0)
		for _, h := range hs {
			own := uint64(1) << (uint(grp[h.ti]) % 64)
			present |= own
			if mask[h.id]&^own != 0 {
				confirmed[h.ti] = true
			}
		}
		if bits.OnesCount64(present) > 1 {
			for i := range rel {
				if !confirmed[i] {
					rel[i] *= knobs.SenseDamp
				}
			}
		}
	}
	best := map[[2]int64]float64{} // (group, rowid) → best relative weight
	for _, h := range hs {
		if skip[h.id] {
			continue
		}
		k := [2]int64{int64(grp[h.ti]), h.id}
		best[k] = math.Max(best[k], rel[h.ti])
	}
	score := map[int64]float64{}
	for k, v := range best {
		score[k[1]] += v
	}
	type sc struct {
		id int64
		v  float64
	}
	all := make([]sc, 0, len(score))
	for id, v := range score {
		all = append(all, sc{id, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].id < all[j].id
	})
	if len(all) > limit {
		all = all[:limit]
	}
	if len(all) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(all))
	for i, x := range all {
		ids[i] = x.id
	}
	return hitsByRowid(ctx, db, ids, score)
}

// hitsByRowid reads the hits for rowids, in that order, with a plain snippet and
// Score from score.
func hitsByRowid(ctx context.Context, db *sql.DB, rowids []int64, score map[int64]float64) ([]abi.ChunkHit, error) {
	if len(rowids) == 0 {
		return nil, nil
	}
	ids := make([]any, len(rowids))
	for i, id := range rowids {
		ids[i] = id
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	rows, err := db.QueryContext(ctx, `SELECT `+hitColumns+`, c.rowid, substr(c.text, 1, 400) FROM chunks c WHERE c.rowid IN (`+ph+`)`, ids...)
	if err != nil {
		return nil, fmt.Errorf("read ranked chunks: %w", err)
	}
	defer rows.Close()
	byID := map[int64]abi.ChunkHit{}
	for rows.Next() {
		var rid int64
		var text string
		h, err := scanHit(rows, &rid, &text)
		if err != nil {
			return nil, fmt.Errorf("read ranked chunks: %w", err)
		}
		h.Snippet = plainSnippet(text, nil)
		byID[rid] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read ranked chunks: %w", err)
	}
	out := make([]abi.ChunkHit, 0, len(rowids))
	for _, rid := range rowids {
		if h, ok := byID[rid]; ok {
			h.Score = score[rid]
			out = append(out, h)
		}
	}
	return out, nil
}

// associationGroups builds, for each query word's group (the word and its lexical
// expansions), the words the store associates with its rare members, weighted by
// the member's weight in the group. It also returns the FTS strings of the members
// it expanded.
func (s *Store) associationGroups(ctx context.Context, db *sql.DB, snap *dfCache, groups []termGroup, skip map[string]bool) ([][]wterm, []string, error) {
	var out [][]wterm
	var members []string
	for _, g := range groups {
		top := 0.0
		for _, t := range g.terms {
			top = math.Max(top, t.weight)
		}
		used := 0
		merged := map[string]wterm{}
		for i, t := range g.terms {
			if len(t.stems) != 1 || used >= knobs.AssocMembers {
				continue
			}
			if i > 0 || !skip[t.stems[0]] {
				// Only the query word itself (first in its group when the store has it):
				// associates of WordNet expansions were measured to add noise.
				continue
			}
			df, err := s.docFreq(ctx, db, t.stems[0])
			if err != nil {
				return nil, nil, err
			}
			if df == 0 || float64(df) > knobs.AssocMaxShare*float64(snap.n) {
				continue
			}
			used++
			mw := t.weight / top
			as, err := s.associates(ctx, db, snap, t.phrase, skip)
			if err != nil {
				return nil, nil, err
			}
			if len(as) == 0 {
				continue
			}
			members = append(members, quoteFTS(t.phrase))
			for _, a := range as {
				a.weight *= mw
				if m, ok := merged[a.stems[0]]; !ok || a.weight > m.weight {
					merged[a.stems[0]] = a
				}
			}
		}
		if len(merged) == 0 {
			continue
		}
		ws := make([]wterm, 0, len(merged))
		for _, a := range merged {
			ws = append(ws, a)
		}
		sort.Slice(ws, func(i, j int) bool {
			if ws[i].weight != ws[j].weight {
				return ws[i].weight > ws[j].weight
			}
			return ws[i].phrase < ws[j].phrase
		})
		if len(ws) > knobs.AssocGroupTerms {
			ws = ws[:knobs.AssocGroupTerms]
		}
		out = append(out, ws)
	}
	return out, members, nil
}

// rowidSet returns the rowids of the chunks matching FTS expression expr (at most
// 4000: past that the set only narrows a list a little).
func rowidSet(ctx context.Context, db *sql.DB, expr string) (map[int64]bool, error) {
	ids, err := matchRowids(ctx, db, expr, 4000)
	if err != nil {
		return nil, err
	}
	set := make(map[int64]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set, nil
}
