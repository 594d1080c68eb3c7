package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// metaLastIngest is the meta key holding the JSON of the last ingest run (IngestRecord).
const metaLastIngest = "last_ingest"

// IngestRecord describes one ingest run, as `openhuman-core status` shows it.
type IngestRecord struct {
	// Time is when the run ended.
	Time time.Time `json:"time"`
	// Roots are the paths named on the command line.
	Roots []string `json:"roots"`
	// Summary is the run's summary line.
	Summary string `json:"summary"`
	// Interrupted says the run was cancelled before it finished.
	Interrupted bool `json:"interrupted,omitempty"`
}

// RecordIngest stores rec as the store's last ingest run: one small meta row,
// replaced by every run. It does not change the store's generation (no read result
// depends on it).
func (s *Store) RecordIngest(ctx context.Context, rec IngestRecord) error {
	if s.w == nil {
		return fmt.Errorf("record the ingest run: %w", ErrReadOnly)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("record the ingest run: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)
		ON CONFLICT(key) DO UPDATE SET value=excluded.value`, metaLastIngest, string(b)); err != nil {
		return fmt.Errorf("record the ingest run: %w", err)
	}
	return nil
}

// StoreStatus is what `openhuman-core status` reports about the store.
type StoreStatus struct {
	// Path is the store file; Exists is false before the first ingest.
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Bytes is the size of the store file plus its -wal file.
	Bytes int64 `json:"bytes"`
	// SchemaVersion is the store's version; BinarySchemaVersion the one this binary writes.
	SchemaVersion       int `json:"schema_version"`
	BinarySchemaVersion int `json:"binary_schema_version"`
	// Sources and Chunks count per source kind.
	Sources     map[string]int `json:"sources"`
	Chunks      map[string]int `json:"chunks"`
	TotalChunks int            `json:"total_chunks"`
	Summaries   int            `json:"summaries"`
	Entities    int            `json:"entities"`
	// Vectors counts the stored vectors per embedding model ("model/dim").
	Vectors map[string]int `json:"vectors"`
	// Paraphrases counts the words of the bilingual paraphrase table.
	Paraphrases int `json:"paraphrases"`
	// LastIngest is the last recorded ingest run (nil when none is recorded).
	LastIngest *IngestRecord `json:"last_ingest"`
}

// Status reads what the store holds through a read-only connection. A store file
// that does not exist yet gives Exists false and zero counts.
func Status(ctx context.Context, path string) (StoreStatus, error) {
	st := StoreStatus{Path: path, BinarySchemaVersion: schemaVersion,
		Sources: map[string]int{}, Chunks: map[string]int{}, Vectors: map[string]int{}}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("store status: %w", err)
	}
	st.Exists, st.Bytes = true, fi.Size()
	if wal, err := os.Stat(path + "-wal"); err == nil {
		st.Bytes += wal.Size()
	}
	db, err := openReaders(path)
	if err != nil {
		return st, err
	}
	defer db.Close()
	if st.SchemaVersion, err = storeVersion(ctx, db); err != nil {
		return st, err
	}
	if err := scanGroups(ctx, db, `SELECT kind, count(*), coalesce(sum(chunk_count),0) FROM sources GROUP BY kind`, func(k string, a, b int) {
		st.Sources[k], st.Chunks[k] = a, b
		st.TotalChunks += b
	}); err != nil {
		return st, err
	}
	if err := scanGroups(ctx, db, `SELECT m.model || '/' || m.dim, count(v.node_id), 0 FROM embed_models m LEFT JOIN vectors v ON v.model_rowid=m.rowid GROUP BY m.rowid`, func(k string, a, _ int) {
		st.Vectors[k] = a
	}); err != nil {
		return st, err
	}
	for _, q := range []struct {
		dst *int
		sql string
	}{
		{&st.Entities, `SELECT count(*) FROM entities`},
		{&st.Summaries, `SELECT count(*) FROM summaries`},
		{&st.Paraphrases, `SELECT count(*) FROM paraphrases`},
	} {
		if err := db.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return st, fmt.Errorf("store status: %w", err)
		}
	}
	if pdb, err := paraphraseTable(ctx, db); err != nil {
		return st, fmt.Errorf("store status: %w", err)
	} else if pdb != nil && pdb != db {
		if err := pdb.QueryRowContext(ctx, `SELECT count(*) FROM paraphrases`).Scan(&st.Paraphrases); err != nil {
			return st, fmt.Errorf("store status: count the paraphrase file's words: %w", err)
		}
	}
	var raw string
	switch err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key=?`, metaLastIngest).Scan(&raw); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return st, fmt.Errorf("store status: read the last ingest: %w", err)
	default:
		var rec IngestRecord
		if json.Unmarshal([]byte(raw), &rec) == nil {
			st.LastIngest = &rec
		}
	}
	return st, nil
}

// scanGroups runs q, which yields (text, int, int) rows, and hands each to f.
func scanGroups(ctx context.Context, db *sql.DB, q string, f func(string, int, int)) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("store status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var a, b int
		if err := rows.Scan(&k, &a, &b); err != nil {
			return fmt.Errorf("store status: %w", err)
		}
		f(k, a, b)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store status: %w", err)
	}
	return nil
}
