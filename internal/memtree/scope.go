package memtree

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// scopeCond is sc (index.Scope, the principal's read scope) as a condition on
// the kind and source_id columns of alias (chunks or sources), "" for the zero
// Scope. Every read of a scoped call carries it, so a chunk outside the scope is
// as absent as one that does not exist.
func scopeCond(sc index.Scope, alias string) (string, []any) {
	return sc.SQL(alias+".kind", alias+".source_id", sqliteGlob, func() string { return "?" })
}

// sqliteGlob is a scope glob as SQLite's GLOB (case-sensitive, as the scope's
// own matcher): "*" stays, and GLOB's other specials, "?" and "[", are made
// literal.
func sqliteGlob(col, ph, g string) (string, any) {
	r := strings.NewReplacer("[", "[[]", "?", "[?]")
	return col + " GLOB " + ph, r.Replace(g)
}

// andScope is " AND "+scopeCond, or "" for the zero Scope.
func andScope(sc index.Scope, alias string) (string, []any) {
	c, args := scopeCond(sc, alias)
	if c == "" {
		return "", nil
	}
	return " AND " + c, args
}

// scopedEntityTop is how many of a scope's most mentioned entities are kept
// per generation: the first pages of tree.top_entities, which is what callers
// read; deeper pages run the count again.
const scopedEntityTop = 1000

// scopedEntityCache keeps, per store generation, the most mentioned entities
// of the last few scopes (and kinds): counting an entity's mentions over the
// chunks a scope reads walks every link of every chunk in it (140–190 ms at
// gencorpus -scale 100000, where unscoped pages read ref_count in 0.05 ms).
type scopedEntityCache struct {
	mu  sync.Mutex
	gen string
	m   map[string]scopedEntities // scope key + "\x00" + kind
}

type scopedEntities struct {
	top   []abi.Entity // the first scopedEntityTop, in order
	total int
}

// scopedEntities reads one page of TopEntities for a scoped call: each
// entity's mentions counted over the chunks the scope reads (an entity
// mentioned only outside it is not listed), with the total of such entities.
func (s *Store) scopedEntities(ctx context.Context, db *sql.DB, scope index.Scope, kind string, req abi.EntitiesTopRequest) ([]abi.Entity, int, error) {
	gen, err := generation(ctx, db)
	if err != nil {
		return nil, 0, err
	}
	key := scope.Key() + "\x00" + kind
	c := &s.sec
	c.mu.Lock()
	got, ok := c.m[key]
	if c.gen != gen {
		c.gen, c.m, ok = gen, nil, false
	}
	c.mu.Unlock()
	page := func(top []abi.Entity) []abi.Entity {
		if req.Offset >= len(top) {
			return []abi.Entity{}
		}
		return append([]abi.Entity(nil), top[req.Offset:min(len(top), req.Offset+req.K)]...)
	}
	if ok && (req.Offset+req.K <= len(got.top) || len(got.top) == got.total) {
		return page(got.top), got.total, nil
	}
	sc, scArgs := andScope(scope, "c")
	kindCond := ""
	var args []any
	if kind != "" {
		kindCond = " AND e.kind = ?"
		args = append(args, kind)
	}
	args = append(args, scArgs...)
	inner := `SELECT e.id, e.kind, e.surface, count(*) AS n, max(c.ts) AS seen FROM chunk_entities ce
		JOIN chunks c ON c.rowid = ce.chunk_rowid JOIN entities e ON e.id = ce.entity_id
		WHERE 1=1` + kindCond + sc + ` GROUP BY e.id`
	// One pass: the total as a window count over the grouped rows, and the
	// first rows in order (those of the page when it lies deeper).
	first, limit := 0, scopedEntityTop
	if req.Offset+req.K > scopedEntityTop {
		first, limit = req.Offset, req.K
	}
	rows, err := db.QueryContext(ctx, `SELECT id, kind, surface, n, seen, count(*) OVER () FROM (`+inner+`)
		ORDER BY n DESC, seen DESC, id LIMIT ? OFFSET ?`, append(args, limit, first)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var list []abi.Entity
	total := 0
	for rows.Next() {
		var e abi.Entity
		if err := rows.Scan(&e.EntityID, &e.Kind, &e.Surface, &e.Count, &e.LastSeenMS, &total); err != nil {
			return nil, 0, err
		}
		e.Surface = clipRunes(e.Surface, hitTitleMaxChars)
		list = append(list, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if first > 0 {
		if len(list) == 0 { // past the end: the count comes from no row
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (`+inner+`)`, args...).Scan(&total); err != nil {
				return nil, 0, err
			}
		}
		return list, total, nil
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.m == nil || len(c.m) >= 16 {
			c.m = map[string]scopedEntities{}
		}
		c.m[key] = scopedEntities{top: list, total: total}
	}
	c.mu.Unlock()
	return page(list), total, nil
}
