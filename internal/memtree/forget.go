package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ForgetFilter selects the sources Forget deletes. A source is selected when its
// source_id is one of SourceIDs or it came from under Root; with Before set, only
// selected sources whose last activity is before it are kept in the selection (with
// neither SourceIDs nor Root, Before alone selects every source older than it).
type ForgetFilter struct {
	// SourceIDs are source ids as the tools take them: a stored id (as
	// tree.list_sources and search hits give them), or a chat conversation
	// without its month (slack:#general) for all its months.
	SourceIDs []string
	// Root selects the sources read from this file or folder: their origin (the file
	// ingest read) is Root or under it, or, for documents, their absolute path is.
	// Root is compared as given and as an absolute path.
	Root string
	// Before keeps only sources whose newest chunk ends before this time.
	Before time.Time
}

func (f ForgetFilter) empty() bool {
	return len(f.SourceIDs) == 0 && strings.TrimSpace(f.Root) == "" && f.Before.IsZero()
}

// ForgottenSource is one source Forget deleted (or would delete, on a dry run).
type ForgottenSource struct {
	Kind     string `json:"kind"`
	SourceID string `json:"source_id"`
	Title    string `json:"title"`
	Origin   string `json:"origin"`
	Chunks   int    `json:"chunks"`
	LastMS   int64  `json:"last_ms"`
}

// ForgetResult counts what Forget deleted (or would delete).
type ForgetResult struct {
	Sources   []ForgottenSource `json:"sources"`
	Chunks    int               `json:"chunks"`
	Summaries int               `json:"summaries"`
	Vectors   int               `json:"vectors"`
	Messages  int               `json:"messages"`
	// EntitiesUpdated counts the entities whose reference counts went down;
	// EntitiesDropped those no chunk references any more, which were deleted.
	EntitiesUpdated int `json:"entities_updated"`
	EntitiesDropped int `json:"entities_dropped"`
	// NotFound lists the SourceIDs that name no stored source.
	NotFound []string `json:"not_found"`
	// Resolved says which stored sources each SourceID that is not a stored id
	// stood for (a chat conversation without its month: all its months), as the
	// tools' source_ids filter reads it.
	Resolved []abi.Resolution `json:"resolved,omitempty"`
	DryRun   bool             `json:"dry_run"`
}

