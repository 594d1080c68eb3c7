package pgstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/analysis"
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

// ListChunks browses the chunks under req's filters newest first: kinds,
// source ids (a chat conversation without its month stands for all its
// months), entity ids, a time window and a case-insensitive substring of the
// text.
func (s *Store) ListChunks(ctx context.Context, req abi.ChunksListRequest) (*abi.ListResult, error) {
	const op = "list chunks"
	if err := abi.CheckK(op, req.K); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("%s: offset must be 0..%d, got %d: %w", op, abi.MaxOffset, req.Offset, abi.ErrInvalid)
	}
	for _, f := range []struct {
		name string
		vals []string
		max  int
	}{{"source_kinds", req.SourceKinds, abi.MaxKindChars}, {"source_ids", req.SourceIDs, abi.MaxIDChars}, {"entity_ids", req.EntityIDs, abi.MaxIDChars}} {
		if err := checkValues(op, f.name, f.vals, f.max); err != nil {
			return nil, err
		}
	}
	if n := utf8.RuneCountInString(req.Query); n > abi.MaxQueryChars {
		return nil, fmt.Errorf("%s: query has %d characters, at most %d are allowed: %w", op, n, abi.MaxQueryChars, abi.ErrInvalid)
	}
	if req.SinceMS != nil && req.UntilMS != nil && *req.SinceMS > *req.UntilMS {
		return nil, fmt.Errorf("%s: since_ms %d is after until_ms %d: %w", op, *req.SinceMS, *req.UntilMS, abi.ErrInvalid)
	}
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
	q := strings.TrimSpace(req.Query)
	if q != "" {
		where += ` AND c.text ILIKE ` + a.add("%"+likeEscape(q)+"%") + ` ESCAPE '\'`
	}
	where += a.scoped(index.ScopeFrom(ctx), "c")
	res := &abi.ListResult{Chunks: []abi.ChunkHit{}}
	if err := s.rd.QueryRow(ctx, `SELECT count(*) FROM chunks c`+where, a...).Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("%s: count: %w", op, err)
	}
	if res.Total > 0 && req.Offset < res.Total {
		rows, err := s.rd.Query(ctx, `SELECT `+hitColumns+`, c.text FROM chunks c`+where+
			` ORDER BY c.ts DESC, c.id LIMIT `+a.add(req.K)+` OFFSET `+a.add(req.Offset), a...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		terms := []string{}
		if q != "" {
			terms = append(terms, strings.ToLower(q))
		}
		err = forRows(rows, func(r pgx.Rows) error {
			var text string
			h, err := scanHit(r, &text)
			if err != nil {
				return err
			}
			h.Snippet = analysis.PlainSnippet(text, terms)
			res.Chunks = append(res.Chunks, h)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	if len(res.Chunks) > 0 && req.Offset+len(res.Chunks) < res.Total {
		res.Next = req.Offset + len(res.Chunks)
	}
	res.Hint = hint
	if res.Total == 0 && hint == "" {
		res.Hint = s.emptyHint(ctx)
	}
	return res, nil
}

// TopEntities lists the most mentioned entities (of one kind when asked), then
// the most recently seen; under a scope, mentions are counted over the chunks
// it reads, and an entity mentioned only outside it is not listed.
func (s *Store) TopEntities(ctx context.Context, req abi.EntitiesTopRequest) (*abi.EntitiesResult, error) {
	const op = "top entities"
	if err := abi.CheckK(op, req.K); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("%s: offset must be 0..%d, got %d: %w", op, abi.MaxOffset, req.Offset, abi.ErrInvalid)
	}
	if n := utf8.RuneCountInString(req.Kind); n > abi.MaxKindChars {
		return nil, fmt.Errorf("%s: kind has %d characters, at most %d are allowed: %w", op, n, abi.MaxKindChars, abi.ErrInvalid)
	}
	var a args
	kind := strings.ToLower(strings.TrimSpace(req.Kind))
	kindCond := ""
	if kind != "" {
		kindCond = " AND e.kind = " + a.add(kind)
	}
	inner := `SELECT e.id, e.kind, e.surface, e.ref_count AS n, e.last_seen AS seen FROM entities e WHERE e.ref_count > 0` + kindCond
	if sc := index.ScopeFrom(ctx); !sc.Full() {
		inner = `SELECT e.id, e.kind, e.surface, count(*) AS n, max(c.ts) AS seen FROM chunk_entities ce
			JOIN chunks c ON c.key = ce.chunk_key JOIN entities e ON e.id = ce.entity_id
			WHERE true` + kindCond + a.scoped(sc, "c") + ` GROUP BY e.id, e.kind, e.surface`
	}
	res := &abi.EntitiesResult{Entities: []abi.Entity{}}
	if err := s.rd.QueryRow(ctx, `SELECT count(*) FROM (`+inner+`) t`, a...).Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("%s: count: %w", op, err)
	}
	rows, err := s.rd.Query(ctx, `SELECT id, kind, surface, n, seen FROM (`+inner+`) t ORDER BY n DESC, seen DESC, id LIMIT `+a.add(req.K)+` OFFSET `+a.add(req.Offset), a...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	err = forRows(rows, func(r pgx.Rows) error {
		var e abi.Entity
		var n int64
		if err := r.Scan(&e.EntityID, &e.Kind, &e.Surface, &n, &e.LastSeenMS); err != nil {
			return err
		}
		e.Count = int(n)
		e.Surface = clip(e.Surface, hitTitleMaxChars)
		res.Entities = append(res.Entities, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	n := fit.Count(res.Entities, fit.ResultBase+fit.StrLen(res.Hint), func(e *abi.Entity) int {
		return 128 + fit.StrLen(e.EntityID) + fit.StrLen(e.Kind) + fit.StrLen(e.Surface)
	})
	had := len(res.Entities)
	res.Entities = res.Entities[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	if res.Total == 0 {
		res.Hint = s.emptyHint(ctx)
	}
	return res, nil
}

// ListSources lists the sources with chunks newest first, with display names
// (memtree.DisplayName): those of the kinds asked whose display name or title
// holds the query (case-insensitive); grouped by conversation, a chat's months
// are one entry with its months listed.
func (s *Store) ListSources(ctx context.Context, req abi.SourcesListRequest) (*abi.SourcesResult, error) {
	const op = "list sources"
	k := req.K
	if k == 0 {
		k = abi.MaxK
	}
	if err := abi.CheckK(op, k); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("%s: offset must be 0..%d, got %d: %w", op, abi.MaxOffset, req.Offset, abi.ErrInvalid)
	}
	if err := checkValues(op, "kinds", req.Kinds, abi.MaxKindChars); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(req.Query); n > abi.MaxQueryChars {
		return nil, fmt.Errorf("%s: query has %d characters, at most %d are allowed: %w", op, n, abi.MaxQueryChars, abi.ErrInvalid)
	}
	if n := utf8.RuneCountInString(req.UserEmailHint); n > abi.MaxIDChars {
		return nil, fmt.Errorf("%s: user_email_hint has %d characters, at most %d are allowed: %w", op, n, abi.MaxIDChars, abi.ErrInvalid)
	}
	if req.Group != "" && req.Group != abi.GroupMonth && req.Group != abi.GroupConversation {
		return nil, fmt.Errorf("%s: group must be %q or %q, got %q: %w", op, abi.GroupMonth, abi.GroupConversation, clip(req.Group, 32), abi.ErrInvalid)
	}
	var a args
	kc, hint := kindsCond(&a, "s.kind", "kinds", req.Kinds)
	rows, err := s.rd.Query(ctx, `SELECT s.kind, s.source_id, s.title, s.chunk_count, s.first_ms, s.last_ms FROM sources s
		WHERE s.chunk_count > 0`+kc+a.scoped(index.ScopeFrom(ctx), "s")+` ORDER BY s.last_ms DESC, s.source_id`, a...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var all []abi.Source
	err = forRows(rows, func(r pgx.Rows) error {
		var src abi.Source
		var n int32
		if err := r.Scan(&src.SourceKind, &src.SourceID, &src.Title, &n, &src.FirstMS, &src.MostRecentMS); err != nil {
			return err
		}
		src.ChunkCount = int(n)
		src.DisplayName = memtree.DisplayName(src.SourceKind, src.SourceID, src.Title, req.UserEmailHint)
		all = append(all, src)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if req.Group == abi.GroupConversation {
		all = groupConversations(all)
	}
	res := &abi.SourcesResult{Sources: []abi.Source{}, Hint: hint}
	q := strings.ToLower(strings.TrimSpace(req.Query))
	for _, src := range all {
		if q != "" && !strings.Contains(strings.ToLower(src.DisplayName), q) && !strings.Contains(strings.ToLower(src.Title), q) {
			continue
		}
		if res.Total >= req.Offset && len(res.Sources) < k {
			src.Title = clip(src.Title, hitTitleMaxChars)
			src.DisplayName = clip(src.DisplayName, hitTitleMaxChars)
			res.Sources = append(res.Sources, src)
		}
		res.Total++
	}
	n := fit.Count(res.Sources, fit.ResultBase+fit.StrLen(res.Hint), func(src *abi.Source) int {
		return 160 + fit.StrLen(src.SourceKind) + fit.StrLen(src.SourceID) + fit.StrLen(src.DisplayName) + fit.StrLen(src.Title) + 10*len(src.Months)
	})
	had := len(res.Sources)
	res.Sources = res.Sources[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	if res.Total == 0 && res.Hint == "" {
		res.Hint = s.emptyHint(ctx)
	}
	return res, nil
}

// groupConversations makes the months of each chat conversation
// ("slack:#eng/2026-01", "slack:#eng/2026-02") one source: the conversation's
// id, its chunks summed, its time span, and its months newest first.
func groupConversations(list []abi.Source) []abi.Source {
	out := make([]abi.Source, 0, len(list))
	at := map[string]int{}
	for _, src := range list {
		i := strings.LastIndexByte(src.SourceID, '/')
		if src.SourceKind != abi.KindChat || i < 0 || !strings.Contains(src.SourceID[:i], ":") {
			out = append(out, src)
			continue
		}
		conv, month := src.SourceID[:i], src.SourceID[i+1:]
		j, ok := at[conv]
		if !ok {
			at[conv] = len(out)
			src.SourceID = conv
			src.DisplayName = memtree.DisplayName(src.SourceKind, conv, src.Title, "")
			src.Months = []string{month}
			out = append(out, src)
			continue
		}
		g := &out[j]
		g.ChunkCount += src.ChunkCount
		g.FirstMS = min(g.FirstMS, src.FirstMS)
		g.MostRecentMS = max(g.MostRecentMS, src.MostRecentMS)
		g.Months = append(g.Months, month)
	}
	for i := range out {
		sort.Sort(sort.Reverse(sort.StringSlice(out[i].Months)))
	}
	return out
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
