package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Filters people type: the read API takes the documented values of source_kinds,
// kinds, kind, source_ids and entity_ids, and also what a person (or a model)
// naturally writes for them — "mail", "slack", "people", a chat channel without
// its month, a person's name or address instead of an entity id. Each value that
// is not a stored id is resolved here, the result says what it was taken to mean
// (Resolved), and a value that matches nothing gets a hint naming valid values.

// sourceKindAliases maps what people call a source kind to the stored kind.
var sourceKindAliases = map[string]string{
	"mail": "email", "mails": "email", "emails": "email", "e-mail": "email", "mbox": "email", "gmail": "email", "thread": "email", "threads": "email",
	"chats": "chat", "message": "chat", "messages": "chat", "im": "chat", "dm": "chat", "dms": "chat", "channel": "chat", "channels": "chat",
	"doc": "document", "docs": "document", "documents": "document", "note": "document", "notes": "document", "file": "document", "files": "document",
}

// chatPlatforms maps a chat platform's names to the prefix of its source ids
// ("slack:#eng/2026-01", "telegram:4242/2020-01", "whatsapp:…", "discord:…").
var chatPlatforms = map[string]string{
	"slack": "slack", "telegram": "telegram", "tg": "telegram", "whatsapp": "whatsapp", "wa": "whatsapp", "discord": "discord",
	"irc": "irc", "matrix": "matrix", "element": "matrix", "mattermost": "mattermost", "imessage": "imessage", "imsg": "imessage", "line": "line", "signal": "signal", "hangouts": "hangouts", "zulip": "zulip", "teams": "teams", "skype": "teams", "mm": "mattermost",
}

// entityKindAliases maps what people call an entity kind to the stored kind.
var entityKindAliases = map[string]string{
	"people": "person", "persons": "person", "name": "person", "names": "person", "contact": "person", "contacts": "person",
	"emails": "email", "mail": "email", "address": "email", "addresses": "email", "e-mail": "email",
	"handles": "handle", "user": "handle", "users": "handle", "username": "handle",
	"hashtags": "hashtag", "tag": "hashtag", "tags": "hashtag",
	"topics": "topic", "subject": "topic", "subjects": "topic",
	"urls": "url", "link": "url", "links": "url",
}

var (
	sourceKinds = []string{KindChat, KindDocument, KindEmail}
	entityKinds = []string{EntityEmail, EntityHandle, EntityHashtag, EntityPerson, EntityTopic, EntityURL}
)

// kindFilter is source_kinds (or kinds) resolved: stored kinds, and chat
// platforms (source id prefixes) that also admit a source.
type kindFilter struct {
	kinds     []string
	platforms []string
	hints     []string
	resolved  []abi.Resolution
	none      bool // values were given and none is valid: nothing matches
}

// resolveSourceKinds reads source_kinds/kinds values (lowercased, trimmed).
func resolveSourceKinds(filter string, vals []string) kindFilter {
	var f kindFilter
	var bad []string
	for _, v := range vals {
		v = strings.ToLower(strings.TrimSpace(v))
		switch {
		case v == "":
		case v == KindChat || v == KindEmail || v == KindDocument:
			f.kinds = append(f.kinds, v)
		case sourceKindAliases[v] != "":
			f.kinds = append(f.kinds, sourceKindAliases[v])
			f.resolved = append(f.resolved, abi.Resolution{Filter: filter, Value: v, To: []string{sourceKindAliases[v]}})
		case chatPlatforms[v] != "":
			f.platforms = append(f.platforms, chatPlatforms[v])
			f.resolved = append(f.resolved, abi.Resolution{Filter: filter, Value: v, To: []string{KindChat + " from " + chatPlatforms[v]}})
		default:
			bad = append(bad, v)
			f.resolved = append(f.resolved, abi.Resolution{Filter: filter, Value: v, To: []string{}})
		}
	}
	if len(bad) > 0 {
		f.hints = append(f.hints, fmt.Sprintf("%s %s matches no kind of source; use chat, email or document (also mail; slack, telegram, whatsapp, discord for one chat platform)", filter, quoteList(bad)))
		f.none = len(f.kinds) == 0 && len(f.platforms) == 0
	}
	return f
}

// admits reports whether a source of kind with id sourceID passes the filter
// (an empty filter admits every source).
func (f kindFilter) admits(kind, sourceID string) bool {
	if f.none {
		return false
	}
	if len(f.kinds) == 0 && len(f.platforms) == 0 {
		return true
	}
	for _, k := range f.kinds {
		if k == kind {
			return true
		}
	}
	if kind == KindChat {
		for _, p := range f.platforms {
			if strings.HasPrefix(sourceID, p+":") {
				return true
			}
		}
	}
	return false
}

