package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// storeReader is the store as the ranking reads it (retrieval.Store), over one
// read call's connection.
type storeReader struct {
	s    *Store
	db   *sql.DB
	snap *dfCache // the generation's counts and people (nil: not needed)
}

// reader is the store as the ranking reads it over db, at generation snap.
func (s *Store) reader(db *sql.DB, snap *dfCache) storeReader {
	return storeReader{s: s, db: db, snap: snap}
}

// Chunks is the generation's chunk count.
func (r storeReader) Chunks() int { return r.snap.n }

// Latest is the generation's newest chunk time.
func (r storeReader) Latest() int64 { return r.snap.maxTS }

// People returns the person ids with folded name.
func (r storeReader) People(name string) ([]string, bool) {
	ids, ok := r.snap.people[name]
	return ids, ok
}

// DocFreq is the per-generation cached document frequency (docFreq).
func (r storeReader) DocFreq(ctx context.Context, t string) (int, error) {
	return r.s.docFreq(ctx, r.db, t)
}

var _ retrieval.Store = storeReader{}

// sqlFilter is f as a condition on chunks c: the people first, then the time window.
func sqlFilter(f retrieval.Filter) filter { return sqlFilterRows(f, false) }

// sqlFilterRows is sqlFilter testing each visited row's entity links when perRow
// (entityFilter).
func sqlFilterRows(f retrieval.Filter, perRow bool) filter {
	var out filter
	if len(f.EntityIDs) > 0 || len(f.Names) > 0 {
		cond, args := entityFilter(f.EntityIDs, f.Names, perRow)
		out = out.with(cond, args...)
	}
	if f.To != 0 {
		out = out.with("c.ts_end >= ? AND c.ts_start < ?", f.From, f.To)
	}
	return out
}

// Match ranks by bm25 under the window of the newest matches (rankWindow), a
// restriction to a person tested in the form entityPerRow picks.
func (r storeReader) Match(ctx context.Context, m retrieval.Match) ([]abi.ChunkHit, error) {
	perRow, err := r.entityPerRow(ctx, m.Filter.EntityIDs, m.Limit+len(m.Skip))
	if err != nil {
		return nil, err
	}
	f := sqlFilterRows(m.Filter, perRow)
	wf, err := rankWindow(ctx, r.db, m.Expr, m.Estimate, f)
	if err != nil {
		return nil, err
	}
	return ftsRanked(ctx, r.db, m.Expr, wf, m.Limit, m.Skip, m.Plain)
}

// entityPerRow reports whether a query restricted to the chunks linked to ids,
// returning up to limit rows and stopping there, should test each row it visits
// rather than list the linked chunks first. Listing costs one step per linked
// chunk (E, the entities' ref_count); the query visits about limit·n/E rows
// (when links are independent of the words) and testing one costs an index probe,
// measured at about 24 list steps (168k-chunk store, three people of 600, 8,966
// and 68,503 links: even at 8,966): per row when E² > 24·limit·n. The form
// changes the plan only, never the rows.
func (r storeReader) entityPerRow(ctx context.Context, ids []string, limit int) (bool, error) {
	if len(ids) == 0 || r.snap == nil {
		return false, nil
	}
	e, err := r.s.linkCount(ctx, r.db, r.snap.gen, ids)
	if err != nil {
		return false, err
	}
	return float64(e)*float64(e) > 24*float64(limit)*float64(r.snap.n), nil
}

// FirstMatches lists matches unranked (ftsFirst), a restriction to a person tested
// in the form entityPerRow picks.
func (r storeReader) FirstMatches(ctx context.Context, expr string, f retrieval.Filter, limit int, skip map[string]bool) ([]abi.ChunkHit, error) {
	perRow, err := r.entityPerRow(ctx, f.EntityIDs, limit+len(skip))
	if err != nil {
		return nil, err
	}
	return ftsFirst(ctx, r.db, expr, sqlFilterRows(f, perRow), limit, skip)
}

// Recent lists the newest chunks (recentChunks).
func (r storeReader) Recent(ctx context.Context, f retrieval.Filter, limit int, skip map[string]bool, snippetTerms []string) ([]abi.ChunkHit, error) {
	return recentChunks(ctx, r.db, sqlFilter(f), limit, skip, snippetTerms)
}

