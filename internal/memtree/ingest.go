package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ErrReadOnly is returned (wrapped) when a write is attempted on a read-only store.
var ErrReadOnly = fmt.Errorf("memory tree opened read-only")

func validateSource(in *SourceInput) error {
	where := in.Origin
	if where == "" {
		where = in.SourceID
	}
	switch in.Kind {
	case KindEmail, KindChat, KindDocument:
	default:
		return fmt.Errorf("ingest %s: source kind %q is not one of email, chat, document: %w", where, in.Kind, ErrInvalid)
	}
	if strings.TrimSpace(in.SourceID) == "" {
		return fmt.Errorf("ingest %s: empty source id (the ingester must name every source): %w", where, ErrInvalid)
	}
	if !utf8.ValidString(in.SourceID) || !utf8.ValidString(in.Title) {
		return fmt.Errorf("ingest %s: source id or title is not valid UTF-8: %w", where, ErrInvalid)
	}
	for i, m := range in.Messages {
		if !utf8.ValidString(m.Text) || !utf8.ValidString(m.Author) || !utf8.ValidString(m.Subject) || !utf8.ValidString(m.Ref) {
			return fmt.Errorf("ingest %s: message %d (ref %q) is not valid UTF-8; decode it before ingesting: %w", where, i+1, m.Ref, ErrInvalid)
		}
	}
	return nil
}

// Ingest writes one source in one transaction: it chunks the messages, extracts
// entities, builds the summary tree and replaces the chunk set an earlier ingest of
// the same (Kind, SourceID) left. Identical input adds nothing (UnchangedChunks counts
// it). A source with no text is rejected with ErrInvalid.
func (s *Store) Ingest(ctx context.Context, in SourceInput) (IngestStats, error) {
	var st IngestStats
	if s.w == nil {
		return st, fmt.Errorf("ingest %s: %w; open it with memtree.Open", in.SourceID, ErrReadOnly)
	}
	if err := validateSource(&in); err != nil {
		return st, err
	}
	in.Messages = append([]MessageInput(nil), in.Messages...)
	sortMessages(in.Messages)
	chunks := buildChunks(&in, maxChunkChars)
	if len(chunks) == 0 {
		where := in.Origin
		if where == "" {
			where = in.SourceID
		}
		return st, fmt.Errorf("ingest %s: source %q has no text to store: %w", where, in.SourceID, ErrInvalid)
	}
	ents := map[string]bool{}
	for _, c := range chunks {
		for id := range c.Entities {
			ents[id] = true
		}
	}
	st.Entities = len(ents)

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return st, fmt.Errorf("ingest %s: begin transaction: %w", in.SourceID, err)
	}
	defer tx.Rollback()
	if err := s.writeSource(ctx, tx, &in, chunks, &st); err != nil {
		return IngestStats{Entities: st.Entities}, fmt.Errorf("ingest %s: %w", in.SourceID, err)
	}
	if err := tx.Commit(); err != nil {
		return IngestStats{Entities: st.Entities}, fmt.Errorf("ingest %s: commit: %w", in.SourceID, err)
	}
	return st, nil
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return "[]"
	}
	return string(b)
}