// sqlCond is the filter as a condition on chunks c ("" when it admits all).
func (f kindFilter) sqlCond() (string, []any) {
	if f.none {
		return "0", nil
	}
	var parts []string
	var args []any
	if len(f.kinds) > 0 {
		parts = append(parts, "c.kind IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.kinds)), ",")+")")
		for _, k := range f.kinds {
			args = append(args, k)
		}
	}
	for _, p := range f.platforms {
		parts = append(parts, `(c.kind = 'chat' AND c.source_id LIKE ? ESCAPE '\')`)
		args = append(args, likeEscape(p+":")+"%")
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// chatConversation splits a chat source id "<platform>:<conversation>/<YYYY-MM>"
// into the conversation and the month; ok is false for an id without a month.
func chatConversation(sourceID string) (conv, month string, ok bool) {
	i := strings.LastIndexByte(sourceID, '/')
	if i < 0 || !strings.Contains(sourceID[:i], ":") {
		return "", "", false
	}
	m := sourceID[i+1:]
	if m != "" && !(len(m) == 7 && m[4] == '-' && allDigits(m[:4]) && allDigits(m[5:])) {
		return "", "", false
	}
	return sourceID[:i], m, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
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
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sources WHERE source_id = ?`, v).Scan(&n); err != nil {
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
		rows, err := db.QueryContext(ctx, `SELECT source_id FROM sources WHERE kind = 'chat' AND chunk_count > 0 AND source_id LIKE ? ESCAPE '\'
			ORDER BY source_id DESC LIMIT ?`, pattern, maxExpandedSources+1)
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
			if c, _, ok := chatConversation(id); ok && (c == conv || strings.HasSuffix(c, ":"+conv)) {
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
		hints = append(hints, fmt.Sprintf("source_ids %s match no source; use source_id values from tree.list_sources (e.g. slack:#general/2026-01, or slack:#general for all its months)", quoteList(bad)))
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
		err := db.QueryRowContext(ctx, `SELECT 1 FROM entities WHERE id = ?`, id).Scan(&one)
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
		if kind, rest, found := strings.Cut(v, ":"); found && entityKindAliases[kind] != "" {
			cands = append(cands, canonicalID(entityKindAliases[kind], rest))
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
			rows, err := db.QueryContext(ctx, `SELECT id FROM entities WHERE surface = ? COLLATE NOCASE ORDER BY ref_count DESC LIMIT 20`, surface)
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
		hints = append(hints, fmt.Sprintf("entity_ids %s match no entity; use entity_id values from tree.top_entities (kinds %s, e.g. email:ann@example.com, person:ann lee), an e-mail address or a person's name", quoteList(bad), strings.Join(entityKinds, ", ")))
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
	rows, err := db.QueryContext(ctx, `SELECT id, ref_count FROM entities WHERE id LIKE ? ESCAPE '\' ORDER BY ref_count DESC, id LIMIT ?`,
		likeEscape(prefix)+"%", maxFirstNamePeople+1)
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

// resolveEntityKind reads tree.top_entities' kind.
func resolveEntityKind(kind string) (stored string, resolved []abi.Resolution, hint string) {
	kind = strings.ToLower(strings.TrimSpace(kind))
	if kind == "" || sort.SearchStrings(entityKinds, kind) < len(entityKinds) && entityKinds[sort.SearchStrings(entityKinds, kind)] == kind {
		return kind, nil, ""
	}
	if a := entityKindAliases[kind]; a != "" {
		return a, []abi.Resolution{{Filter: "kind", Value: kind, To: []string{a}}}, ""
	}
	return kind, []abi.Resolution{{Filter: "kind", Value: kind, To: []string{}}},
		fmt.Sprintf("kind %q matches no kind of entity; use one of %s (also people, tags, links)", kind, strings.Join(entityKinds, ", "))
}

// browseFilters resolves a tree.browse request's source_kinds, source_ids and
// entity_ids in place (stored values only afterwards) and returns the kinds
// condition to use instead of source_kinds, what was resolved and the hints.
func (s *Store) browseFilters(ctx context.Context, db *sql.DB, req *abi.ChunksListRequest) (kindCond string, kindArgs []any, resolved []abi.Resolution, hints []string, err error) {
	if len(req.SourceKinds) > 0 {
		kf := resolveSourceKinds("source_kinds", req.SourceKinds)
		kindCond, kindArgs = kf.sqlCond()
		resolved, hints = append(resolved, kf.resolved...), append(hints, kf.hints...)
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

// withHints appends hints to a result's hint.
func withHints(hint string, hints []string) string {
	all := hint
	for _, h := range hints {
		if all != "" {
			all += " "
		}
		all += h + "."
	}
	return all
}

// groupByConversation folds the months of each chat conversation into one row
// (SourceID the conversation, Months newest first); other sources stay as they
// are. Order: the rows' first appearance in list (most recent first).
func groupByConversation(list []namedSource) []namedSource {
	out := make([]namedSource, 0, len(list))
	at := map[string]int{}
	for _, src := range list {
		conv, month, ok := chatConversation(src.SourceID)
		if src.SourceKind != KindChat || !ok {
			out = append(out, src)
			continue
		}
		if i, seen := at[conv]; seen {
			g := &out[i]
			g.ChunkCount += src.ChunkCount
			g.FirstMS = min(g.FirstMS, src.FirstMS)
			g.MostRecentMS = max(g.MostRecentMS, src.MostRecentMS)
			if month != "" {
				g.Months = append(g.Months, month)
			}
			continue
		}
		g := src
		g.SourceID = conv
		g.Title = conversationTitle(src.Title, month)
		g.DisplayName = conversationTitle(src.DisplayName, month)
		g.Months = nil
		if month != "" {
			g.Months = []string{month}
		}
		at[conv] = len(out)
		out = append(out, g)
	}
	for i := range out {
		if len(out[i].Months) > 1 {
			sort.Sort(sort.Reverse(sort.StringSlice(out[i].Months)))
		}
	}
	return out
}

// conversationTitle drops a month suffix (" (2026-01)" or "/2026-01") from a
// chat source's title or display name.
func conversationTitle(t, month string) string {
	if month == "" {
		return t
	}
	t = strings.TrimSuffix(t, " ("+month+")")
	return strings.TrimSuffix(t, "/"+month)
}

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
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
