package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// storeReader is the store as the ranking reads it (index.Backend, with
// index.Paraphrases and index.Vectors), over one read call's connection. Queries
// become FTS5 expressions here (fts.go) and nowhere else.
type storeReader struct {
	s    *Store
	db   *sql.DB
	snap *dfCache // the generation's counts and people (nil: not needed)
	memo *ftsMemo // the call's ranked lists (nil: not remembered)
	// scope is what the call's principal may read (index.ScopeFrom of the
	// call's context): every query of the call carries it.
	scope index.Scope
	// emb is the store's embedder for this call, keeping the call's query
	// vectors: recall's vector list and meaning list embed a query once (nil:
	// no embedder).
	emb *embed.QueryEmbedder
}

// reader is the store as the ranking reads it over db, at generation snap.
func (s *Store) reader(db *sql.DB, snap *dfCache) storeReader {
	r := storeReader{s: s, db: db, snap: snap, memo: newFTSMemo()}
	if e := s.currentEmbedder(); e != nil {
		r.emb = embed.NewQueryEmbedder(e)
	}
	return r
}

// BeginRead opens one read call (internal/memory's Store): a read connection and
// the store generation's snapshot, as an index.Backend that also reads what hits'
// cited messages are built from (index.Messages, hitmessages.go). It is nil
// while the store holds no chunk (no file yet, or nothing ingested).
func (s *Store) BeginRead(ctx context.Context) (index.Backend, error) {
	db, err := s.readers(ctx)
	if err != nil || db == nil {
		return nil, err
	}
	snap, err := s.snapshot(ctx, db)
	if err != nil {
		return nil, err
	}
	if snap.n == 0 {
		return nil, nil
	}
	r := s.reader(db, snap)
	r.scope = index.ScopeFrom(ctx)
	return r, nil
}

// Stats are the generation's chunk count and newest chunk time.
func (r storeReader) Stats() index.Stats {
	// What the engine derives from a call's chunks is cached per generation and
	// scope.
	return index.Stats{Chunks: r.snap.n, Latest: r.snap.maxTS, Generation: index.Generation{Store: r.s, ID: r.snap.gen + r.scope.Key()}}
}

// People returns the person ids with folded name.
func (r storeReader) People(name string) ([]string, bool) {
	ids, ok := r.snap.people[name]
	return ids, ok
}

// Contact returns the address book's contacts (person ids) that key, a folded
// name or an address id, names, and every stored entity of theirs
// (index.Contacts).
func (r storeReader) Contact(ctx context.Context, key string) (people, ids []string, err error) {
	if r.snap == nil {
		return nil, nil, nil
	}
	people, ids = r.snap.contacts.contact(key)
	if len(people) == 0 {
		return nil, nil, nil
	}
	return contactsInScope(ctx, r.db, r.scope, people, ids, r.snap.contacts.stored)
}

// DocFreq is the per-generation cached document frequency (docFreq) of w's
// index term.
func (r storeReader) DocFreq(ctx context.Context, w string) (int, error) {
	return r.s.docFreq(ctx, r.db, stem(w))
}

var (
	_ index.Backend     = storeReader{}
	_ index.Paraphrases = storeReader{}
	_ index.Vectors     = storeReader{}
	_ index.Messages    = storeReader{}
	_ index.Contacts    = storeReader{}
)

// sqlFilter is f as a condition on chunks c: the people first, then the time
// window, then the call's scope.
func (r storeReader) sqlFilter(f index.Filter) filter { return r.sqlFilterRows(f, false) }

// sqlFilterRows is sqlFilter testing each visited row's entity links when perRow
// (entityFilter).
func (r storeReader) sqlFilterRows(f index.Filter, perRow bool) filter {
	out := sqlFilterRows(f, perRow)
	if c, args := scopeCond(r.scope, "c"); c != "" {
		out = out.with(c, args...)
	}
	return out
}