// Forget deletes the selected sources with everything derived from them (chunks
// and their full-text rows, summaries and theirs, vectors of both, entity links,
// stored chat messages) in one transaction, and recomputes the reference counts of
// the entities they mentioned, deleting those nothing else mentions. With dryRun it
// counts the same and changes nothing. Ingesting the same files again restores them.
func (s *Store) Forget(ctx context.Context, f ForgetFilter, dryRun bool) (ForgetResult, error) {
	res := ForgetResult{DryRun: dryRun, Sources: []ForgottenSource{}, NotFound: []string{}}
	if s.w == nil {
		return res, fmt.Errorf("forget: %w", ErrReadOnly)
	}
	if f.empty() {
		return res, fmt.Errorf("forget: name source ids, a root path or a date: %w", ErrInvalid)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("forget: %w", err)
	}
	defer tx.Rollback()

	rows, err := s.selectForget(ctx, tx, f, &res)
	if err != nil {
		return res, err
	}
	if len(rows) == 0 {
		return res, nil
	}
	touched := map[string]bool{}
	for _, rid := range rows {
		if err := forgetSource(ctx, tx, rid, &res, touched, dryRun); err != nil {
			return res, err
		}
	}
	if dryRun {
		for id := range touched {
			var others int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM chunk_entities ce JOIN chunks c ON c.rowid=ce.chunk_rowid
				WHERE ce.entity_id=? AND c.source_rowid NOT IN (SELECT value FROM json_each(?))`, id, jsonOf(rows)).Scan(&others); err != nil {
				return res, fmt.Errorf("forget: count references of entity %s: %w", id, err)
			}
			if others == 0 {
				res.EntitiesDropped++
			} else {
				res.EntitiesUpdated++
			}
		}
		return res, nil
	}
	for id := range touched {
		if _, err := tx.ExecContext(ctx, qRefreshEntity, id); err != nil {
			return res, fmt.Errorf("forget: refresh entity %s: %w", id, err)
		}
		r, err := tx.ExecContext(ctx, qDropEntity, id)
		if err != nil {
			return res, fmt.Errorf("forget: drop unreferenced entity %s: %w", id, err)
		}
		if n, _ := r.RowsAffected(); n > 0 {
			res.EntitiesDropped++
		} else {
			res.EntitiesUpdated++
		}
	}
	if _, err := tx.ExecContext(ctx, qBumpGeneration); err != nil {
		return res, fmt.Errorf("forget: bump store generation: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("forget: commit: %w", err)
	}
	return res, nil
}

// selectForget returns the rowids of the sources f selects and fills res.Sources and
// res.NotFound.
func (s *Store) selectForget(ctx context.Context, tx *sql.Tx, f ForgetFilter, res *ForgetResult) ([]int64, error) {
	var conds []string
	var args []any
	unknown := map[string]bool{}
	if len(f.SourceIDs) > 0 {
		// Every source id the tools accept: a stored id, or a chat conversation
		// without its month ("slack:#general", "#general") for all its months.
		ids, resolved, _, err := resolveSourceIDs(ctx, tx, f.SourceIDs)
		if err != nil {
			return nil, fmt.Errorf("forget: %w", err)
		}
		for _, r := range resolved {
			if len(r.To) == 0 {
				unknown[r.Value] = true
			}
		}
		res.Resolved = resolved
		conds = append(conds, `source_id IN (SELECT value FROM json_each(?))`)
		args = append(args, jsonOf(nonNil(ids)))
	}
	if root := strings.TrimSpace(f.Root); root != "" {
		var forms []string
		for _, r := range []string{filepath.Clean(root), absPath(root)} {
			r = strings.TrimSuffix(filepath.ToSlash(r), "/")
			if r == "" {
				r = "/"
			}
			forms = append(forms, r)
		}
		for _, r := range forms {
			conds = append(conds, `origin = ? OR substr(origin, 1, length(?)) = ? OR substr(origin, 1, length(?)) = ?
				OR source_id = ? OR substr(source_id, 1, length(?)) = ?`)
			under, msg, doc := strings.TrimSuffix(r, "/")+"/", r+" ", "doc:"+r
			args = append(args, r, under, under, msg, msg, doc, doc+"/", doc+"/")
		}
	}
	where := "1"
	if len(conds) > 0 {
		where = "(" + strings.Join(conds, ") OR (") + ")"
	}
	if !f.Before.IsZero() {
		where = "(" + where + ") AND last_ms < ?"
		args = append(args, f.Before.UnixMilli())
	}
	q := `SELECT rowid, kind, source_id, title, origin, chunk_count, last_ms FROM sources WHERE ` + where + ` ORDER BY kind, source_id`
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("forget: select sources: %w", err)
	}
	defer rows.Close()
	var ids []int64
	found := map[string]bool{}
	for rows.Next() {
		var rid int64
		var src ForgottenSource
		if err := rows.Scan(&rid, &src.Kind, &src.SourceID, &src.Title, &src.Origin, &src.Chunks, &src.LastMS); err != nil {
			return nil, fmt.Errorf("forget: select sources: %w", err)
		}
		ids = append(ids, rid)
		found[src.SourceID] = true
		res.Sources = append(res.Sources, src)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("forget: select sources: %w", err)
	}
	for _, id := range f.SourceIDs {
		if v := strings.TrimSpace(id); !found[v] && (unknown[v] || !isResolved(res.Resolved, v)) {
			res.NotFound = append(res.NotFound, id)
		}
	}
	return ids, nil
}

// isResolved reports whether v was read as something other than a stored id.
func isResolved(rs []abi.Resolution, v string) bool {
	for _, r := range rs {
		if r.Value == v {
			return true
		}
	}
	return false
}

// forgetSource deletes (or, with dryRun, counts) one source's rows and notes the
// entities its chunks mention in touched.
func forgetSource(ctx context.Context, tx *sql.Tx, rid int64, res *ForgetResult, touched map[string]bool, dryRun bool) error {
	ents, err := tx.QueryContext(ctx, `SELECT DISTINCT ce.entity_id FROM chunk_entities ce JOIN chunks c ON c.rowid=ce.chunk_rowid WHERE c.source_rowid=?`, rid)
	if err != nil {
		return fmt.Errorf("forget: read entities: %w", err)
	}
	for ents.Next() {
		var e string
		if err := ents.Scan(&e); err != nil {
			ents.Close()
			return fmt.Errorf("forget: read entities: %w", err)
		}
		touched[e] = true
	}
	ents.Close()
	if err := ents.Err(); err != nil {
		return fmt.Errorf("forget: read entities: %w", err)
	}
	counts := []struct {
		dst *int
		q   string
	}{
		{&res.Chunks, `SELECT count(*) FROM chunks WHERE source_rowid=?1`},
		{&res.Summaries, `SELECT count(*) FROM summaries WHERE source_rowid=?1`},
		{&res.Messages, `SELECT count(*) FROM source_messages WHERE source_rowid=?1`},
		{&res.Vectors, `SELECT count(*) FROM vectors WHERE node_id IN (SELECT id FROM chunks WHERE source_rowid=?1 UNION ALL SELECT id FROM summaries WHERE source_rowid=?1)`},
	}
	for _, c := range counts {
		var n int
		if err := tx.QueryRowContext(ctx, c.q, rid).Scan(&n); err != nil {
			return fmt.Errorf("forget: count rows: %w", err)
		}
		*c.dst += n
	}
	if dryRun {
		return nil
	}
	// Vectors first (they are keyed by the ids of the rows below); the delete
	// triggers take the chunks' and summaries' rows out of their full-text indexes,
	// the chunk delete cascades to chunk_entities.
	for _, q := range []string{
		`DELETE FROM vectors WHERE node_id IN (SELECT id FROM chunks WHERE source_rowid=?1 UNION ALL SELECT id FROM summaries WHERE source_rowid=?1)`,
		`DELETE FROM summaries WHERE source_rowid=?1`,
		`DELETE FROM chunk_entities WHERE chunk_rowid IN (SELECT rowid FROM chunks WHERE source_rowid=?1)`,
		`DELETE FROM chunks WHERE source_rowid=?1`,
		`DELETE FROM source_messages WHERE source_rowid=?1`,
		`DELETE FROM sources WHERE rowid=?1`,
	} {
		if _, err := tx.ExecContext(ctx, q, rid); err != nil {
			return fmt.Errorf("forget: %.40s…: %w", q, err)
		}
	}
	return nil
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	return a
}
