package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ContactInput is one person from an address book (a vCard, a row of a Google
// Contacts CSV). A contact is a person, not a document: it adds no chunk, only
// the names and addresses under which the person's messages are stored.
type ContactInput struct {
	// Name is the display name ("Micah Stubbs"); the person's entity is
	// person:<name>.
	Name string
	// Given and Family are the structured name's parts, when known: they add
	// "Micah", "M. Stubbs", "Stubbs, Micah" as names of the person.
	Given, Family string
	// Names are other names the person goes by (formatted, phonetic, maiden).
	Names []string
	// Nicknames ("Mick").
	Nicknames []string
	// Emails are mail addresses; Handles chat handles (@micah, micah#1234, an
	// XMPP or Matrix id); Phones phone numbers as written.
	Emails, Handles, Phones []string
}

// contactNamePrefix marks the alias row that keeps a contact's display name
// as written ("name:Micah Stubbs"): entity listings show the contact under it.
// No entity id has this kind, so it never resolves a filter value.
const contactNamePrefix = "name:"

// contactAliases lists the entity ids that name c's person, the person's own id
// first.
func contactAliases(c ContactInput) (person string, aliases []string) {
	name := strings.Join(strings.Fields(c.Name), " ")
	given, family := strings.TrimSpace(c.Given), strings.TrimSpace(c.Family)
	if name == "" {
		name = strings.TrimSpace(given + " " + family)
	}
	if name == "" && len(c.Emails) > 0 {
		name = c.Emails[0]
	}
	if name == "" {
		return "", nil
	}
	person = canonicalID(EntityPerson, name)
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] && !strings.HasSuffix(id, ":") && len(id) <= 512 {
			seen[id] = true
			aliases = append(aliases, id)
		}
	}
	add(person)
	// the display name as written, for listings (an alias no entity id has)
	add(contactNamePrefix + name)
	names := append([]string{name}, c.Names...)
	names = append(names, c.Nicknames...)
	if given != "" {
		names = append(names, given)
		if family != "" {
			r := []rune(given)
			names = append(names, given+" "+family, family+", "+given, family+" "+given,
				string(r[0])+". "+family, string(r[0])+" "+family, string(r[0])+"."+family)
		}
	}
	for _, n := range names {
		add(canonicalID(EntityPerson, n))
	}
	for _, e := range c.Emails {
		if _, addr := parseAddress(e); isEmailAddr(addr) {
			add(canonicalID(EntityEmail, addr))
			// chat exports and mail headers often name a person by the address alone
			add(canonicalID(EntityPerson, addr))
		}
	}
	for _, h := range c.Handles {
		add(canonicalID(EntityHandle, h))
		add(canonicalID(EntityPerson, strings.TrimLeft(strings.TrimSpace(h), "@")))
	}
	for _, p := range c.Phones {
		if d := phoneDigits(p); len(d) >= 5 {
			add("phone:" + d)
		}
	}
	return person, aliases
}

// phoneDigits is a phone number's digits ("+1 (555) 123-4567" → "15551234567").
func phoneDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if unicode.IsLetter(r) {
			return "" // no phone number
		}
	}
	return b.String()
}

// PutContacts stores the people of an address book: every name, nickname,
// address, handle and phone number of each contact names its person (see
// person_aliases in schema.go). A contact stored again adds what it did not have;
// nothing is removed. It returns how many contacts had a name or an address.
func (s *Store) PutContacts(ctx context.Context, cs []ContactInput) (int, error) {
	if s.w == nil {
		return 0, fmt.Errorf("store contacts: %w", ErrReadOnly)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store contacts: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO person_aliases(alias, person) VALUES(?, ?)`)
	if err != nil {
		return 0, fmt.Errorf("store contacts: %w", err)
	}
	defer st.Close()
	n := 0
	for _, c := range cs {
		person, aliases := contactAliases(c)
		if person == "" {
			continue
		}
		n++
		for _, a := range aliases {
			if _, err := st.ExecContext(ctx, a, person); err != nil {
				return 0, fmt.Errorf("store contact %s: %w", person, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('generation', '1')
			ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER)+1`); err != nil {
		return 0, fmt.Errorf("store contacts: bump generation: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store contacts: commit: %w", err)
	}
	return n, nil
}