// ChunkTexts reads chunks' titles, texts and message spans (ref_spans_json).
func (r storeReader) ChunkTexts(ctx context.Context, ids []string) (map[string]retrieval.ChunkText, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")
	rows, err := r.db.QueryContext(keyed(ctx), `SELECT id, title, text, ref_spans_json FROM chunks WHERE id IN (`+ph+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read chunk messages: %w", err)
	}
	defer rows.Close()
	out := make(map[string]retrieval.ChunkText, len(ids))
	for rows.Next() {
		var id, spans string
		var c retrieval.ChunkText
		if err := rows.Scan(&id, &c.Title, &c.Text, &spans); err != nil {
			return nil, fmt.Errorf("read chunk messages: %w", err)
		}
		if json.Unmarshal([]byte(spans), &c.Spans) != nil {
			c.Spans = nil
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read chunk messages: %w", err)
	}
	return out, nil
}

// newMessages is the per-query reader of chunk texts the scoring and citation
// stages share.
func newMessages(db *sql.DB) *messages { return retrieval.NewMessages(storeReader{db: db}) }

type messages = retrieval.Messages

// NextChunks returns the chunk that follows each chat hit in its source without a
// pause when it is not among the hits already (at most one per hit, in hit order).
func (r storeReader) NextChunks(ctx context.Context, hits []abi.ChunkHit, snipTerms []string) ([]abi.ChunkHit, error) {
	have := map[string]bool{}
	var ids []string
	for _, h := range hits {
		have[h.ID] = true
		if h.SourceKind == KindChat {
			ids = append(ids, h.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("read the next chunks: %w", err)
	}
	// Only a chunk that continues the exchange: one that starts after a pause
	// (chatGapMS) is another conversation. One query for all hits.
	rows, err := query(keyed(ctx), r.db, `SELECT `+hitColumns+`, c.Text, p.id FROM chunks p
		JOIN chunks c ON c.source_rowid = p.source_rowid AND c.seq = p.seq + 1
		WHERE p.id IN (SELECT value FROM json_each(?)) AND c.ts_start - p.ts_end <= ?`, string(idsJSON), chatGapMS)
	if err != nil {
		return nil, fmt.Errorf("read the next chunks: %w", err)
	}
	defer rows.Close()
	after := map[string]abi.ChunkHit{} // previous chunk id → next chunk
	for rows.Next() {
		var text, prev string
		n, err := scanHit(rows, &text, &prev)
		if err != nil {
			return nil, fmt.Errorf("read the next chunks: %w", err)
		}
		n.Snippet = windowSnippet(text, snipTerms)
		n.Score = 0
		after[prev] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the next chunks: %w", err)
	}
	var out []abi.ChunkHit
	for _, id := range ids {
		if n, ok := after[id]; ok && !have[n.ID] {
			have[n.ID] = true
			out = append(out, n)
		}
	}
	return out, nil
}

// KnownEntities keeps the ids that exist in the store, in one query.
func (r storeReader) KnownEntities(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("look up entities: %w", err)
	}
	rows, err := query(keyed(ctx), r.db, `SELECT id FROM entities WHERE id IN (SELECT value FROM json_each(?))`, string(idsJSON))
	if err != nil {
		return nil, fmt.Errorf("look up entities: %w", err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("look up entities: %w", err)
		}
		have[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up entities: %w", err)
	}
	var out []string
	for _, id := range ids {
		if have[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// HitsByRowid reads the hits for rowids with a plain snippet.
func (r storeReader) HitsByRowid(ctx context.Context, rowids []int64) (map[int64]abi.ChunkHit, error) {
	if len(rowids) == 0 {
		return nil, nil
	}
	ids := make([]any, len(rowids))
	for i, id := range rowids {
		ids[i] = id
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	rows, err := r.db.QueryContext(keyed(ctx), `SELECT `+hitColumns+`, c.rowid, substr(c.text, 1, 400) FROM chunks c WHERE c.rowid IN (`+ph+`)`, ids...)
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
	return byID, nil
}

// Generation is the store and its generation at this call.
func (r storeReader) Generation() retrieval.Generation {
	return retrieval.Generation{Store: r.s, ID: r.snap.gen}
}

// Vocabulary is storeVocab (cached per generation).
func (r storeReader) Vocabulary(ctx context.Context, upTo int) (int, error) {
	return r.s.storeVocab(ctx, r.db, r.snap.gen, upTo)
}

// MatchRowids returns the rowids of up to limit chunks matching FTS expression expr.
func (r storeReader) MatchRowids(ctx context.Context, expr string, limit int) ([]int64, error) {
	rows, err := query(ctx, r.db, `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?`, expr, limit)
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

// TermRowids reads every expression's rowids in one statement: expression i's
// rows come tagged i.
func (r storeReader) TermRowids(ctx context.Context, exprs []string, perTerm int) ([]retrieval.TermRow, error) {
	parts := make([]string, len(exprs))
	args := make([]any, len(exprs))
	for i, e := range exprs {
		parts[i] = fmt.Sprintf(`SELECT %d, rowid FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT %d)`, i, perTerm)
		args[i] = e
	}
	rows, err := query(ctx, r.db, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []retrieval.TermRow
	for rows.Next() {
		var h retrieval.TermRow
		if err := rows.Scan(&h.Term, &h.ID); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// Sample returns the texts of the n chunks matching expr best by bm25.
func (r storeReader) Sample(ctx context.Context, expr string, n int) ([]string, error) {
	rows, err := query(ctx, r.db, `SELECT c.text FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?`, expr, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		out = append(out, text)
	}
	return out, rows.Err()
}

// Expands reports whether the store has an expander.
func (r storeReader) Expands() bool { return r.s.currentExpander() != nil }

// Expand is the expander's terms and the stored paraphrases (expand).
func (r storeReader) Expand(ctx context.Context, word string) ([]retrieval.Related, error) {
	exp := r.s.currentExpander()
	if exp == nil {
		return nil, nil
	}
	return r.s.expand(ctx, r.db, exp, word)
}

// VectorModel names the store's embedder.
func (r storeReader) VectorModel() (string, bool) {
	emb := r.s.currentEmbedder()
	if emb == nil {
		return "", false
	}
	return emb.Model(), true
}

// VectorList is vectorList with the store's embedder.
func (r storeReader) VectorList(ctx context.Context, query string) (retrieval.List, error) {
	emb := r.s.currentEmbedder()
	if emb == nil {
		return retrieval.List{}, nil
	}
	if !embedAllowed(ctx, query) { // embedgate.go
		return retrieval.List{}, retrieval.ErrEmbedRefused
	}
	return r.s.vectorList(ctx, r.db, emb, query)
}
