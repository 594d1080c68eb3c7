package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// filter restricts candidate chunks (alias c) by SQL.
type filter struct {
	where []string
	args  []any
}

func (f filter) sql() string {
	if len(f.where) == 0 {
		return ""
	}
	return " AND " + strings.Join(f.where, " AND ")
}

func (f filter) with(cond string, args ...any) filter {
	return filter{where: append(append([]string(nil), f.where...), cond), args: append(append([]any(nil), f.args...), args...)}
}

// entityFilter restricts to chunks linked to any of ids or containing one of the
// names as a phrase.
func entityFilter(ids, names []string) (string, []any) {
	var parts []string
	var args []any
	if len(ids) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
		parts = append(parts, "c.rowid IN (SELECT chunk_rowid FROM chunk_entities WHERE entity_id IN ("+ph+"))")
		for _, id := range ids {
			args = append(args, id)
		}
	}
	if len(names) > 0 {
		var q []string
		for _, n := range names {
			q = append(q, quoteFTS(n))
		}
		parts = append(parts, "c.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)")
		args = append(args, strings.Join(q, " OR "))
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// ftsChunks ranks chunks matching expr by bm25 under filter f, skipping ids in skip.
func ftsChunks(ctx context.Context, db *sql.DB, expr string, f filter, limit int, skip map[string]bool) ([]abi.ChunkHit, error) {
	return ftsRanked(ctx, db, expr, f, limit, skip, nil)
}

// ftsRanked is ftsChunks; with plain (the words to show) each snippet is cut from
// the chunk's start around the first of them instead of by FTS5's snippet(), which
// tokenizes every returned chunk again (the fill level returns many).
func ftsRanked(ctx context.Context, db *sql.DB, expr string, f filter, limit int, skip map[string]bool, plain []string) ([]abi.ChunkHit, error) {
	// ORDER BY rank lets FTS5 sort before the outer query steps, so snippet() runs
	// only for the rows returned.
	memo := memoOf(ctx)
	var key string
	if memo != nil && len(skip) == 0 && plain == nil {
		key = memoKey(expr, f)
		if hs, ok := memo.get(key, limit); ok {
			return hs, nil
		}
	}
	snip := `snippet(chunks_fts, 0, '', '', '…', 40)`
	if plain != nil {
		snip = `substr(c.text, 1, 2000)`
	}
	q := `SELECT ` + hitColumns + `, ` + snip + `, rank
		FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? AND rank MATCH 'bm25(1.0, 1.0)'` + f.sql() + ` ORDER BY rank LIMIT ?`
	args := append(append([]any{expr}, f.args...), limit+len(skip))
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("full-text query: %w", err)
	}
	defer rows.Close()
	var out []abi.ChunkHit
	for rows.Next() {
		var snip string
		var r float64
		h, err := scanHit(rows, &snip, &r)
		if err != nil {
			return nil, fmt.Errorf("full-text query: %w", err)
		}
		if skip[h.ID] {
			continue
		}
		if plain != nil {
			h.Snippet = windowSnippet(snip, plain)
		} else {
			h.Snippet = strings.Join(strings.Fields(snip), " ")
		}
		h.Score = -r
		out = append(out, h)
		if len(out) == limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("full-text query: %w", err)
	}
	if key != "" {
		memo.put(key, limit, out)
	}
	return out, nil
}

// recentChunks lists chunks under filter f newest first, skipping ids in skip.
func recentChunks(ctx context.Context, db *sql.DB, f filter, limit int, skip map[string]bool, snippetTerms []string) ([]abi.ChunkHit, error) {
	q := `SELECT ` + hitColumns + `, c.text FROM chunks c WHERE 1=1` + f.sql() + ` ORDER BY c.ts DESC, c.id LIMIT ?`
	rows, err := db.QueryContext(ctx, q, append(append([]any(nil), f.args...), limit+len(skip))...)
	if err != nil {
		return nil, fmt.Errorf("list matching chunks: %w", err)
	}
	return firstHits(rows, limit, skip, "list matching chunks", func(text string) string { return plainSnippet(text, snippetTerms) })
}