func (s *Store) writeSource(ctx context.Context, tx *sql.Tx, in *SourceInput, chunks []chunk, st *IngestStats) error {
	now := time.Now().UnixMilli()
	tags := in.Tags
	if tags == nil {
		tags = []string{}
	}
	var srcRow int64
	err := s.txQueryRow(ctx, tx, qUpsertSource,
		in.Kind, in.SourceID, in.Title, in.Provider, jsonOf(tags), in.Origin, now).Scan(&srcRow)
	if err != nil {
		return fmt.Errorf("write source row: %w", err)
	}
	// Existing chunks of this source.
	existing := map[string]int64{}
	rows, err := s.txQuery(ctx, tx, qSourceChunks, srcRow)
	if err != nil {
		return fmt.Errorf("read existing chunks: %w", err)
	}
	for rows.Next() {
		var id string
		var rid int64
		if err := rows.Scan(&id, &rid); err != nil {
			rows.Close()
			return fmt.Errorf("read existing chunks: %w", err)
		}
		existing[id] = rid
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read existing chunks: %w", err)
	}
	keep := map[string]bool{}
	for _, c := range chunks {
		keep[c.ID] = true
	}
	// Remove chunks that are no longer part of the source.
	touched := map[string]bool{}
	for id, rid := range existing {
		if keep[id] {
			continue
		}
		if err := s.removeChunk(ctx, tx, id, rid, touched); err != nil {
			return err
		}
		st.RemovedChunks++
	}
	if len(touched) > 0 {
		if err := s.refreshEntities(ctx, tx, touched); err != nil {
			return err
		}
	}
	// Insert new chunks.
	insChunk := tx.StmtContext(ctx, s.ws.insChunk)
	insEnt := tx.StmtContext(ctx, s.ws.insEnt)
	insLink := tx.StmtContext(ctx, s.ws.insLink)
	changed := st.RemovedChunks > 0
	for _, c := range chunks {
		if _, ok := existing[c.ID]; ok {
			st.UnchangedChunks++
			continue
		}
		var ref any
		if len(c.Refs) > 0 {
			ref = c.Refs[0]
		}
		refs := c.Refs
		if refs == nil {
			refs = []string{}
		}
		var rid int64
		err := insChunk.QueryRowContext(ctx, c.ID, srcRow, in.Kind, in.SourceID, c.Seq, c.TS, c.TSStart, c.TSEnd,
			in.Title, c.Text, jsonOf(tags), ref, jsonOf(refs), jsonOf(c.Spans), jsonOf(c.Attachments), tokenCount(c.Text), now).Scan(&rid)
		if err == sql.ErrNoRows {
			// The same id exists under another source row: identical kind, source id,
			// seq and text cannot differ, so this only happens on a hash collision.
			return fmt.Errorf("chunk %s (seq %d) already stored for another source", c.ID, c.Seq)
		}
		if err != nil {
			return fmt.Errorf("write chunk seq %d: %w", c.Seq, err)
		}
		for id, e := range c.Entities {
			if _, err := insEnt.ExecContext(ctx, id, e.Kind, e.Surface, c.TS); err != nil {
				return fmt.Errorf("write entity %s: %w", id, err)
			}
			if _, err := insLink.ExecContext(ctx, id, rid); err != nil {
				return fmt.Errorf("link entity %s: %w", id, err)
			}
		}
		st.NewChunks++
		changed = true
	}
	// Source aggregates.
	if _, err := s.txExec(ctx, tx, qSourceAggregates, srcRow); err != nil {
		return fmt.Errorf("update source aggregates: %w", err)
	}
	var nsum int
	if err := s.txQueryRow(ctx, tx, qCountSummaries, srcRow).Scan(&nsum); err != nil {
		return fmt.Errorf("read summaries: %w", err)
	}
	if changed || nsum == 0 {
		if err := s.writeSummaries(ctx, tx, tx.StmtContext(ctx, s.ws.insSummary), srcRow, in, chunks); err != nil {
			return err
		}
	}
	if changed {
		if _, err := s.txExec(ctx, tx, qBumpGeneration); err != nil {
			return fmt.Errorf("bump store generation: %w", err)
		}
	}
	return nil
}

// removeChunk deletes one chunk with its FTS row (trigger), entity links (cascade),
// vectors; entities it referenced are noted in touched for a refresh.
func (s *Store) removeChunk(ctx context.Context, tx *sql.Tx, id string, rid int64, touched map[string]bool) error {
	rows, err := s.txQuery(ctx, tx, qChunkEntities, rid)
	if err != nil {
		return fmt.Errorf("read entities of chunk %s: %w", id, err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			rows.Close()
			return fmt.Errorf("read entities of chunk %s: %w", id, err)
		}
		touched[e] = true
	}
	rows.Close()
	if _, err := s.txExec(ctx, tx, qDeleteChunk, rid); err != nil {
		return fmt.Errorf("delete chunk %s: %w", id, err)
	}
	if _, err := s.txExec(ctx, tx, qDeleteChunkVectors, id); err != nil {
		return fmt.Errorf("delete vectors of chunk %s: %w", id, err)
	}
	return nil
}

// refreshEntities recomputes ref_count and last_seen of the given entities from their
// links, deleting entities no chunk references any more.
func (s *Store) refreshEntities(ctx context.Context, tx *sql.Tx, ids map[string]bool) error {
	for id := range ids {
		if _, err := s.txExec(ctx, tx, qRefreshEntity, id); err != nil {
			return fmt.Errorf("refresh entity %s: %w", id, err)
		}
		if _, err := s.txExec(ctx, tx, qDropEntity, id); err != nil {
			return fmt.Errorf("drop unreferenced entity %s: %w", id, err)
		}
	}
	return nil
}

// writeStmts are the writer's prepared statements, reused by every Ingest.
type writeStmts struct {
	insChunk, insEnt, insLink, insSummary *sql.Stmt
}

