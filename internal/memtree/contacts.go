package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"unicode"
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
	for _, p := range people {
		rows, err := db.QueryContext(ctx, `SELECT a.alias FROM person_aliases a JOIN entities e ON e.id = a.alias WHERE a.person = ? ORDER BY e.ref_count DESC, a.alias`, p)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, nil, err
			}
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
	phones, err := contactPhoneEntities(ctx, db, people)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range phones {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, people, nil
}

// contactPhoneEntities finds the person entities named by one of people's phone
// numbers (a WhatsApp export names a sender not in the phone's address book by
// the number, "+49 171 2345678"): the same digits, or the same last nine when
// one is written with the country code and the other with a trunk prefix.
func contactPhoneEntities(ctx context.Context, db *sql.DB, people []string) ([]string, error) {
	want := map[string]bool{}
	for _, p := range people {
		rows, err := db.QueryContext(ctx, `SELECT alias FROM person_aliases WHERE person = ? AND alias GLOB 'phone:*'`, p)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var a string
			if rows.Scan(&a) == nil {
				want[phoneKey(strings.TrimPrefix(a, "phone:"))] = true
			}
		}
		rows.Close()
	}
	if len(want) == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT id FROM entities WHERE kind = 'person' AND (id GLOB 'person:+[0-9]*' OR id GLOB 'person:[0-9(]*') LIMIT 100000`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if d := phoneDigits(strings.TrimPrefix(id, "person:")); len(d) >= 5 && want[phoneKey(d)] {
			out = append(out, id)
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
