// Package pgstore is the PostgreSQL backend of the memory tree: the backend
// contract (internal/retrieval/index) over tables of sources, chunks, their
// analyzed terms, document frequencies and entities, and a writer that stores
// what internal/memtree's Prepare chunks, one transaction per source.
//
// The text index holds internal/analysis's terms exactly (terms.go), and
// ranking is FTS5's BM25 computed from the same counts, so answers and scores
// match the SQLite backend's.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Store is one PostgreSQL database holding a memory tree.
type Store struct {
	pool *pgxpool.Pool // the primary: writes, status, and reads without replicas
	// rd runs the tools' reads: the primary's pool, or a readPool sending them
	// to the replicas first (replicas.go).
	rd    querier
	reps  []*replica
	where string // postgres://host:port/database, for status and errors (no password)

	mu   sync.Mutex
	snap *snapshot // the newest generation read (nil: none yet)

	para paraphraseFile   // recall's paraphrase table (paraphrases.go)
	emb  embedderSlot     // recall's dense embedder (vectors.go)
	vecs embed.IndexCache // the vectors in memory, per model and scope (vectors.go)
}

// Open connects to the database at url (a postgres:// URL or key=value
// connection string), checks that it answers and brings its schema up to date.
// An unreachable server is an error naming the host and what to check. Reads
// go to the hot standbys at replicas first, when given (replicas.go).
func Open(ctx context.Context, url string, replicas ...string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store url: %w (want postgres://user@host:port/database)", redactErr(err))
	}
	where := fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	if strings.HasPrefix(cfg.ConnConfig.Host, "/") {
		where = fmt.Sprintf("socket %s (port %d)", cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("PostgreSQL at %s, database %q, does not answer: %w; check that the server runs and accepts connections there, and the user, password and database in the store URL", where, cfg.ConnConfig.Database, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("PostgreSQL at %s: %w", where, err)
	}
	s := &Store{pool: pool, rd: pool, where: fmt.Sprintf("postgres://%s/%s", where, cfg.ConnConfig.Database)}
	if len(replicas) > 0 {
		reps, err := openReplicas(ctx, replicas, slog.Default())
		if err != nil {
			pool.Close()
			return nil, err
		}
		s.reps = reps
		s.rd = &readPool{primary: pool, replicas: reps, log: slog.Default()}
	}
	return s, nil
}

// redactErr keeps a URL parse error from repeating a password.
func redactErr(err error) error {
	return errors.New(strings.SplitN(err.Error(), "://", 2)[0] + ": malformed")
}

// Close closes the store's connections.
func (s *Store) Close() {
	for _, r := range s.reps {
		r.pool.Close()
	}
	s.pool.Close()
}

// snapshot is one generation's counts, read once and shared by the read calls
// of that generation.
type snapshot struct {
	gen    int64
	n      int     // chunks
	avgdl  float64 // average term count of a chunk
	latest int64   // the newest chunk time
	people map[string][]string

	mu sync.Mutex
	df map[string]int // term → document frequency, filled as read
}

// current returns the generation's snapshot, reading it when the store changed
// (counts, newest time and people in one repeatable-read transaction, so they
// are of one generation).
func (s *Store) current(ctx context.Context) (*snapshot, error) {
	var gen int64
	if err := s.rd.QueryRow(ctx, `SELECT generation FROM store_stats`).Scan(&gen); err != nil {
		return nil, fmt.Errorf("read store counts: %w", err)
	}
	s.mu.Lock()
	if s.snap != nil && s.snap.gen == gen {
		snap := s.snap
		s.mu.Unlock()
		return snap, nil
	}
	s.mu.Unlock()
	tx, err := s.rd.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("read store counts: %w", err)
	}
	defer tx.Rollback(ctx)
	var n, total int64
	if err := tx.QueryRow(ctx, `SELECT generation, chunks, term_total FROM store_stats`).Scan(&gen, &n, &total); err != nil {
		return nil, fmt.Errorf("read store counts: %w", err)
	}
	snap := &snapshot{gen: gen, n: int(n), people: map[string][]string{}, df: map[string]int{}}
	if n > 0 {
		snap.avgdl = float64(total) / float64(n)
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(last_ms), 0) FROM sources`).Scan(&snap.latest); err != nil {
		return nil, fmt.Errorf("newest chunk time: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT id FROM entities WHERE kind = 'person'`)
	if err != nil {
		return nil, fmt.Errorf("load people: %w", err)
	}
	defer rows.Close()
	if err := memtree.ReadPeople(rows, snap.people); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.snap == nil || s.snap.gen < gen {
		s.snap = snap
	}
	s.mu.Unlock()
	return snap, nil
}

// genID is a generation's id for index.Generation.
func genID(g int64) string { return strconv.FormatInt(g, 10) }