// contactsOf expands the entity ids an entity_ids value names (cands: every id
// it could be, stored or not) through the address book: when any of them is a
// contact's name, address, handle or phone number, every stored entity of that
// person is added. people are the contacts found, by display id. A store
// without the table (written by an older binary, opened read-only) has no
// contacts.
func contactsOf(ctx context.Context, db *sql.DB, cands []string) (ids, people []string, err error) {
	var has int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='person_aliases'`).Scan(&has); err != nil || has == 0 {
		return nil, nil, err
	}
	if len(cands) == 0 {
		return nil, nil, nil
	}
	args := make([]any, len(cands))
	for i, c := range cands {
		args[i] = c
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(cands)), ",")
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT person FROM person_aliases WHERE alias IN (`+marks+`) LIMIT 20`, args...)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, nil, err
		}
		people = append(people, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(people) == 0 {
		return nil, nil, err
	}
	sort.Strings(people)
	seen := map[string]bool{}
	of := map[string][]string{} // each contact's ids, for the scope below
	for _, p := range people {
		// not a name another contact has too (two Micahs' "micah"): the value
		// itself stands for that one when it is it
		rows, err := db.QueryContext(ctx, `SELECT a.alias FROM person_aliases a JOIN entities e ON e.id = a.alias WHERE a.person = ?
			AND NOT EXISTS (SELECT 1 FROM person_aliases b WHERE b.alias = a.alias AND b.person <> a.person)
			ORDER BY e.ref_count DESC, a.alias`, p)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, nil, err
			}
			of[p] = append(of[p], id)
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	phones, err := phoneEntitiesByContact(ctx, db, people)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range people {
		for _, id := range phones[p] {
			of[p] = append(of[p], id)
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	people, ids, err = contactsInScope(ctx, db, index.ScopeFrom(ctx), people, ids, of)
	return ids, people, err
}

// contactsInScope bounds what the address book says to a narrowed scope: the
// ids linked to a chunk the scope reads, and the contacts (people) that are
// linked themselves or hold one of those ids (of: each contact's ids). A
// contact the scope holds no message of is dropped, as a stranger; under the
// full scope everything is kept.
func contactsInScope(ctx context.Context, db *sql.DB, scope index.Scope, people, ids []string, of map[string][]string) ([]string, []string, error) {
	if scope.Full() || len(people)+len(ids) == 0 {
		return people, ids, nil
	}
	held, err := linkedInScope(ctx, db, scope, append(slices.Clone(people), ids...))
	if err != nil {
		return nil, nil, err
	}
	people = slices.DeleteFunc(slices.Clone(people), func(p string) bool {
		return !held[p] && !slices.ContainsFunc(of[p], func(id string) bool { return held[id] })
	})
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !held[id] })
	return people, ids, nil
}

