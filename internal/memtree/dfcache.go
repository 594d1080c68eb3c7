package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sync"

	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// dfCache caches the chunk count, per-term document frequencies and known people of
// one store generation (meta.generation, bumped by every ingest commit).
type dfCache struct {
	mu     sync.Mutex
	gen    string
	n      int
	df     map[string]int
	people map[string][]string // folded name → person entity ids
	// contacts is the address book as search reads it (nil: no contact).
	contacts *contactBook
	maxTS    int64
	loaded   bool

	links map[string]int // entity id → chunks linked (ref_count), generation gen
}

// keyed is ctx for a statement bounded by key lookups (a few rows by primary key
// or index): without the call's cancellation, so that database/sql does not
// start a goroutine to watch it per query nor the driver one to interrupt the
// statement (about 0.15 ms a search together). The statements that can run long
// (full-text ranking, listing) keep ctx, and the call's deadline is checked there.
func keyed(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// generation reads the store's write generation.
func generation(ctx context.Context, db *sql.DB) (string, error) {
	var g sql.NullString
	err := queryRow(keyed(ctx), db, `SELECT value FROM meta WHERE key='generation'`).Scan(&g)
	if err != nil && err != sql.ErrNoRows {
		return "", fmt.Errorf("read store generation: %w", err)
	}
	return g.String, nil
}

// Warm loads, ahead of the first search, what every search needs and its answer
// does not: the regular expressions of the query parser, a read connection (opening one reads the schema) and the
// per-generation cache of chunk count, newest time and people (snapshot; its count
// of chunks reads a whole index, which grows with the store). A server calls it
// while its tool modules compile, so the first call does not wait for it. A store
// whose file does not exist yet has nothing to warm. The cache is still checked
// against the store's generation on every search, so warming early never serves a
// stale count after an ingest.
func (s *Store) Warm(ctx context.Context) error {
	lazyre.CompileAll() // the query's patterns (internal/lazyre)
	db, err := s.readers(ctx)
	if err != nil || db == nil {
		return err
	}
	_, err = s.snapshot(ctx, db)
	return err
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
	// Callers get their own view: a reader keeps reading the generation it started
	// with while another call reloads the cache for a newer one (the fields of the
	// shared cache are written only under c.mu; the people map of a view is never
	// written after it is handed out).
	view := func() *dfCache {
		return &dfCache{gen: c.gen, n: c.n, people: c.people, contacts: c.contacts, maxTS: c.maxTS, loaded: true}
	}
	if c.loaded && c.gen == g {
		return view(), nil
	}
	c.loaded = false
	c.gen, c.df, c.people, c.links, c.contacts = g, map[string]int{}, map[string][]string{}, map[string]int{}, nil
	// Two queries, each with a cheap plan: count(*) alone scans the narrowest
	// index of chunks, and the newest time is each source's last_ms (ingest keeps
	// it the max ts_end of the source's chunks), found at the head of
	// sources_recent. The one query `count(*), max(ts_end) FROM chunks` read every
	// row of chunks, text included: 111,891 pages on a 138k-chunk store, 0.2 s warm
	// and seconds cold, on the first search after every ingest.
	if err := queryRow(ctx, db, `SELECT count(*) FROM chunks`).Scan(&c.n); err != nil {
		return nil, fmt.Errorf("count chunks: %w", err)
	}
	if err := queryRow(ctx, db, `SELECT coalesce(max(last_ms),0) FROM sources`).Scan(&c.maxTS); err != nil {
		return nil, fmt.Errorf("newest chunk time: %w", err)
	}
	rows, err := query(ctx, db, `SELECT id FROM entities WHERE kind='person'`)
	if err != nil {
		return nil, fmt.Errorf("load people: %w", err)
	}
	defer rows.Close()
	if err := ReadPeople(rows, c.people); err != nil {
		return nil, err
	}
	if c.contacts, err = loadContactBook(ctx, db); err != nil {
		return nil, fmt.Errorf("load contacts: %w", err)
	}
	c.loaded = true
	return view(), nil
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
	err := queryRow(keyed(ctx), db, `SELECT doc FROM chunks_fts_vocab WHERE term=?`, t).Scan(&d)
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

// linkCount returns the number of chunk links of the entities ids (their
// ref_count, cached per generation gen).
func (s *Store) linkCount(ctx context.Context, db *sql.DB, gen string, ids []string) (int, error) {
	c := &s.dfc
	total := 0
	for _, id := range ids {
		c.mu.Lock()
		n, ok := c.links[id]
		cached := c.gen == gen
		c.mu.Unlock()
		if !ok || !cached {
			n = 0
			if err := queryRow(keyed(ctx), db, `SELECT ref_count FROM entities WHERE id=?`, id).Scan(&n); err != nil && err != sql.ErrNoRows {
				return 0, fmt.Errorf("read the links of %s: %w", id, err)
			}
			c.mu.Lock()
			if c.gen == gen && c.links != nil && len(c.links) < 100000 {
				c.links[id] = n
			}
			c.mu.Unlock()
		}
		total += n
	}
	return total, nil
}

// tsMissing marks a rowid with no chunk in a chunkTimes table.
const tsMissing = math.MinInt64

// browseCache holds read-mostly results of one store generation: every chunk's
// timestamp by rowid (so browsing by entity or words orders the matches an index
// found without sorting rows in SQL) and the ListSources rows.
type browseCache struct {
	mu      sync.Mutex
	tsGen   string
	ts      []int64 // by rowid; tsMissing where no chunk
	tsOK    bool
	srcGen  string
	sources []abi.Source // display names not set
	srcOK   bool

	entGen    string         // generation of entTotals
	entTotals map[string]int // entity count by kind, "" = all (sources.go)
	srcCntGen string         // generation of srcCounts
	srcCounts map[string]int // listed sources by kind, "" = all (sources.go)

	contactGen   string                     // generation of contactLists
	contactLists map[string]*contactListing // contacts as entity rows by kind (contacts.go)
}

// chunkTimes returns every chunk's timestamp by rowid for generation gen (read by the
// caller just before), loading it from the time index when the store changed.
func (s *Store) chunkTimes(ctx context.Context, db *sql.DB, gen string) ([]int64, error) {
	c := &s.bc
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tsOK && c.tsGen == gen {
		return c.ts, nil
	}
	rows, err := query(ctx, db, `SELECT rowid, ts FROM chunks INDEXED BY chunks_ts`)
	if err != nil {
		return nil, fmt.Errorf("load chunk times: %w", err)
	}
	defer rows.Close()
	ts := make([]int64, 0, len(c.ts))
	for rows.Next() {
		var rid, t int64
		if err := rows.Scan(&rid, &t); err != nil {
			return nil, fmt.Errorf("load chunk times: %w", err)
		}
		if rid < 0 || rid > 1<<32 {
			return nil, fmt.Errorf("load chunk times: chunk rowid %d out of range: the store is damaged; move it aside and ingest again", rid)
		}
		for int64(len(ts)) <= rid {
			ts = append(ts, tsMissing)
		}
		ts[rid] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load chunk times: %w", err)
	}
	c.ts, c.tsGen, c.tsOK = ts, gen, true
	return ts, nil
}

// sourceRows returns the sources with chunks, newest first, for the current
// generation (display names unset), and that generation. The slice is shared:
// callers copy it.
func (s *Store) sourceRows(ctx context.Context, db *sql.DB) ([]abi.Source, string, error) {
	gen, err := generation(ctx, db)
	if err != nil {
		return nil, "", err
	}
	c := &s.bc
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srcOK && c.srcGen == gen {
		return c.sources, gen, nil
	}
	out, err := readSources(query(ctx, db, sourcesQuery))
	if err != nil {
		return nil, "", err
	}
	c.sources, c.srcGen, c.srcOK = out, gen, true
	return out, gen, nil
}
