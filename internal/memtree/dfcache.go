package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// dfCache caches the chunk count, per-term document frequencies and known people of
// one store generation (meta.generation, bumped by every ingest commit).
type dfCache struct {
	mu     sync.Mutex
	gen    string
	n      int
	df     map[string]int
	people map[string][]string // folded name → person entity ids
	maxTS  int64
	loaded bool
}

// generation reads the store's write generation.
func generation(ctx context.Context, db *sql.DB) (string, error) {
	var g sql.NullString
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='generation'`).Scan(&g)
	if err != nil && err != sql.ErrNoRows {
		return "", fmt.Errorf("read store generation: %w", err)
	}
	return g.String, nil
}

// snapshot returns the cache for the current generation, reloading the cheap parts
// (chunk count, newest timestamp, people) when the store changed.
func (s *Store) snapshot(ctx context.Context, db *sql.DB) (*dfCache, error) {
	g, err := generation(ctx, db)
	if err != nil {
		return nil, err
	}
	c := &s.dfc
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded && c.gen == g {
		return c, nil
	}
	c.gen, c.df, c.people = g, map[string]int{}, map[string][]string{}
	if err := db.QueryRowContext(ctx, `SELECT count(*), coalesce(max(ts_end),0) FROM chunks`).Scan(&c.n, &c.maxTS); err != nil {
		return nil, fmt.Errorf("count chunks: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT id FROM entities WHERE kind='person'`)
	if err != nil {
		return nil, fmt.Errorf("load people: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("load people: %w", err)
		}
		name := strings.Join(words(strings.TrimPrefix(id, "person:")), " ")
		c.people[name] = append(c.people[name], id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load people: %w", err)
	}
	c.loaded = true
	return c, nil
}

// docFreq returns the number of chunks containing stemmed term t (cached per generation).
func (s *Store) docFreq(ctx context.Context, db *sql.DB, t string) (int, error) {
	c := &s.dfc
	c.mu.Lock()
	if d, ok := c.df[t]; ok {
		c.mu.Unlock()
		return d, nil
	}
	c.mu.Unlock()
	var d int
	err := db.QueryRowContext(ctx, `SELECT doc FROM chunks_fts_vocab WHERE term=?`, t).Scan(&d)
	if err != nil && err != sql.ErrNoRows {
		return 0, fmt.Errorf("read document frequency of %q: %w", t, err)
	}
	c.mu.Lock()
	if len(c.df) > 100000 {
		c.df = map[string]int{}
	}
	c.df[t] = d
	c.mu.Unlock()
	return d, nil
}