// linkedInScope returns which of ids are linked to a chunk scope reads.
func linkedInScope(ctx context.Context, db *sql.DB, scope index.Scope, ids []string) (map[string]bool, error) {
	held := map[string]bool{}
	sc, scArgs := andScope(scope, "c")
	for from := 0; from < len(ids); from += 500 {
		batch := ids[from:min(from+500, len(ids))]
		args := make([]any, 0, len(batch)+len(scArgs))
		for _, id := range batch {
			args = append(args, id)
		}
		ph := strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")
		rows, err := db.QueryContext(ctx, `SELECT DISTINCT ce.entity_id FROM chunk_entities ce JOIN chunks c ON c.rowid = ce.chunk_rowid
			WHERE ce.entity_id IN (`+ph+`)`+sc, append(args, scArgs...)...)
		if err != nil {
			return nil, fmt.Errorf("contacts in scope: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("contacts in scope: %w", err)
			}
			held[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("contacts in scope: %w", err)
		}
	}
	return held, nil
}

// phoneEntitiesByContact finds, for each of people, the person entities named
// by one of its phone numbers (a WhatsApp export names a sender not in the
// phone's address book by the number, "+49 171 2345678"): the same digits, or
// the same last nine when one is written with the country code and the other
// with a trunk prefix. The stored numbers are read once for all of them.
func phoneEntitiesByContact(ctx context.Context, db *sql.DB, people []string) (map[string][]string, error) {
	want := map[string][]string{} // phone key → contacts
	for _, p := range people {
		rows, err := db.QueryContext(ctx, `SELECT alias FROM person_aliases WHERE person = ? AND alias GLOB 'phone:*'`, p)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var a string
			if rows.Scan(&a) == nil {
				k := phoneKey(strings.TrimPrefix(a, "phone:"))
				if !slices.Contains(want[k], p) {
					want[k] = append(want[k], p)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT id FROM entities WHERE kind = 'person' AND (id GLOB 'person:+[0-9]*' OR id GLOB 'person:[0-9(]*') LIMIT 100000`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if d := phoneDigits(strings.TrimPrefix(id, "person:")); len(d) >= 5 {
			for _, p := range want[phoneKey(d)] {
				out[p] = append(out[p], id)
			}
		}
	}
	return out, rows.Err()
}

// phoneKey is what two writings of one number share: its last nine digits.
func phoneKey(d string) string {
	if len(d) > 9 {
		return d[len(d)-9:]
	}
	return d
}

// contactBook is the address book as a search reads it, loaded once per store
// generation (snapshot): which contacts a name or an address in a query names,
// and every stored entity of each contact.
type contactBook struct {
	// byName maps a folded name ("micah", "m stubbs", "micah s" for the handle
	// micah.s) or an address id (email:micah@home.example) to the contacts
	// (person ids) it is a name or address of.
	byName map[string][]string
	// stored maps a contact's person id to its stored entities: its names,
	// addresses and handles as ingest linked them to chunks, most linked first,
	// then the person entities named by one of its phone numbers; not those
	// another contact has too (two Micahs' "micah").
	stored map[string][]string
	// direct maps a key of byName to the stored entities it is itself (the
	// person entity "micah" for "micah", shared or not).
	direct map[string][]string
}

// loadContactBook reads the address book for search; nil when the store has no
// contact (or no person_aliases table: a store written by an older binary,
// opened read-only).
func loadContactBook(ctx context.Context, db *sql.DB) (*contactBook, error) {
	var has int
	if err := queryRow(ctx, db, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='person_aliases'`).Scan(&has); err != nil || has == 0 {
		return nil, err
	}
	b := &contactBook{byName: map[string][]string{}, stored: map[string][]string{}, direct: map[string][]string{}}
	rows, err := query(ctx, db, `SELECT alias, person FROM person_aliases ORDER BY person, alias`)
	if err != nil {
		return nil, err
	}
	var phoned []string
	for rows.Next() {
		var alias, person string
		if err := rows.Scan(&alias, &person); err != nil {
			rows.Close()
			return nil, err
		}
		var key string
		switch kind, rest, _ := strings.Cut(alias, ":"); kind {
		case EntityPerson:
			key = strings.Join(words(rest), " ")
		case EntityEmail:
			key = alias
		case "phone":
			if n := len(phoned); n == 0 || phoned[n-1] != person {
				phoned = append(phoned, person)
			}
		}
		if key != "" && !slices.Contains(b.byName[key], person) {
			b.byName[key] = append(b.byName[key], person)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(b.byName) == 0 {
		return nil, nil
	}
	rows, err = query(ctx, db, `SELECT a.person, a.alias, (SELECT count(*) FROM person_aliases b WHERE b.alias = a.alias)
		FROM person_aliases a JOIN entities e ON e.id = a.alias
		ORDER BY a.person, e.ref_count DESC, a.alias`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var person, id string
		var owners int
		if err := rows.Scan(&person, &id, &owners); err != nil {
			rows.Close()
			return nil, err
		}
		if owners == 1 {
			b.stored[person] = append(b.stored[person], id)
		}
		key := id
		if kind, rest, _ := strings.Cut(id, ":"); kind == EntityPerson {
			key = strings.Join(words(rest), " ")
		}
		if !slices.Contains(b.direct[key], id) {
			b.direct[key] = append(b.direct[key], id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	phones, err := phoneEntitiesByContact(ctx, db, phoned)
	if err != nil {
		return nil, err
	}
	for p, ids := range phones {
		for _, id := range ids {
			if !slices.Contains(b.stored[p], id) {
				b.stored[p] = append(b.stored[p], id)
			}
		}
	}
	return b, nil
}

// contact returns the contacts a folded name or an address id names, and the
// stored entities of those contacts (each once): what key is itself first.
func (b *contactBook) contact(key string) (people, ids []string) {
	if b == nil {
		return nil, nil
	}
	people = b.byName[key]
	if len(people) == 0 {
		return nil, nil
	}
	ids = append(ids, b.direct[key]...)
	for _, p := range people {
		for _, id := range b.stored[p] {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return people, ids
}

// contactListing is the address book as rows of an entity listing of one kind
// ("" or person), per store generation (contactEntities).
type contactListing struct {
	rows   []abi.Entity    // one per contact, in listing order
	merged map[string]bool // the stored entities of the kind the rows stand for
}

// contactEntities are the contacts as rows of an entity listing of kind ("" for
// all kinds, or person; nil for any other kind, whose entities are listed as
// they are): one row for each contact with a stored entity, under the
// contact's person id and display name, counting the chunks linked to any of
// its names, addresses, handles and numbers once, seen when the newest of them
// was. merged are the stored entities of the listing's kind the rows stand
// for; the listing leaves them out. An entity that is a name of several
// contacts (two Micahs' "micah") stays a row of its own.
func (s *Store) contactEntities(ctx context.Context, db *sql.DB, kind string) (*contactListing, error) {
	if kind != "" && kind != EntityPerson {
		return nil, nil
	}
	gen, err := generation(ctx, db)
	if err != nil {
		return nil, err
	}
	c := &s.bc
	c.mu.Lock()
	if c.contactGen == gen && c.contactLists != nil {
		l, ok := c.contactLists[kind]
		if ok {
			c.mu.Unlock()
			return l, nil
		}
	}
	c.mu.Unlock()
	l, err := loadContactListing(ctx, db, kind)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.contactGen != gen || c.contactLists == nil {
		c.contactGen, c.contactLists = gen, map[string]*contactListing{}
	}
	c.contactLists[kind] = l
	c.mu.Unlock()
	return l, nil
}

// loadContactListing reads contactEntities' rows from the store.
func loadContactListing(ctx context.Context, db *sql.DB, kind string) (*contactListing, error) {
	var has int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='person_aliases'`).Scan(&has); err != nil || has == 0 {
		return nil, err
	}
	type member struct {
		id, kind, surface string
		refs              int
		last              int64
	}
	members := map[string][]member{} // contact → its stored entities
	owners := map[string][]string{}  // stored entity → contacts
	names := map[string]string{}     // contact → display name
	var order []string
	add := func(person string, m member) {
		if !slices.Contains(owners[m.id], person) {
			owners[m.id] = append(owners[m.id], person)
			if len(members[person]) == 0 {
				order = append(order, person)
			}
			members[person] = append(members[person], m)
		}
	}
	q := `SELECT a.person, e.id, e.kind, e.surface, e.ref_count, e.last_seen FROM person_aliases a JOIN entities e ON e.id = a.alias ORDER BY a.person, a.alias`
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var person, k string
		var m member
		if err := rows.Scan(&person, &m.id, &k, &m.surface, &m.refs, &m.last); err != nil {
			rows.Close()
			return nil, err
		}
		m.kind = k
		add(person, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, nil
	}
	rows, err = db.QueryContext(ctx, `SELECT person, min(substr(alias, ?)) FROM person_aliases WHERE alias GLOB ? GROUP BY person`,
		len(contactNamePrefix)+1, contactNamePrefix+"*")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var person, name string
		if err := rows.Scan(&person, &name); err != nil {
			rows.Close()
			return nil, err
		}
		names[person] = name
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	phones, err := phoneEntitiesByContact(ctx, db, order)
	if err != nil {
		return nil, err
	}
	for _, person := range order {
		for _, id := range phones[person] {
			m := member{id: id, kind: EntityPerson}
			if err := db.QueryRowContext(ctx, `SELECT surface, ref_count, last_seen FROM entities WHERE id = ?`, id).Scan(&m.surface, &m.refs, &m.last); err == nil {
				add(person, m)
			} else if err != sql.ErrNoRows {
				return nil, err
			}
		}
	}
	l := &contactListing{merged: map[string]bool{}}
	for _, person := range order {
		var ids []any
		e := abi.Entity{EntityID: person, Kind: EntityPerson, Surface: names[person]}
		for _, m := range members[person] {
			if len(owners[m.id]) > 1 {
				continue // a name of several contacts
			}
			ids = append(ids, m.id)
			e.Count += m.refs
			e.LastSeenMS = max(e.LastSeenMS, m.last)
			if e.Surface == "" && m.id == person {
				e.Surface = m.surface
			}
		}
		if len(ids) == 0 {
			continue
		}
		if len(ids) > 1 {
			// a message linked to two of them (its sender's name and address)
			// counts once
			marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
			if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT chunk_rowid) FROM chunk_entities WHERE entity_id IN (`+marks+`)`, ids...).Scan(&e.Count); err != nil {
				return nil, err
			}
		}
		if e.Surface == "" {
			e.Surface = strings.TrimPrefix(person, EntityPerson+":")
		}
		for _, m := range members[person] {
			if len(owners[m.id]) == 1 && (kind == "" || m.kind == kind) {
				l.merged[m.id] = true
			}
		}
		l.rows = append(l.rows, e)
	}
	if len(l.rows) == 0 {
		return nil, nil
	}
	sort.Slice(l.rows, func(i, j int) bool { return entityBefore(l.rows[i], l.rows[j]) })
	return l, nil
}

// entityBefore is the order of entity listings: most referenced, then most
// recently seen, then by id.
func entityBefore(a, b abi.Entity) bool {
	if a.Count != b.Count {
		return a.Count > b.Count
	}
	if a.LastSeenMS != b.LastSeenMS {
		return a.LastSeenMS > b.LastSeenMS
	}
	return a.EntityID < b.EntityID
}

// mergeContactPage is the page [off, off+k) of the listing of stored entities
// (merged ones left out) and the contacts' rows l.rows together, in listing
// order. fetch reads the stored entities' rows [from, from+n) in listing order;
// stored is how many there are. Every stored row of the page is at most
// len(l.rows) places before its position in the merged listing, so one window
// [off-len(l.rows), off+k) of them is read.
func mergeContactPage(l *contactListing, off, k, stored int, fetch func(from, n int) ([]abi.Entity, error)) ([]abi.Entity, error) {
	nc := len(l.rows)
	if off >= stored+nc {
		return nil, nil
	}
	s0 := max(0, off-nc)
	limit := off + k - s0
	got, err := fetch(s0, limit)
	if err != nil {
		return nil, err
	}
	atEnd := len(got) < limit
	type placed struct {
		rank int
		e    abi.Entity
	}
	var page []placed
	keep := func(rank int, e abi.Entity) {
		if rank >= off && rank < off+k {
			page = append(page, placed{rank, e})
		}
	}
	// both lists are in listing order: what comes before a row is a prefix
	for i, e := range got {
		before := sort.Search(nc, func(j int) bool { return !entityBefore(l.rows[j], e) }) // contacts' rows before it
		keep(s0+i+before, e)
	}
	for j, c := range l.rows {
		before := sort.Search(len(got), func(i int) bool { return !entityBefore(got[i], c) }) // fetched stored rows before it
		switch {
		case s0 > 0 && (len(got) == 0 || entityBefore(c, got[0])):
			continue // before the window: before the page
		case before == len(got) && !atEnd:
			continue // after the window: after the page
		}
		keep(j+s0+before, c)
	}
	sort.Slice(page, func(a, b int) bool { return page[a].rank < page[b].rank })
	out := make([]abi.Entity, len(page))
	for i, p := range page {
		out[i] = p.e
	}
	return out, nil
}
