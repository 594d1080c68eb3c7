package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// sourcesQuery reads the sources with chunks, newest first, walking the
// sources_listed index (schema 5; sources_recent on an older store a reader opens)
// instead of sorting.
const sourcesQuery = `SELECT kind, source_id, title, chunk_count, first_ms, last_ms FROM sources
	WHERE chunk_count > 0 ORDER BY last_ms DESC, source_id`

// Generation names the store's current write generation (index.Plain);
// index.ErrEmpty when the store has no file yet.
func (s *Store) Generation(ctx context.Context) (string, error) {
	db, err := s.plainReaders(ctx)
	if err != nil {
		return "", err
	}
	gen, err := generation(ctx, db)
	return gen + scopeSuffix(index.ScopeFrom(ctx)), err
}

// scopeSuffix tells apart what a scoped call derives from a generation (the read
// API's lists kept per generation) from what another scope derives: "" for the
// full scope.
func scopeSuffix(sc index.Scope) string {
	if sc.Full() {
		return ""
	}
	return "\x00" + sc.Key()
}

// Sources returns the sources with chunks, newest first, read once per store
// generation (sourceRows), and that generation (index.Plain; the slice is
// shared).
func (s *Store) Sources(ctx context.Context) ([]abi.Source, string, error) {
	db, err := s.plainReaders(ctx)
	if err != nil {
		return nil, "", err
	}
	if scope := index.ScopeFrom(ctx); !scope.Full() {
		return scopedSources(ctx, db, scope)
	}
	return s.sourceRows(ctx, db)
}

// scopedSources reads the sources with chunks that scope reads, newest first,
// and the generation they are of (uncached: the per-generation list is the whole
// store's).
func scopedSources(ctx context.Context, db *sql.DB, scope index.Scope) ([]abi.Source, string, error) {
	gen, err := generation(ctx, db)
	if err != nil {
		return nil, "", err
	}
	sc, args := andScope(scope, "sources")
	q := strings.Replace(sourcesQuery, "WHERE chunk_count > 0", "WHERE chunk_count > 0"+sc, 1)
	out, err := readSources(db.QueryContext(ctx, q, args...))
	if err != nil {
		return nil, "", err
	}
	return out, gen + scopeSuffix(scope), nil
}

// readSources reads the sources a sourcesQuery lists (never nil), from rows
// or the error that ran it; it closes rows.
func readSources(rows *sql.Rows, err error) ([]abi.Source, error) {
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	return ReadSources(rows, []abi.Source{})
}

// SourcePage reads one page of the sources of kinds (all when empty) through
// the sources_listed index, and their total from the per-generation counts
// (index.Plain).
func (s *Store) SourcePage(ctx context.Context, kinds []string, k, offset int) ([]abi.Source, int, error) {
	db, err := s.plainReaders(ctx)
	if err != nil {
		return nil, 0, err
	}
	if scope := index.ScopeFrom(ctx); !scope.Full() {
		// The per-generation counts are the whole store's: page the scoped list.
		all, _, err := scopedSources(ctx, db, scope)
		if err != nil {
			return nil, 0, err
		}
		var page []abi.Source
		total := 0
		for _, src := range all {
			if len(kinds) > 0 && !slices.Contains(kinds, src.SourceKind) {
				continue
			}
			if total >= offset && len(page) < k {
				page = append(page, src)
			}
			total++
		}
		return page, total, nil
	}
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
		for _, kd := range kinds {
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
	var page []abi.Source
	for rows.Next() {
		var src abi.Source
		if err := rows.Scan(&src.SourceKind, &src.SourceID, &src.Title, &src.ChunkCount, &src.FirstMS, &src.MostRecentMS); err != nil {
			return nil, 0, fmt.Errorf("list sources: %w", err)
		}
		page = append(page, src)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list sources: %w", err)
	}
	return page, total, nil
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
