package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/entitykind"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/sourcekind"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Filters people type: the read API takes the documented values of source_kinds,
// kinds, kind, source_ids and entity_ids, and also what a person (or a model)
// naturally writes for them — "mail", "slack", "people", a chat channel without
// its month, a person's name or address instead of an entity id. Each value that
// is not a stored id is resolved here, the result says what it was taken to mean
// (Resolved), and a value that matches nothing gets a hint naming valid values.

// sourceKindCond is source kind filter f (sourcekind.Resolve) as a condition on
// chunks c ("" when it admits all).
func sourceKindCond(f sourcekind.Filter) (string, []any) {
	if f.None {
		return "0", nil
	}
	var parts []string
	var args []any
	if len(f.Kinds) > 0 {
		parts = append(parts, "c.kind IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.Kinds)), ",")+")")
		for _, k := range f.Kinds {
			args = append(args, k)
		}
	}
	for _, p := range f.Platforms {
		parts = append(parts, `(c.kind = 'chat' AND c.source_id LIKE ? ESCAPE '\')`)
		args = append(args, likeEscape(p+":")+"%")
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// sourceQueryer is what resolveSourceIDs reads with (*sql.DB, *sql.Tx).
type sourceQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// maxExpandedSources bounds how many stored source ids the source_ids values of
// one request may expand to (a conversation has one per month).
const maxExpandedSources = 5000

// resolveSourceIDs reads source_ids values: a stored id stays; a chat
// conversation without its month ("slack:#general", or "#general" without the
// platform) stands for all its months. It returns the ids to filter by. db is
// the store's reader, or forget's transaction (the ids forget takes are the
// ones the tools take).
func resolveSourceIDs(ctx context.Context, db sourceQueryer, vals []string) (ids []string, resolved []abi.Resolution, hints []string, err error) {
	var bad []string
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		var n int
		sc, scArgs := andScope(index.ScopeFrom(ctx), "sources") // a source outside the scope is unknown
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sources WHERE source_id = ?`+sc, append([]any{v}, scArgs...)...).Scan(&n); err != nil {
			return nil, nil, nil, fmt.Errorf("resolve source_ids: %w", err)
		}
		if n > 0 {
			ids = append(ids, v)
			continue
		}
		conv := strings.TrimSuffix(v, "/")
		pattern := likeEscape(conv) + "/%"
		if !strings.Contains(conv, ":") {
			pattern = "%:" + pattern // the conversation without its platform
		}
		rows, err := db.QueryContext(ctx, `SELECT source_id FROM sources WHERE kind = 'chat' AND chunk_count > 0 AND source_id LIKE ? ESCAPE '\'`+sc+`
			ORDER BY source_id DESC LIMIT ?`, append(append([]any{pattern}, scArgs...), maxExpandedSources+1)...)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("resolve source_ids: %w", err)
		}
		var to []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, nil, nil, fmt.Errorf("resolve source_ids: %w", err)
			}
			if c, _, ok := sourcekind.Conversation(id); ok && (c == conv || strings.HasSuffix(c, ":"+conv)) {
				to = append(to, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, nil, fmt.Errorf("resolve source_ids: %w", err)
		}
		resolved = append(resolved, abi.Resolution{Filter: "source_ids", Value: v, To: nonNil(to)})
		if len(to) == 0 {
			bad = append(bad, v)
		}
		ids = append(ids, to...)
		if len(ids) > maxExpandedSources {
			return nil, nil, nil, fmt.Errorf("source_ids stand for more than %d sources; name fewer conversations: %w", maxExpandedSources, ErrInvalid)
		}
	}
	if len(bad) > 0 {
		hints = append(hints, fmt.Sprintf("source_ids %s match no source; use source_id values from tree.list_sources (e.g. slack:#general/2026-01, or slack:#general for all its months)", sourcekind.QuoteList(bad)))
	}
	return ids, resolved, hints, nil
}

// resolveEntityIDs reads entity_ids values: a stored id stays; an id whose kind
// is an alias ("people:ann") takes the stored kind; an e-mail address, a
// @handle, a #hashtag, a person's name or any entity's surface form
// (case-insensitive) stands for the entities it names.
func resolveEntityIDs(ctx context.Context, db *sql.DB, vals []string) (ids []string, resolved []abi.Resolution, hints []string, err error) {
	exists := func(id string) (bool, error) {
		var one int
		sc, scArgs := entityInScope(ctx)
		err := db.QueryRowContext(ctx, `SELECT 1 FROM entities WHERE id = ?`+sc, append([]any{id}, scArgs...)...).Scan(&one)
		if err == sql.ErrNoRows {
			return false, nil
		}
		return err == nil, err
	}
	var bad []string
	for _, raw := range vals {
		v := strings.ToLower(strings.Join(strings.Fields(raw), " "))
		if v == "" {
			continue
		}
		ok, err := exists(v)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("resolve entity_ids: %w", err)
		}
		if ok {
			// a stored id that is one of a contact's stands for all of them
			more, people, err := contactsOf(ctx, db, []string{v})
			if err != nil {
				return nil, nil, nil, fmt.Errorf("resolve entity_ids: %w", err)
			}
			ids = append(ids, v)
			if len(people) == 0 {
				continue
			}
			// the contacts first (what the value was read as), then their entities
			to := []string{v}
			for _, id := range append(people, more...) {
				if !slices.Contains(to, id) {
					to = append(to, id)
				}
			}
			ids = append(ids, to[1:]...)
			resolved = append(resolved, abi.Resolution{Filter: "entity_ids", Value: raw, To: to})
			hints = append(hints, contactHint(raw, people)...)
			continue
		}
		var cands []string
		if kind, rest, found := strings.Cut(v, ":"); found && entitykind.Aliases[kind] != "" {
			cands = append(cands, canonicalID(entitykind.Aliases[kind], rest))
		}
		surface := strings.TrimSpace(raw)
		if _, addr := parseAddress(surface); addr != "" && isEmailAddr(addr) {
			cands = append(cands, canonicalID(EntityEmail, addr))
		}
		for _, k := range []string{EntityPerson, EntityHandle, EntityHashtag, EntityTopic, EntityEmail} {
			cands = append(cands, canonicalID(k, surface))
		}
		var to []string
		seen := map[string]bool{}
		for _, c := range cands {
			if seen[c] {
				continue
			}
			seen[c] = true
			if ok, err := exists(c); err != nil {
				return nil, nil, nil, fmt.Errorf("resolve entity_ids: %w", err)
			} else if ok {
				to = append(to, c)
			}
		}
		if firstName(surface) && !hasKind(to, EntityPerson) {
			// A first name stands for the person whose name starts with it
			// ("Micah" → person:micah stubbs); several such people are all
			// taken, and the hint names them so the next call can pick one.
			people, more, err := peopleNamed(ctx, db, surface)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("resolve entity_ids: %w", err)
			}
			for _, p := range people {
				if !seen[p.id] {
					seen[p.id] = true
					to = append(to, p.id)
				}
			}
			if len(people) > 1 {
				var names []string
				for _, p := range people {
					names = append(names, fmt.Sprintf("%s (%d)", p.id, p.refs))
				}
				if more {
					names = append(names, "…")
				}
				hints = append(hints, fmt.Sprintf("entity_ids %q names several people, all taken: %s; give the full name (e.g. %q) for one", raw, strings.Join(names, ", "), people[0].id))
			}
		}
		if len(to) == 0 {
			// Any entity written this way (a name as it appears in mail headers).
			sc, scArgs := entityInScope(ctx)
			rows, err := db.QueryContext(ctx, `SELECT id FROM entities WHERE surface = ? COLLATE NOCASE`+sc+` ORDER BY ref_count DESC LIMIT 20`, append([]any{surface}, scArgs...)...)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("resolve entity_ids: %w", err)
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err == nil {
					to = append(to, id)
				}
			}
			rows.Close()
		}
		// the address book: a contact's name, nickname, address, handle or phone
		// number stands for every entity of that person
		ccands := append(append([]string(nil), cands...), to...)
		if d := phoneDigits(surface); len(d) >= 5 {
			ccands = append(ccands, "phone:"+d)
		}
		more, people, err := contactsOf(ctx, db, ccands)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("resolve entity_ids: %w", err)
		}
		for _, id := range append(people, more...) {
			if !slices.Contains(to, id) {
				seen[id] = true
				to = append(to, id)
			}
		}
		hints = append(hints, contactHint(raw, people)...)
		resolved = append(resolved, abi.Resolution{Filter: "entity_ids", Value: raw, To: nonNil(to)})
		if len(to) == 0 {
			bad = append(bad, raw)
		}
		ids = append(ids, to...)
	}
	if len(bad) > 0 {
		hints = append(hints, fmt.Sprintf("entity_ids %s match no entity; use entity_id values from tree.top_entities (kinds %s, e.g. email:ann@example.com, person:ann lee), an e-mail address or a person's name", sourcekind.QuoteList(bad), strings.Join(entitykind.Kinds, ", ")))
	}
	return ids, resolved, hints, nil
}

// maxFirstNamePeople bounds how many people one first name stands for.
const maxFirstNamePeople = 10

// firstName reports whether v could be a first name: one word of letters (and
// ' or -), not an id, address, handle or tag.
func firstName(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		if !unicode.IsLetter(r) && r != '\'' && r != '-' {
			return false
		}
	}
	return true
}

// hasKind reports whether ids holds an id of kind.
func hasKind(ids []string, kind string) bool {
	for _, id := range ids {
		if strings.HasPrefix(id, kind+":") {
			return true
		}
	}
	return false
}

type namedPerson struct {
	id   string
	refs int
}

// peopleNamed returns the people whose name starts with the word first, most
// mentioned first (at most maxFirstNamePeople; more reports that there were more).
func peopleNamed(ctx context.Context, db sourceQueryer, first string) (people []namedPerson, more bool, err error) {
	prefix := canonicalID(EntityPerson, first) + " "
	sc, scArgs := entityInScope(ctx)
	rows, err := db.QueryContext(ctx, `SELECT id, ref_count FROM entities WHERE id LIKE ? ESCAPE '\'`+sc+` ORDER BY ref_count DESC, id LIMIT ?`,
		append(append([]any{likeEscape(prefix) + "%"}, scArgs...), maxFirstNamePeople+1)...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var p namedPerson
		if err := rows.Scan(&p.id, &p.refs); err != nil {
			return nil, false, err
		}
		people = append(people, p)
	}
	if len(people) > maxFirstNamePeople {
		return people[:maxFirstNamePeople], true, rows.Err()
	}
	return people, false, rows.Err()
}

// browseFilters resolves a tree.browse request's source_kinds, source_ids and
// entity_ids in place (stored values only afterwards) and returns the kinds
// condition to use instead of source_kinds, what was resolved and the hints.
func (s *Store) browseFilters(ctx context.Context, db *sql.DB, req *abi.ChunksListRequest) (kindCond string, kindArgs []any, resolved []abi.Resolution, hints []string, err error) {
	if len(req.SourceKinds) > 0 {
		kf := sourcekind.Resolve("source_kinds", req.SourceKinds)
		kindCond, kindArgs = sourceKindCond(kf)
		resolved, hints = append(resolved, kf.Resolved...), append(hints, kf.Hints...)
	}
	if len(req.SourceIDs) > 0 {
		ids, r, h, err := resolveSourceIDs(ctx, db, req.SourceIDs)
		if err != nil {
			return "", nil, nil, nil, err
		}
		if len(ids) == 0 {
			ids = []string{"\x00none"} // matches nothing, as asked
		}
		req.SourceIDs = ids
		resolved, hints = append(resolved, r...), append(hints, h...)
	}
	if len(req.EntityIDs) > 0 {
		ids, r, h, err := resolveEntityIDs(ctx, db, req.EntityIDs)
		if err != nil {
			return "", nil, nil, nil, err
		}
		if len(ids) == 0 {
			ids = []string{"\x00none"}
		}
		req.EntityIDs = ids
		resolved, hints = append(resolved, r...), append(hints, h...)
	}
	return kindCond, kindArgs, resolved, hints, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// contactHint says which contacts an entity_ids value was read as, when it names
// more than one (two people called Micah): all are kept.
func contactHint(raw string, people []string) []string {
	if len(people) < 2 {
		return nil
	}
	return []string{fmt.Sprintf("entity_ids %q names %d contacts (%s): all are kept; give a full name or an address to pick one", raw, len(people), strings.Join(people, ", "))}
}

// entityInScope is a condition on entities (unaliased) that keeps those
// mentioned in a chunk the scope of ctx reads ("" for the zero Scope): a name
// said only outside the scope resolves to nothing, as an unknown one.
func entityInScope(ctx context.Context) (string, []any) {
	c, args := scopeCond(index.ScopeFrom(ctx), "c")
	if c == "" {
		return "", nil
	}
	return " AND EXISTS (SELECT 1 FROM chunk_entities ce JOIN chunks c ON c.rowid = ce.chunk_rowid WHERE ce.entity_id = entities.id AND " + c + ")", args
}
