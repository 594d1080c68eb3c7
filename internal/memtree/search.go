package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode/utf8"

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
// names as a phrase. perRow tests each row's links (an index probe per row the
// query visits) instead of listing every chunk linked to ids first: the list of a
// person linked to 68,503 of 168k chunks took 15 of a ranked query's 19 ms, which
// stops after the first rows that pass (entityPerRow says when). A name stays a
// list: it is tested only on rows whose links did not pass.
func entityFilter(ids, names []string, perRow bool) (string, []any) {
	var parts []string
	var args []any
	if len(ids) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
		if perRow {
			parts = append(parts, "EXISTS (SELECT 1 FROM chunk_entities WHERE entity_id IN ("+ph+") AND chunk_rowid = c.rowid)")
		} else {
			parts = append(parts, "c.rowid IN (SELECT chunk_rowid FROM chunk_entities WHERE entity_id IN ("+ph+"))")
		}
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

// ftsRanked ranks chunks matching expr by bm25 under filter f, skipping ids in
// skip (index.Backend's Match), remembered in memo (nil: not). Without plain each snippet is FTS5's snippet();
// with plain (the words to show) it is cut from the chunk's start around the first
// of them instead, as snippet() tokenizes every returned chunk again (the fill
// level returns many).
func ftsRanked(ctx context.Context, db *sql.DB, memo *ftsMemo, expr string, f filter, limit int, skip map[string]bool, plain []string) ([]abi.ChunkHit, error) {
	// ORDER BY rank lets FTS5 sort before the outer query steps, so snippet() runs
	// only for the rows returned.
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
	rows, err := query(ctx, db, q, args...)
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
	rows, err := query(ctx, db, q, append(append([]any(nil), f.args...), limit+len(skip))...)
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
	rows, err := query(ctx, db, q, append(append([]any{expr}, f.args...), limit+len(skip))...)
	if err != nil {
		return nil, fmt.Errorf("full-text query: %w", err)
	}
	return firstHits(rows, limit, skip, "full-text query", func(snip string) string { return strings.Join(strings.Fields(snip), " ") })
}
