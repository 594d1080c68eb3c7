package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// sourcesQuery reads the sources with chunks, newest first, walking the
// sources_listed index (schema 5; sources_recent on an older store a reader opens)
// instead of sorting.
const sourcesQuery = `SELECT kind, source_id, title, chunk_count, first_ms, last_ms FROM sources
	WHERE chunk_count > 0 ORDER BY last_ms DESC, source_id`

// namedSource is a source with its display name for one user e-mail hint, and that
// name folded for the display-name query.
type namedSource struct {
	abi.Source
	fold string
}

// ListSources lists one page of the ingested sources, most recent first, with their
// display names: those of the kinds asked (all when none) whose display name
// contains the query (case-insensitive; all when empty). Total counts them all; Next
// is the offset of the following page. K 0 means abi.MaxK.
//
// The sources of a store generation (meta.generation, bumped by every ingest
// commit) are read once, in the order of the sources_recent index, and kept named
// per hint, so another process's ingest is seen on the next call and a page costs a
// slice (a scan of the names with kinds or a query), not a query.
func (s *Store) ListSources(ctx context.Context, req abi.SourcesListRequest) (*abi.SourcesResult, error) {
	k := req.K
	if k == 0 {
		k = abi.MaxK
	}
	if err := checkK("list sources", k); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("list sources: offset must be 0..%d, got %d: %w", abi.MaxOffset, req.Offset, ErrInvalid)
	}
	if err := checkFilter("list sources", "kinds", req.Kinds, abi.MaxKindChars); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(req.Query); n > abi.MaxQueryChars {
		return nil, fmt.Errorf("list sources: query has %d characters, at most %d are allowed: %w", n, abi.MaxQueryChars, ErrInvalid)
	}
	if n := utf8.RuneCountInString(req.UserEmailHint); n > abi.MaxIDChars {
		return nil, fmt.Errorf("list sources: user_email_hint has %d characters, at most %d are allowed: %w", n, abi.MaxIDChars, ErrInvalid)
	}
	db, err := s.readers(ctx)
	if err != nil {
		return nil, err
	}
	res := &abi.SourcesResult{Sources: []abi.Source{}}
	if db == nil {
		res.Hint = EmptyHint
		return res, nil
	}
	if req.Group != "" && req.Group != abi.GroupMonth && req.Group != abi.GroupConversation {
		return nil, fmt.Errorf("list sources: group must be %q or %q, got %q: %w", abi.GroupMonth, abi.GroupConversation, clipRunes(req.Group, 32), ErrInvalid)
	}
	// Kinds people type (filters.go): aliases and chat platforms.
	kf := resolveSourceKinds("kinds", req.Kinds)
	res.Resolved = kf.resolved
	grouped := req.Group == abi.GroupConversation
	simple := len(kf.platforms) == 0 && !kf.none && !grouped
	kinds := map[string]bool{}
	for _, kd := range kf.kinds {
		kinds[kd] = true
	}
	q := strings.ToLower(strings.TrimSpace(req.Query))
	var page []namedSource
	scope := index.ScopeFrom(ctx)
	if scope.Full() && simple && q == "" && req.Offset+k <= coldPageDepth && !s.sourcesCached(ctx, db, req.UserEmailHint) {
		// A first page after the store changed: read it through the index instead
		// of loading every source (130–260 ms at 68k sources).
		if page, res.Total, err = s.sourcesPage(ctx, db, kinds, req.UserEmailHint, k, req.Offset); err != nil {
			return nil, err
		}
	} else {
		all, err := s.namedSources(ctx, db, req.UserEmailHint)
		if !scope.Full() { // the principal's sources only, read under its scope
			all, err = scopedSources(ctx, db, scope, req.UserEmailHint)
		}
		if err != nil {
			return nil, err
		}
		if grouped {
			all = groupByConversation(all)
		}
		if simple && len(kinds) == 0 && q == "" {
			res.Total = len(all)
			if req.Offset < len(all) {
				page = all[req.Offset:min(len(all), req.Offset+k)]
			}
		} else {
			one := "" // the kind when one is asked: compared without a map lookup
			if len(kinds) == 1 {
				for kd := range kinds {
					one = kd
				}
			}
			for i := range all {
				src := &all[i]
				if !simple && !kf.admits(src.SourceKind, src.SourceID) ||
					simple && (one != "" && src.SourceKind != one || one == "" && len(kinds) > 0 && !kinds[src.SourceKind]) ||
					q != "" && !strings.Contains(src.fold, q) {
					continue
				}
				if res.Total >= req.Offset && len(page) < k {
					page = append(page, *src)
				}
				res.Total++
			}
		}
	}
	if res.Total == 0 {
		if err := s.emptyHint(ctx, db, &res.Hint); err != nil {
			return nil, err
		}
		if res.Hint == "" && q != "" {
			kf.hints = append(kf.hints, fmt.Sprintf("query %q matches no source's name or title; call tree.list_sources without it to see them", clipRunes(req.Query, 64)))
		}
	}
	res.Hint = withHints(res.Hint, kf.hints)
	res.Sources = make([]abi.Source, len(page))
	for i, p := range page {
		src := p.Source
		src.Title = clipRunes(src.Title, hitTitleMaxChars)
		src.DisplayName = clipRunes(src.DisplayName, hitTitleMaxChars)
		res.Sources[i] = src
	}
	n := fit.Count(res.Sources, fit.ResultBase+fit.StrLen(res.Hint), func(src *abi.Source) int {
		return 160 + fit.StrLen(src.SourceKind) + fit.StrLen(src.SourceID) + fit.StrLen(src.DisplayName) + fit.StrLen(src.Title) + 10*len(src.Months)
	})
	had := len(res.Sources)
	res.Sources = res.Sources[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	return res, nil
}