// firstHits reads up to limit hits from rows (hitColumns plus one text column that
// snippet turns into the hit's snippet), skipping ids in skip, and closes rows.
func firstHits(rows *sql.Rows, limit int, skip map[string]bool, op string, snippet func(string) string) ([]abi.ChunkHit, error) {
	defer rows.Close()
	var out []abi.ChunkHit
	for rows.Next() {
		var text string
		h, err := scanHit(rows, &text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if skip[h.ID] {
			continue
		}
		h.Snippet = snippet(text)
		out = append(out, h)
		if len(out) == limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// knownEntities keeps the ids that exist in the store.
func knownEntities(ctx context.Context, db *sql.DB, ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		var one int
		err := db.QueryRowContext(ctx, `SELECT 1 FROM entities WHERE id=?`, id).Scan(&one)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look up entity %s: %w", id, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// Search finds chunks by keywords with FTS5 bm25 over the full text. User words are
// quoted (never FTS syntax); stopwords and terms in more than 20 % of chunks are
// dropped from the ranked levels unless nothing would be left; all words must match
// first, then fewer, then any, and the remaining places are filled with chunks
// saying the common words, so k is filled whenever the store has candidates. A
// person or address the store knows restricts the search to chunks linked to them; a
// date or month phrase restricts it to chunks whose time range overlaps that window
// (relaxed, after the restricted hits, when they are fewer than k). Chat chunks are ranked and cited by turn,
// with the turns that answer a matching turn (turnrank.go).
func (s *Store) Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error) {
	if err := checkK("search", req.K); err != nil {
		return nil, err
	}
	query := strings.TrimSpace(req.Query)
	if query == "" {
		return nil, fmt.Errorf("search: empty query; give some words to look for: %w", ErrInvalid)
	}
	db, err := s.readers(ctx)
	if err != nil {
		return nil, err
	}
	res := &abi.SearchResult{Chunks: []abi.ChunkHit{}}
	if db == nil {
		res.Hint = EmptyHint
		return res, nil
	}
	snap, err := s.snapshot(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if snap.n == 0 {
		res.Hint = EmptyHint
		return res, nil
	}
	hits, _, err := s.search(ctx, db, snap, query, req.K)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	res.Chunks = hits
	return s.finishSearch(ctx, db, res)
}

// search ranks chunks for query (see Search) and gives the rank level each hit came
// from (see rank: below retrieval.OrLevel a hit says at least two of the query's rarer words,
// or its only one; below retrieval.FillLevel at least one; a hit without a level is a chunk
// that follows a hit in its conversation).
func (s *Store) search(ctx context.Context, db *sql.DB, snap *dfCache, query string, k int) (hits []abi.ChunkHit, level map[string]int, err error) {
	pq := parseQuery(query, snap)
	ents, err := knownEntities(ctx, db, pq.Entities)
	if err != nil {
		return nil, nil, err
	}
	all, err := s.queryTerms(ctx, db, pq.Text)
	if err != nil {
		return nil, nil, err
	}
	terms := retrieval.PruneFrequent(all, snap.n)
	var snipTerms []string
	for _, t := range terms {
		snipTerms = append(snipTerms, t.Word)
	}
	snipTerms = append(snipTerms, pq.Names...)
	snipTerms = append(snipTerms, pq.Emails...)

	hasTime := pq.To != 0
	hasEnt := len(ents) > 0 || len(pq.Names) > 0
	var timeF, entF retrieval.Filter
	if hasTime {
		timeF = retrieval.Filter{From: pq.From, To: pq.To}
	}
	if hasEnt {
		entF = retrieval.Filter{EntityIDs: ents, Names: pq.Names}
	}
	// Try the most specific combination first and relax until something matches.
	var tries []retrieval.Filter
	switch {
	case hasEnt && hasTime:
		tries = []retrieval.Filter{{EntityIDs: ents, Names: pq.Names, From: pq.From, To: pq.To}, entF, timeF, {}}
	case hasEnt:
		tries = []retrieval.Filter{entF, {}}
	case hasTime:
		tries = []retrieval.Filter{timeF, {}}
	default:
		tries = []retrieval.Filter{{}}
	}
	msgs := newMessages(db)
	var byMsg *messages // a plain keyword query (no person, no date) ranks by message
	if !hasTime && !hasEnt {
		byMsg = msgs
	}
	// The first combination that matches leads; when it holds fewer than k hits,
	// the next (less restricted) ones fill the remaining places, each ranked after
	// the previous (a person or date matched in two chunks must not leave search
	// with two hits when the store says the query's words elsewhere).
	var out []abi.ChunkHit
	outLevel := map[string]int{}
	for i, f := range tries {
		restricted := i < len(tries)-1
		hits, level, err := s.rankCited(ctx, db, snap, msgs, byMsg, pq, terms, all, f, restricted, hasTime, hasEnt, k, snipTerms)
		if err != nil {
			return nil, nil, err
		}
		for _, h := range hits {
			if len(out) == k {
				break
			}
			if _, dup := outLevel[h.ID]; dup {
				continue
			}
			l, ok := level[h.ID]
			if !ok {
				l = retrieval.FillLevel + 1 // a chunk following a hit: after the literal evidence
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
		if l == retrieval.FillLevel+1 {
			delete(outLevel, id)
		}
	}
	return out, outLevel, nil
}

// rankCited is the candidates stage (retrieval.Candidates) under one filter f, then the conversation-aware ordering and
// citations (see search).
func (s *Store) rankCited(ctx context.Context, db *sql.DB, snap *dfCache, msgs, byMsg *messages, pq parsedQuery, terms, all []term, f retrieval.Filter, restricted, hasTime, hasEnt bool, k int, snipTerms []string) ([]abi.ChunkHit, map[string]int, error) {
	{
		var order func([]abi.ChunkHit) ([]abi.ChunkHit, error)
		if byMsg != nil {
			order = func(hs []abi.ChunkHit) ([]abi.ChunkHit, error) {
				return retrieval.ByMessage(ctx, byMsg, snap.n, hs, terms)
			}
		}
		hits, level, err := retrieval.Candidates(ctx, storeReader{db}, terms, all, f, restricted, k, snipTerms, order)
		if err != nil {
			return nil, nil, err
		}
		if len(hits) == 0 {
			return nil, level, nil
		}
		// A plain keyword query (no person, no date) cites the messages that say
		// at least two of its words when any does: a message matching one word
		// (often only its subject or an address) is rarely what was asked for.
		// Search recall@10 on keyword queries, corpus seeds 1/2/3: 0.887/0.949/0.893
		// → 0.896/0.958/0.904; entity and temporal queries are not affected.
		minCite := 1
		if !hasTime && !hasEnt && len(terms) >= 2 {
			minCite = knobs.MinCiteWords
		}
		cited := map[string]bool{}
		if retrieval.HasChat(hits) && len(all) > 0 {
			// Conversations: rank and cite by turn (retrieval/citation.go).
			next, err := storeReader{db}.NextChunks(ctx, hits, snipTerms)
			if err != nil {
				return nil, nil, err
			}
			if hits, cited, err = retrieval.OrderByTurns(ctx, msgs, append(hits, next...), level, all, minCite, snap.n); err != nil {
				return nil, nil, err
			}
			hits = retrieval.DemoteDuplicates(hits)
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
		if err := retrieval.CiteHits(ctx, msgs, sub, retrieval.StemsOf(terms), pq.Names, minCite); err != nil {
			return nil, nil, err
		}
		for x, j := range rest {
			hits[j] = sub[x]
		}
		return hits, level, nil
	}
}

// windowSnippet is plainSnippet on the part of text around the first of terms (a
// chunk's text can be long; the snippet is short).
func windowSnippet(text string, terms []string) string {
	best := -1
	lower := strings.ToLower(text)
	for _, t := range terms {
		if t == "" {
			continue
		}
		if i := strings.Index(lower, t); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if len(lower) != len(text) {
		best = -1 // case folding changed byte offsets: no cut
	}
	from, to := 0, len(text)
	if best > 200 {
		from = best - 200
	}
	if to-from > 8*snippetChars+400 {
		to = from + 8*snippetChars + 400
	}
	for from > 0 && from < len(text) && !utf8.RuneStart(text[from]) {
		from++
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	out := plainSnippet(text[from:to], terms)
	if from > 0 && !strings.HasPrefix(out, "…") {
		out = "…" + out
	}
	return out
}

// ftsFirst lists the first chunks (by rowid, newest rowids first) matching expr
// under f, skipping ids in skip, without ranking: FTS5 stops after limit matches.
func ftsFirst(ctx context.Context, db *sql.DB, expr string, f filter, limit int, skip map[string]bool) ([]abi.ChunkHit, error) {
	q := `SELECT ` + hitColumns + `, snippet(chunks_fts, 0, '', '', '…', 40)
		FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ?` + f.sql() + ` ORDER BY chunks_fts.rowid DESC LIMIT ?`
	rows, err := db.QueryContext(ctx, q, append(append([]any{expr}, f.args...), limit+len(skip))...)
	if err != nil {
		return nil, fmt.Errorf("full-text query: %w", err)
	}
	return firstHits(rows, limit, skip, "full-text query", func(snip string) string { return strings.Join(strings.Fields(snip), " ") })
}
