// Package memtree is the memory tree's SQLite backend: the store of ingested
// chunks, entities, sources and summaries (schema, writer, merge, forget,
// status), the backend contract over FTS5 (index.Backend, index.Messages) and
// the rows of the plain reads (index.Plain). The read API over it is
// internal/memory.
package memtree

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// EmptyHint is returned in read results while the store holds nothing.
const EmptyHint = abi.EmptyHint

// Store is the memory tree store. A Store opened with Open can write (Ingest,
// EmbedMissing) and read; one opened with OpenReadOnly only reads. All read methods
// are safe for concurrent use.
type Store struct {
	path     string
	readOnly bool

	w  *sql.DB // writer: one connection, immediate transactions (nil when read-only)
	ws writeStmts
	sc stmtCache

	mu sync.Mutex // guards r while a missing read-only store is being (re)opened
	r  *sql.DB    // readers: a pool of read-only connections (nil while the file does not exist)

	expander atomic.Pointer[expanderBox]
	embedder atomic.Pointer[embedderBox]

	dfc dfCache
	bc  browseCache
	rc  retrievalCache
	sec scopedEntityCache // scope.go
}

// dsn builds a modernc DSN for path with the given extra query parameters.
func dsn(path string, params url.Values) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params.Encode()
}

// Open opens (creating if needed) the store at path for reading and writing. It
// creates missing directories (mode 0700), enables WAL and foreign keys, and runs
// the schema migrations.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("open memory tree: empty store path: %w", ErrInvalid)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open memory tree: create directory for %s: %w", path, err)
	}
	p := url.Values{}
	p.Add("_pragma", "busy_timeout(10000)")
	p.Add("_pragma", "journal_mode(WAL)")
	p.Add("_pragma", "foreign_keys(1)")
	// synchronous=NORMAL in WAL mode cannot corrupt the store; on power loss (not a
	// process crash) the last few committed sources may be lost and re-ingested.
	p.Add("_pragma", "synchronous(NORMAL)")
	// 24 MiB. Each cached page costs about twice its size in RSS (the driver allocates
	// every page separately, rounded up to 8 KiB): 64 MiB of cache held ~130 MB of
	// an ingest's peak RSS; measured on a 1M-record ingest, 16 MiB cost 9 % more CPU.
	p.Add("_pragma", "cache_size(-24576)")
	p.Add("_pragma", "temp_store(MEMORY)")
	p.Add("_pragma", "wal_autocheckpoint(8192)") // checkpoint every ~32 MiB of WAL, not every 4 MiB
	p.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", dsn(path, p))
	if err != nil {
		return nil, fmt.Errorf("open memory tree %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := migrate(context.Background(), w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open memory tree %s: %w", path, err)
	}
	// FTS5 writes a segment per transaction (and per statement with a statement
	// journal): merging 16 segments at a time (not 4) halves the merge work the
	// writer repeats (measured: 10k-record ingest CPU -8 %, wall -20 %).
	// (The insert triggers of schema version 1 are dropped by migration 2.)
	for _, q := range []string{
		`INSERT INTO chunks_fts(chunks_fts, rank) VALUES('automerge', 16)`,
		`INSERT INTO chunks_fts(chunks_fts, rank) VALUES('crisismerge', 64)`,
	} {
		if _, err := w.Exec(q); err != nil {
			w.Close()
			return nil, fmt.Errorf("open memory tree %s: set full-text indexing: %w", path, err)
		}
	}
	s := &Store{path: path, w: w}
	s.SetExpander(lexiconExpander)
	if err := errors.Join(s.ws.prepare(w), s.sc.prepareAll(w)); err != nil {
		s.ws.close()
		s.sc.close()
		w.Close()
		return nil, fmt.Errorf("open memory tree %s: %w", path, err)
	}
	if s.r, err = openReaders(path); err != nil {
		w.Close()
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens the store at path for reading only (mode=ro, query_only). A
// store file that does not exist yet reads as empty: every read returns empty results
// with Hint set to EmptyHint. The file is picked up once an ingest creates it.
func OpenReadOnly(path string) (*Store, error) {
	s, err := NewReadOnly(path)
	if err != nil {
		return nil, err
	}
	if err := s.Open(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// NewReadOnly is OpenReadOnly without opening anything: the file is opened by
// Open, Warm or the first read. A server opens it with Open in the background
// while it loads the rest, and reports Open's error as OpenReadOnly would.
func NewReadOnly(path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("open memory tree: empty store path: %w", ErrInvalid)
	}
	s := &Store{path: path, readOnly: true}
	s.SetExpander(lexiconExpander)
	return s, nil
}

// Open opens the read pool now and checks the store's schema version (once; a
// store file that does not exist yet is not an error). Reads call it as needed.
func (s *Store) Open(ctx context.Context) error {
	_, err := s.readers(ctx)
	return err
}

func openReaders(path string) (*sql.DB, error) {
	r, v, err := openReadersWith(path, nil)
	if err != nil && isReadOnlyOpenError(err) {
		// SQLite reads a WAL-mode store through its -shm index, which it cannot
		// create in a read-only directory (SQLITE_READONLY_DIRECTORY). Without a
		// -wal file holding unfinished writes, nothing needs the index: in a
		// read-only directory no writer can start either (it would have to create
		// the -wal), so the file cannot change and SQLite may read it as
		// immutable, without locks or index.
		if st, werr := os.Stat(path + "-wal"); werr == nil && st.Size() > 0 {
			return nil, fmt.Errorf("open memory tree %s read-only: its write-ahead log %s-wal holds writes not yet in the store, and reading it needs an index file (%s-shm) that cannot be created in %s; open the store once with write access (run `openhuman-core ingest`, or make the directory writable), or copy the store's files to a writable directory: %w",
				path, path, path, filepath.Dir(path), err)
		}
		r, v, err = openReadersWith(path, func(p url.Values) { p.Set("immutable", "1") })
	}
	if err != nil {
		return nil, err
	}
	if v > schemaVersion {
		r.Close()
		return nil, fmt.Errorf("open memory tree %s: schema version %d is newer than this binary supports (%d); upgrade openhuman-core", path, v, schemaVersion)
	}
	return r, nil
}

// isReadOnlyOpenError reports SQLite's SQLITE_READONLY (8) and SQLITE_CANTOPEN
// (14) families, which a store in a read-only directory gives.
func isReadOnlyOpenError(err error) bool {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return false
	}
	primary := se.Code() & 0xff
	return primary == 8 || primary == 14
}

// openReadersWith opens the read pool (with extra DSN parameters) and reads the
// schema version.
func openReadersWith(path string, extra func(url.Values)) (*sql.DB, int, error) {
	p := url.Values{}
	p.Set("mode", "ro")
	p.Add("_pragma", "busy_timeout(10000)")
	p.Add("_pragma", "query_only(1)")
	if extra != nil {
		extra(p)
	}
	r, err := sql.Open("sqlite", dsn(path, p))
	if err != nil {
		return nil, 0, fmt.Errorf("open memory tree %s read-only: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	var v int
	if err := r.QueryRow(`SELECT value FROM meta WHERE key='schema_version'`).Scan(&v); err != nil {
		r.Close()
		if isReadOnlyOpenError(err) {
			return nil, 0, fmt.Errorf("open memory tree %s read-only: %w", path, err)
		}
		return nil, 0, fmt.Errorf("open memory tree %s read-only: no readable schema (is it a memory tree store? re-create it with `openhuman-core ingest`): %w", path, err)
	}
	return r, v, nil
}

// plainReaders is readers for a plain read (index.Plain): index.ErrEmpty when
// the store file does not exist yet.
func (s *Store) plainReaders(ctx context.Context) (*sql.DB, error) {
	db, err := s.readers(ctx)
	if err == nil && db == nil {
		err = index.ErrEmpty
	}
	return db, err
}

// readers returns the read pool, or nil when the store file does not exist yet.
func (s *Store) readers(ctx context.Context) (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil {
		return s.r, nil
	}
	if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("open memory tree %s: %w", s.path, err)
	}
	r, err := openReaders(s.path)
	if err != nil {
		return nil, err
	}
	s.r = r
	return r, nil
}

// Path returns the store's file path.
func (s *Store) Path() string { return s.path }

// Close closes the store's connections.
func (s *Store) Close() error {
	var errs []error
	s.mu.Lock()
	if s.r != nil {
		dropReadStmts(s.r)
		errs = append(errs, s.r.Close())
		s.r = nil
	}
	s.mu.Unlock()
	if s.w != nil {
		s.ws.close()
		s.sc.close()
		errs = append(errs, s.w.Close())
		s.w = nil
	}
	return errors.Join(errs...)
}

// Stats counts what the store holds.
type Stats struct {
	Sources   map[string]int // sources per kind
	Chunks    map[string]int // chunks per source kind
	Entities  int
	Summaries int
	Vectors   int
}

// TotalChunks sums Chunks over all kinds.
func (st Stats) TotalChunks() int {
	n := 0
	for _, c := range st.Chunks {
		n += c
	}
	return n
}

// Stats returns counts per source kind, chunks, entities and summaries.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Sources: map[string]int{}, Chunks: map[string]int{}}
	db, err := s.readers(ctx)
	if err != nil || db == nil {
		return st, err
	}
	rows, err := db.QueryContext(ctx, `SELECT kind, count(*), coalesce(sum(chunk_count),0) FROM sources GROUP BY kind`)
	if err != nil {
		return st, fmt.Errorf("memory tree stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n, c int
		if err := rows.Scan(&k, &n, &c); err != nil {
			return st, fmt.Errorf("memory tree stats: %w", err)
		}
		st.Sources[k], st.Chunks[k] = n, c
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("memory tree stats: %w", err)
	}
	for _, q := range []struct {
		dst *int
		sql string
	}{
		{&st.Entities, `SELECT count(*) FROM entities`},
		{&st.Summaries, `SELECT count(*) FROM summaries`},
		{&st.Vectors, `SELECT count(*) FROM vectors`},
	} {
		if err := db.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return st, fmt.Errorf("memory tree stats: %w", err)
		}
	}
	return st, nil
}