// sourceCountsQuery counts the listed sources by kind (from sources_listed alone).
const sourceCountsQuery = `SELECT kind, count(*) FROM sources WHERE chunk_count > 0 GROUP BY kind`

// listedQuery returns q (over "FROM sources") made to read the sources_listed index
// when the store has it (schema 5; a reader may open an older store, which a
// writer migrates at its next ingest): the planner, without statistics, would
// otherwise pick the (kind, source_id) index and sort or read the table.
func listedQuery(ctx context.Context, db *sql.DB, q string) (string, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='index' AND name='sources_listed'`).Scan(&n); err != nil {
		return "", fmt.Errorf("list sources: %w", err)
	}
	if n == 0 {
		return q, nil
	}
	return strings.Replace(q, "FROM sources", "FROM sources INDEXED BY sources_listed", 1), nil
}

// coldPageDepth is how deep (offset + k) a page is read through the index while
// the source list of the store's generation is not loaded; deeper pages and
// display-name queries load it.
const coldPageDepth = 1000

// sourcesCached reports whether the source list of the current generation is
// loaded and named for userEmailHint.
func (s *Store) sourcesCached(ctx context.Context, db *sql.DB, userEmailHint string) bool {
	gen, err := generation(ctx, db)
	if err != nil {
		return false
	}
	c := &s.bc
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.named[userEmailHint]
	return ok && c.srcOK && c.srcGen == gen
}

// sourcesPage reads one page of the sources of kinds (all when empty) through the
// sources_recent index, and their total from the per-generation counts.
func (s *Store) sourcesPage(ctx context.Context, db *sql.DB, kinds map[string]bool, userEmailHint string, k, offset int) ([]namedSource, int, error) {
	counts, err := s.sourceCounts(ctx, db)
	if err != nil {
		return nil, 0, err
	}
	total := counts[""]
	q, err := listedQuery(ctx, db, sourcesQuery)
	if err != nil {
		return nil, 0, err
	}
	var args []any
	if len(kinds) > 0 {
		total = 0
		var ph []string
		for kd := range kinds {
			total += counts[kd]
			ph = append(ph, "?")
			args = append(args, kd)
		}
		q = strings.Replace(q, "WHERE chunk_count > 0", "WHERE chunk_count > 0 AND kind IN ("+strings.Join(ph, ",")+")", 1)
	}
	rows, err := db.QueryContext(ctx, q+` LIMIT ? OFFSET ?`, append(args, k, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	var page []namedSource
	for rows.Next() {
		var src abi.Source
		if err := rows.Scan(&src.SourceKind, &src.SourceID, &src.Title, &src.ChunkCount, &src.FirstMS, &src.MostRecentMS); err != nil {
			return nil, 0, fmt.Errorf("list sources: %w", err)
		}
		src.DisplayName = DisplayName(src.SourceKind, src.SourceID, src.Title, userEmailHint)
		page = append(page, namedSource{Source: src})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list sources: %w", err)
	}
	return page, total, nil
}

// sourceCounts returns how many sources with chunks the store holds by kind ("" =
// all), counted once per store generation.
func (s *Store) sourceCounts(ctx context.Context, db *sql.DB) (map[string]int, error) {
	gen, err := generation(ctx, db)
	if err != nil {
		return nil, err
	}
	c := &s.bc
	c.mu.Lock()
	if c.srcCounts != nil && c.srcCntGen == gen {
		m := c.srcCounts
		c.mu.Unlock()
		return m, nil
	}
	c.mu.Unlock()
	q, err := listedQuery(ctx, db, sourceCountsQuery)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("count sources: %w", err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var kd string
		var n int
		if err := rows.Scan(&kd, &n); err != nil {
			return nil, fmt.Errorf("count sources: %w", err)
		}
		m[kd] += n
		m[""] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count sources: %w", err)
	}
	c.mu.Lock()
	c.srcCounts, c.srcCntGen = m, gen
	c.mu.Unlock()
	return m, nil
}

// namedSources returns the sources of the current generation, newest first, with
// display names for userEmailHint; the lists of the last few hints are cached. The
// slice is shared: callers must not modify it.
func (s *Store) namedSources(ctx context.Context, db *sql.DB, userEmailHint string) ([]namedSource, error) {
	rows, err := s.sourceRows(ctx, db)
	if err != nil {
		return nil, err
	}
	c := &s.bc
	c.mu.Lock()
	named, ok := c.named[userEmailHint]
	c.mu.Unlock()
	if ok {
		return named, nil
	}
	named = make([]namedSource, len(rows))
	for i, src := range rows {
		src.DisplayName = DisplayName(src.SourceKind, src.SourceID, src.Title, userEmailHint)
		// The query also finds a chat by its title: the Telegram group's name, the
		// Slack channel's (a chat's display name is its id).
		fold := strings.ToLower(src.DisplayName)
		if src.SourceKind == KindChat && src.Title != "" {
			fold += "\x00" + strings.ToLower(src.Title)
		}
		named[i] = namedSource{Source: src, fold: fold}
	}
	c.mu.Lock()
	if c.srcOK && len(c.sources) > 0 && len(rows) > 0 && &c.sources[0] == &rows[0] { // still this generation
		if c.named == nil || len(c.named) >= 16 {
			c.named = map[string][]namedSource{}
		}
		c.named[userEmailHint] = named
	}
	c.mu.Unlock()
	return named, nil
}

// scopedSources reads the sources with chunks that scope reads, newest first,
// named for userEmailHint (uncached: the per-generation list is the whole
// store's).
func scopedSources(ctx context.Context, db *sql.DB, scope index.Scope, userEmailHint string) ([]namedSource, error) {
	sc, args := andScope(scope, "sources")
	q := strings.Replace(sourcesQuery, "WHERE chunk_count > 0", "WHERE chunk_count > 0"+sc, 1)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	var out []namedSource
	for rows.Next() {
		var src abi.Source
		if err := rows.Scan(&src.SourceKind, &src.SourceID, &src.Title, &src.ChunkCount, &src.FirstMS, &src.MostRecentMS); err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		src.DisplayName = DisplayName(src.SourceKind, src.SourceID, src.Title, userEmailHint)
		fold := strings.ToLower(src.DisplayName)
		if src.SourceKind == KindChat && src.Title != "" {
			fold += "\x00" + strings.ToLower(src.Title)
		}
		out = append(out, namedSource{Source: src, fold: fold})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	return out, nil
}

// entityTotal returns how many entities of kind ("" = all) the store holds, counted
// once per store generation.
func (s *Store) entityTotal(ctx context.Context, db *sql.DB, kind string) (int, error) {
	gen, err := generation(ctx, db)
	if err != nil {
		return 0, err
	}
	c := &s.bc
	c.mu.Lock()
	if c.entTotals != nil && c.entGen == gen {
		n := c.entTotals[kind]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	rows, err := db.QueryContext(ctx, `SELECT kind, count(*) FROM entities INDEXED BY entities_kind_top GROUP BY kind`)
	if err != nil {
		return 0, fmt.Errorf("count entities: %w", err)
	}
	defer rows.Close()
	totals := map[string]int{}
	for rows.Next() {
		var kd string
		var n int
		if err := rows.Scan(&kd, &n); err != nil {
			return 0, fmt.Errorf("count entities: %w", err)
		}
		totals[kd] += n
		totals[""] += n
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("count entities: %w", err)
	}
	c.mu.Lock()
	c.entTotals, c.entGen = totals, gen
	c.mu.Unlock()
	return totals[kind], nil
}