// sqlFilterRows is f as a condition on chunks c (without a scope).
func sqlFilterRows(f index.Filter, perRow bool) filter {
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

// Match ranks by bm25 under the window of the newest matches (rankWindow), or
// lists unranked (ftsFirst), a restriction to a person tested in the form
// entityPerRow picks.
func (r storeReader) Match(ctx context.Context, m index.Match) ([]index.Hit, error) {
	expr, err := ftsExpr(m.Query)
	if err != nil {
		return nil, err
	}
	perRow, err := r.entityPerRow(ctx, m.Filter.EntityIDs, m.Limit+len(m.Skip))
	if err != nil {
		return nil, err
	}
	f := r.sqlFilterRows(m.Filter, perRow)
	if m.Unranked {
		return ftsFirst(ctx, r.db, expr, f, m.Limit, m.Skip)
	}
	est, err := r.estimate(ctx, m.Query)
	if err != nil {
		return nil, err
	}
	wf, err := rankWindow(ctx, r.db, expr, est, f)
	if err != nil {
		return nil, err
	}
	return ftsRanked(ctx, r.db, r.memo, expr, wf, m.Limit, m.Skip)
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

// Recent lists the newest chunks (recentChunks).
func (r storeReader) Recent(ctx context.Context, f index.Filter, limit int, skip map[string]bool) ([]index.Hit, error) {
	return recentChunks(ctx, r.db, r.sqlFilter(f), limit, skip)
}

// Texts reads chunks' titles, texts and message spans (ref_spans_json).
func (r storeReader) Texts(ctx context.Context, ids []string) (map[string]index.ChunkText, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")
	sc, scArgs := andScope(r.scope, "c")
	rows, err := r.db.QueryContext(keyed(ctx), `SELECT id, title, text, ref_spans_json FROM chunks c WHERE id IN (`+ph+`)`+sc, append(args, scArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("read chunk messages: %w", err)
	}
	defer rows.Close()
	return ReadTexts(rows, "read chunk messages", len(ids))
}

// Following returns the chunk that follows each chat hit in its source without a
// pause when it is not among the hits already (at most one per hit, in hit order).
func (r storeReader) Following(ctx context.Context, hits []abi.ChunkHit) ([]index.Hit, error) {
	ids, have := index.ChatHits(hits)
	if len(ids) == 0 {
		return nil, nil
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("read the next chunks: %w", err)
	}
	// Only a chunk that continues the exchange: one that starts after a pause
	// (chatGapMS) is another conversation. One query for all hits.
	sc, scArgs := andScope(r.scope, "c")
	rows, err := query(keyed(ctx), r.db, `SELECT `+hitColumns+`, c.Text, p.id FROM chunks p
		JOIN chunks c ON c.source_rowid = p.source_rowid AND c.seq = p.seq + 1
		WHERE p.id IN (SELECT value FROM json_each(?)) AND c.ts_start - p.ts_end <= ?`+sc, append([]any{string(idsJSON), chatGapMS}, scArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("read the next chunks: %w", err)
	}
	defer rows.Close()
	after, err := ReadFollowing(rows)
	if err != nil {
		return nil, err
	}
	return index.InHitOrder(ids, after, have), nil
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

// Hits reads the hits for keys (rowids).
func (r storeReader) Hits(ctx context.Context, rowids []index.Key) (map[index.Key]index.Hit, error) {
	if len(rowids) == 0 {
		return nil, nil
	}
	ids := make([]any, len(rowids))
	for i, id := range rowids {
		ids[i] = int64(id)
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	sc, scArgs := andScope(r.scope, "c")
	rows, err := r.db.QueryContext(keyed(ctx), `SELECT `+hitColumns+`, c.rowid, c.text FROM chunks c WHERE c.rowid IN (`+ph+`)`+sc, append(ids, scArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("read ranked chunks: %w", err)
	}
	defer rows.Close()
	return ReadKeyedHits(rows, "read ranked chunks")
}

// Vocabulary is storeVocab (cached per generation).
func (r storeReader) Vocabulary(ctx context.Context, upTo int) (int, error) {
	return r.s.storeVocab(ctx, r.db, r.snap.gen, upTo)
}

// Postings reads up to perQuery rowids of the chunks matching each query in one
// statement: query i's rows come tagged i.
func (r storeReader) Postings(ctx context.Context, qs []index.Query, perQuery int) ([]index.Posting, error) {
	exprs := make([]string, len(qs))
	for i, q := range qs {
		e, err := ftsExpr(q)
		if err != nil {
			return nil, err
		}
		exprs[i] = e
	}
	if !r.scope.Full() {
		return r.scopedPostings(ctx, exprs, perQuery)
	}
	if len(exprs) == 1 {
		ids, err := matchRowids(ctx, r.db, exprs[0], perQuery)
		out := make([]index.Posting, len(ids))
		for i, id := range ids {
			out[i] = index.Posting{Key: index.Key(id)}
		}
		return out, err
	}
	parts := make([]string, len(exprs))
	args := make([]any, len(exprs))
	for i, e := range exprs {
		parts[i] = fmt.Sprintf(`SELECT %d, rowid FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT %d)`, i, perQuery)
		args[i] = e
	}
	return unionPostings(ctx, r.db, parts, args)
}

// scopedPostings is Postings of a scoped call: each query's matches joined to
// their chunks, which the scope restricts.
func (r storeReader) scopedPostings(ctx context.Context, exprs []string, perQuery int) ([]index.Posting, error) {
	sc, scArgs := andScope(r.scope, "c")
	parts := make([]string, len(exprs))
	var args []any
	for i, e := range exprs {
		parts[i] = fmt.Sprintf(`SELECT %d, rowid FROM (SELECT c.rowid FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ?%s LIMIT %d)`, i, sc, perQuery)
		args = append(append(args, e), scArgs...)
	}
	return unionPostings(ctx, r.db, parts, args)
}

// unionPostings runs the per-query SELECTs parts (each yielding query index,
// rowid) as one UNION ALL statement and reads its postings.
func unionPostings(ctx context.Context, db *sql.DB, parts []string, args []any) ([]index.Posting, error) {
	rows, err := query(ctx, db, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []index.Posting
	for rows.Next() {
		var p index.Posting
		if err := rows.Scan(&p.Query, &p.Key); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// matchRowids returns the rowids of up to limit chunks matching FTS expression expr.
func matchRowids(ctx context.Context, db *sql.DB, expr string, limit int) ([]int64, error) {
	rows, err := query(ctx, db, `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?`, expr, limit)
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

// Sample returns the texts of the n chunks matching q best by bm25.
func (r storeReader) Sample(ctx context.Context, q index.Query, n int) ([]string, error) {
	expr, err := ftsExpr(q)
	if err != nil {
		return nil, err
	}
	sc, scArgs := andScope(r.scope, "c")
	rows, err := query(ctx, r.db, `SELECT c.text FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ?`+sc+` ORDER BY rank LIMIT ?`, append(append([]any{expr}, scArgs...), n)...)
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
func (r storeReader) Expand(ctx context.Context, word string) ([]index.Related, error) {
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
func (r storeReader) VectorList(ctx context.Context, query string, depth int) ([]index.Hit, error) {
	q, err := r.emb.CallQuery(ctx, query)
	if err != nil || q == nil {
		return nil, err
	}
	return r.s.vectorList(ctx, r.db, r.emb.Model(), q, depth, r.scope)
}

// QueryVector is the store's embedder's vector of query (embedded once for
// VectorList and this).
func (r storeReader) QueryVector(ctx context.Context, query string) ([]float32, error) {
	return r.emb.CallQuery(ctx, query)
}

// Similarities is the cosine of q to the stored chunk vectors of ids under the
// store's embedder's model.
func (r storeReader) Similarities(ctx context.Context, q []float32, ids []string) (map[string]float32, error) {
	emb := r.emb
	if emb == nil || len(q) == 0 {
		return nil, nil
	}
	return r.s.similarities(ctx, r.db, emb.Model(), q, ids)
}
