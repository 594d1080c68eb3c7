package pgstore

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The plain reads of tree.browse, tree.top_entities and tree.list_sources, as
// the SQLite backend answers them, under the read call's scope. Filter values
// are the stored ones (kinds chat, email, document; source and entity ids as
// listed); the SQLite backend also resolves what people type for them
// ("mail", a channel without its month, a person's name), which moves to the
// read API (internal/memory) for both backends.

// sourceKinds are the stored kinds of sources.
var sourceKinds = map[string]bool{abi.KindChat: true, abi.KindEmail: true, abi.KindDocument: true}

// checkValues bounds a filter's values as the SQLite backend does.
func checkValues(op, name string, vals []string, maxChars int) error {
	if len(vals) > abi.MaxFilterItems {
		return fmt.Errorf("%s: %s has %d values, at most %d are allowed; narrow the listing in several calls: %w", op, name, len(vals), abi.MaxFilterItems, abi.ErrInvalid)
	}
	for _, v := range vals {
		if n := utf8.RuneCountInString(v); n > maxChars {
			return fmt.Errorf("%s: a %s value has %d characters, at most %d are allowed: %w", op, name, n, maxChars, abi.ErrInvalid)
		}
	}
	return nil
}

// kindsCond is the stored kinds among vals as a condition on col, with a hint
// naming the values that are none.
func kindsCond(a *args, col, filter string, vals []string) (cond, hint string) {
	var kinds, bad []string
	for _, v := range vals {
		v = strings.ToLower(strings.TrimSpace(v))
		switch {
		case v == "":
		case sourceKinds[v]:
			kinds = append(kinds, v)
		default:
			bad = append(bad, v)
		}
	}
	if len(bad) > 0 {
		hint = fmt.Sprintf("%s %q matches no kind of source; use chat, email or document", filter, bad)
	}
	switch {
	case len(kinds) > 0:
		return " AND " + col + " = ANY(" + a.add(kinds) + ")", hint
	case len(bad) > 0:
		return " AND false", hint
	}
	return "", ""
}

