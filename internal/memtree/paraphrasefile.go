package memtree

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/openhuman/openhuman-core/internal/pivot"
)

// metaParaphraseFile is the meta key naming the machine-wide paraphrase file (see
// WriteParaphraseFile) a store reads its paraphrases from instead of its own table.
const metaParaphraseFile = "paraphrase_file"

// The paraphrase table is the same for every store built from the same dictionaries,
// and building it takes seconds (5-28 s; 200k words from FreeDict English-German)
// while copying it into a store takes about one more. So it is built once per
// machine into a file of its own, beside the user's compile cache, and each store
// records which file it reads: the first ingest into a fresh store then costs what
// any small ingest costs.

// WriteParaphraseFile writes entries to a standalone SQLite paraphrase table at
// path (built beside it and renamed into place, so that a reader never sees half a
// file and two builders do not clash), recording source as SetParaphrases does.
func WriteParaphraseFile(ctx context.Context, path, source string, entries []pivot.Entry) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write paraphrase file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write paraphrase file: %w", err)
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name) // after the rename there is nothing left to remove
	p := url.Values{}
	p.Add("_pragma", "journal_mode(OFF)")
	p.Add("_pragma", "synchronous(OFF)")
	db, err := sql.Open("sqlite", dsn(name, p))
	if err != nil {
		return fmt.Errorf("write paraphrase file %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write paraphrase file %s: %w", path, err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`CREATE TABLE paraphrases(word TEXT PRIMARY KEY, terms TEXT NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("write paraphrase file %s: %w", path, err)
		}
	}
	if err := insertParaphrases(ctx, tx, entries); err != nil {
		return fmt.Errorf("write paraphrase file %s: %w", path, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)`, metaParaphraseSource, source); err != nil {
		return fmt.Errorf("write paraphrase file %s: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write paraphrase file %s: %w", path, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("write paraphrase file %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write paraphrase file: %w", err)
	}
	return nil
}

// ParaphraseFileSource returns the source recorded in the paraphrase file at path;
// ok is false when there is no readable file there.
func ParaphraseFileSource(ctx context.Context, path string) (source string, ok bool) {
	if _, err := os.Stat(path); err != nil {
		return "", false // not built yet: nothing to warn about
	}
	db, err := paraphraseFileDB(path)
	if err != nil || db == nil {
		return "", false
	}
	if err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, metaParaphraseSource).Scan(&source); err != nil {
		return "", false
	}
	return source, true
}

// UseParaphraseFile makes the store read its paraphrases from the file at path (see
// WriteParaphraseFile), built from source: the store's own table is emptied and
// both are recorded in one transaction.
func (s *Store) UseParaphraseFile(ctx context.Context, source, path string) error {
	if s.readOnly || s.w == nil {
		return fmt.Errorf("use paraphrase file: %w", ErrReadOnly)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("use paraphrase file: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("use paraphrase file: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM paraphrases`, nil},
		{`INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, []any{metaParaphraseSource, source}},
		{`INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, []any{metaParaphraseFile, abs}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("use paraphrase file: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("use paraphrase file: %w", err)
	}
	return nil
}

// ParaphraseFile returns the paraphrase file the store reads ("" when it reads its
// own table or has none).
func (s *Store) ParaphraseFile(ctx context.Context) (string, error) {
	db := s.w
	if db == nil {
		var err error
		if db, err = s.readers(ctx); err != nil || db == nil {
			return "", err
		}
	}
	return paraphraseFileOf(ctx, db)
}

func paraphraseFileOf(ctx context.Context, db *sql.DB) (string, error) {
	var v string
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, metaParaphraseFile).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("paraphrase file: %w", err)
	}
	return v, nil
}

// paraphraseFiles holds one read-only pool per paraphrase file, shared by every
// store of the process (the file is the same for all of them).
var paraphraseFiles struct {
	mu      sync.Mutex
	dbs     map[string]*sql.DB
	files   map[string]os.FileInfo // what each pool opened, to notice a file removed or replaced
	missing map[string]bool        // warned about once
}

// paraphraseFileDB returns the read pool of the paraphrase file at path, nil when
// there is no file there (a cleared cache: recall expands with WordNet alone until
// the next ingest rebuilds it).
func paraphraseFileDB(path string) (*sql.DB, error) {
	paraphraseFiles.mu.Lock()
	defer paraphraseFiles.mu.Unlock()
	fi, err := os.Stat(path)
	if db := paraphraseFiles.dbs[path]; db != nil {
		if err == nil && os.SameFile(fi, paraphraseFiles.files[path]) {
			return db, nil
		}
		// Not closed: a lookup may be using it; the file was removed or
		// replaced (a cleared cache, then a rebuild), which is rare.
		delete(paraphraseFiles.dbs, path)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if !paraphraseFiles.missing[path] {
				if paraphraseFiles.missing == nil {
					paraphraseFiles.missing = map[string]bool{}
				}
				paraphraseFiles.missing[path] = true
				slog.Warn("memory tree: the paraphrase file is gone; recall expands with WordNet alone until the next ingest rebuilds it", "file", path)
			}
			return nil, nil
		}
		return nil, fmt.Errorf("paraphrase file: %w", err)
	}
	p := url.Values{}
	p.Set("mode", "ro")
	p.Add("_pragma", "query_only(1)")
	// Lookups are point reads of one word (a few B-tree pages each, from the OS's
	// page cache): a small page cache and two connections serve them. With
	// SQLite's default 2 MiB cache on each of four connections, the file cost a
	// server about 3.5 MB of RSS after 300 mixed calls (cmd/bench).
	p.Add("_pragma", "cache_size(-256)")
	db, err := sql.Open("sqlite", dsn(path, p))
	if err != nil {
		return nil, fmt.Errorf("paraphrase file %s: %w", path, err)
	}
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	if paraphraseFiles.dbs == nil {
		paraphraseFiles.dbs = map[string]*sql.DB{}
		paraphraseFiles.files = map[string]os.FileInfo{}
	}
	paraphraseFiles.dbs[path] = db
	paraphraseFiles.files[path] = fi
	delete(paraphraseFiles.missing, path)
	return db, nil
}

// paraphraseTable returns the database whose paraphrases table the store reads:
// the machine-wide file when the store names one, else the store's own db.
func paraphraseTable(ctx context.Context, db *sql.DB) (*sql.DB, error) {
	f, err := paraphraseFileOf(ctx, db)
	if err != nil || f == "" {
		return db, err
	}
	return paraphraseFileDB(f)
}