func (ws *writeStmts) prepare(db *sql.DB) error {
	var err error
	prep := func(dst **sql.Stmt, q string) {
		if err == nil {
			*dst, err = db.Prepare(q)
		}
	}
	prep(&ws.insChunk, `INSERT INTO chunks(id, source_rowid, kind, source_id, seq, ts, ts_start, ts_end,
		title, text, tags_json, source_ref, source_refs_json, ref_spans_json, attachments_json, token_count, created_ms)
		VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING RETURNING rowid`)
	prep(&ws.insEnt, `INSERT INTO entities(id, kind, surface, ref_count, last_seen) VALUES(?,?,?,1,?)
		ON CONFLICT(id) DO UPDATE SET ref_count=ref_count+1, last_seen=max(last_seen, excluded.last_seen),
			surface=CASE WHEN excluded.last_seen >= last_seen THEN excluded.surface ELSE surface END`)
	prep(&ws.insLink, `INSERT OR IGNORE INTO chunk_entities(entity_id, chunk_rowid) VALUES(?,?)`)
	prep(&ws.insSummary, `INSERT INTO summaries(id, source_rowid, level, idx, text, child_ids_json, leaf_ids_json, ts_start, ts_end)
		VALUES(?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return fmt.Errorf("prepare write statements: %w", err)
	}
	return nil
}

func (ws *writeStmts) close() {
	for _, st := range []*sql.Stmt{ws.insChunk, ws.insEnt, ws.insLink, ws.insSummary} {
		if st != nil {
			st.Close()
		}
	}
}

// stmtCache holds the writer's prepared statements by SQL text (the writer has one
// connection, so a statement prepared once serves every transaction).
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepareAll prepares every writer statement; it must run outside a transaction
// (the writer's single connection is busy inside one).
func (c *stmtCache) prepareAll(db *sql.DB) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = map[string]*sql.Stmt{}
	for _, q := range writerQueries {
		st, err := db.Prepare(q)
		if err != nil {
			return fmt.Errorf("prepare %.50s…: %w", q, err)
		}
		c.m[q] = st
	}
	return nil
}

func (s *Store) prepared(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	s.sc.mu.Lock()
	st, ok := s.sc.m[q]
	s.sc.mu.Unlock()
	if !ok {
		// Not registered with writerSQL: prepare for this transaction only.
		return tx.PrepareContext(ctx, q)
	}
	return tx.StmtContext(ctx, st), nil
}

func (s *Store) txExec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	st, err := s.prepared(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// rowErr is a *sql.Row-like result for txQueryRow.
type rowErr struct {
	row *sql.Row
	err error
}

func (r rowErr) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.row.Scan(dest...)
}

func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) rowErr {
	st, err := s.prepared(ctx, tx, q)
	if err != nil {
		return rowErr{err: err}
	}
	return rowErr{row: st.QueryRowContext(ctx, args...)}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// writerQueries lists every statement the writer prepares once at Open.
var writerQueries []string

func writerSQL(q string) string {
	writerQueries = append(writerQueries, q)
	return q
}

// Writer statements, prepared at Open.
var (
	qUpsertSource = writerSQL(`INSERT INTO sources(kind, source_id, title, provider, tags_json, origin, updated_ms)
		VALUES(?,?,?,?,?,?,?)
		ON CONFLICT(kind, source_id) DO UPDATE SET title=excluded.title, provider=excluded.provider,
			tags_json=excluded.tags_json, origin=excluded.origin, updated_ms=excluded.updated_ms
		RETURNING rowid`)
	qSourceChunks     = writerSQL(`SELECT id, rowid FROM chunks WHERE source_rowid=?`)
	qSourceAggregates = writerSQL(`UPDATE sources SET
		chunk_count=(SELECT count(*) FROM chunks WHERE source_rowid=?1),
		first_ms=coalesce((SELECT min(ts_start) FROM chunks WHERE source_rowid=?1),0),
		last_ms=coalesce((SELECT max(ts_end) FROM chunks WHERE source_rowid=?1),0)
		WHERE rowid=?1`)
	qCountSummaries = writerSQL(`SELECT count(*) FROM summaries WHERE source_rowid=?`)
	qBumpGeneration = writerSQL(`INSERT INTO meta(key, value) VALUES('generation', '1')
			ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER)+1`)
	qChunkEntities      = writerSQL(`SELECT entity_id FROM chunk_entities WHERE chunk_rowid=?`)
	qDeleteChunk        = writerSQL(`DELETE FROM chunks WHERE rowid=?`)
	qDeleteChunkVectors = writerSQL(`DELETE FROM vectors WHERE node_id=?`)
	qRefreshEntity      = writerSQL(`UPDATE entities SET
			ref_count=(SELECT count(*) FROM chunk_entities WHERE entity_id=?1),
			last_seen=coalesce((SELECT max(c.ts) FROM chunk_entities ce JOIN chunks c ON c.rowid=ce.chunk_rowid WHERE ce.entity_id=?1),0)
			WHERE id=?1`)
	qDropEntity           = writerSQL(`DELETE FROM entities WHERE id=? AND ref_count<=0`)
	qDeleteSummaryVectors = writerSQL(`DELETE FROM vectors WHERE node_id IN (SELECT id FROM summaries WHERE source_rowid=?)`)
	qDeleteSummaries      = writerSQL(`DELETE FROM summaries WHERE source_rowid=?`)
)