// Browse reads one tree.browse page (index.Plain; the read API checked req and
// shapes the page): the chunks under req's filters newest first (by chunk time,
// then id) — kinds, source ids (a chat conversation without its month stands
// for all its months), entity ids, a time window and a case-insensitive
// substring of the text — under the call's scope, and how many there are.
// index.ErrEmpty when the store holds no chunk.
func (s *Store) Browse(ctx context.Context, req abi.ChunksListRequest) (*index.BrowsePage, error) {
	const op = "list chunks"
	var a args
	kc, hint := kindsCond(&a, "c.kind", "source_kinds", req.SourceKinds)
	where := " WHERE true" + kc
	if len(req.SourceIDs) > 0 {
		var ids, convs []string
		for _, v := range req.SourceIDs {
			if v = strings.TrimSpace(v); v != "" {
				ids = append(ids, v)
				convs = append(convs, likeEscape(strings.TrimSuffix(v, "/"))+"/%")
			}
		}
		where += " AND (c.source_id = ANY(" + a.add(ids) + ") OR (c.kind = 'chat' AND c.source_id LIKE ANY(" + a.add(convs) + ")))"
	}
	if len(req.EntityIDs) > 0 {
		ents := make([]string, len(req.EntityIDs))
		for i, e := range req.EntityIDs {
			ents[i] = strings.ToLower(strings.TrimSpace(e))
		}
		where += " AND c.key IN (SELECT chunk_key FROM chunk_entities WHERE entity_id = ANY(" + a.add(ents) + "))"
	}
	if req.SinceMS != nil {
		where += " AND c.ts >= " + a.add(*req.SinceMS)
	}
	if req.UntilMS != nil {
		where += " AND c.ts <= " + a.add(*req.UntilMS)
	}
	if q := strings.TrimSpace(req.Query); q != "" {
		where += ` AND c.text ILIKE ` + a.add("%"+likeEscape(q)+"%") + ` ESCAPE '\'`
	}
	where += a.scoped(index.ScopeFrom(ctx), "c")
	page := &index.BrowsePage{Hint: hint}
	if err := s.rd.QueryRow(ctx, `SELECT count(*) FROM chunks c`+where, a...).Scan(&page.Total); err != nil {
		return nil, fmt.Errorf("%s: count: %w", op, err)
	}
	if page.Total == 0 && hint == "" {
		if holds, err := s.HoldsChunks(ctx); err == nil && !holds {
			return nil, index.ErrEmpty
		}
	}
	if page.Total > 0 && req.Offset < page.Total {
		rows, err := s.rd.Query(ctx, `SELECT `+hitColumns+`, c.text FROM chunks c`+where+
			` ORDER BY c.ts DESC, c.id LIMIT `+a.add(req.K)+` OFFSET `+a.add(req.Offset), a...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		err = forRows(rows, func(r pgx.Rows) error {
			var text string
			h, err := scanHit(r, &text)
			if err != nil {
				return err
			}
			page.Hits = append(page.Hits, index.Hit{ChunkHit: h, Text: text})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	return page, nil
}

// sourceRows reads the sources with chunks newest first (by last message,
// then id), with the condition cond and its arguments.
func (s *Store) sourceRows(ctx context.Context, cond string, a args) ([]abi.Source, error) {
	rows, err := s.rd.Query(ctx, `SELECT s.kind, s.source_id, s.title, s.chunk_count, s.first_ms, s.last_ms FROM sources s
		WHERE s.chunk_count > 0`+cond+` ORDER BY s.last_ms DESC, s.source_id`, a...)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	return memtree.ReadSources(rows, []abi.Source{})
}

// Generation names the store's write generation (and the call's scope, whose
// source list differs) (index.Plain); index.ErrEmpty when it holds no chunk.
func (s *Store) Generation(ctx context.Context) (string, error) {
	var gen int64
	if err := s.rd.QueryRow(ctx, `SELECT generation FROM store_stats`).Scan(&gen); err != nil {
		return "", fmt.Errorf("list sources: generation: %w", err)
	}
	sc := index.ScopeFrom(ctx)
	if sc.Full() {
		return genID(gen), nil
	}
	return genID(gen) + "\x00" + sc.Key(), nil
}

// Sources returns the sources with chunks the call's scope reads, newest first,
// and their generation (index.Plain).
func (s *Store) Sources(ctx context.Context) ([]abi.Source, string, error) {
	gen, err := s.Generation(ctx)
	if err != nil {
		return nil, "", err
	}
	var a args
	all, err := s.sourceRows(ctx, a.scoped(index.ScopeFrom(ctx), "s"), a)
	return all, gen, err
}

// SourcePage reads the page [offset, offset+k) of the sources of kinds (every
// kind when empty) in Sources' order, and counts them (index.Plain).
func (s *Store) SourcePage(ctx context.Context, kinds []string, k, offset int) ([]abi.Source, int, error) {
	var a args
	cond := ""
	if len(kinds) > 0 {
		cond = " AND s.kind = ANY(" + a.add(kinds) + ")"
	}
	cond += a.scoped(index.ScopeFrom(ctx), "s")
	var total int
	if err := s.rd.QueryRow(ctx, `SELECT count(*) FROM sources s WHERE s.chunk_count > 0`+cond, a...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list sources: count: %w", err)
	}
	rows, err := s.rd.Query(ctx, `SELECT s.kind, s.source_id, s.title, s.chunk_count, s.first_ms, s.last_ms FROM sources s
		WHERE s.chunk_count > 0`+cond+` ORDER BY s.last_ms DESC, s.source_id LIMIT `+a.add(k)+` OFFSET `+a.add(offset), a...)
	if err != nil {
		return nil, 0, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	page, err := memtree.ReadSources(rows, nil)
	if err != nil {
		return nil, 0, err
	}
	return page, total, nil
}

// emptyHint is abi.EmptyHint when the store holds no chunk, else "".
func (s *Store) emptyHint(ctx context.Context) string {
	var any bool
	if err := s.rd.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chunks)`).Scan(&any); err == nil && !any {
		return abi.EmptyHint
	}
	return ""
}

// forRows calls f on each row and closes rows.
func forRows(rows pgx.Rows, f func(pgx.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// likeEscape makes s literal in a LIKE pattern (escape '\').
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}

// clip cuts s to at most n characters, ending in "…" when cut (as the SQLite
// backend's titles).
func clip(s string, n int) string {
	t, _ := fit.CutText(s, n)
	return t
}
