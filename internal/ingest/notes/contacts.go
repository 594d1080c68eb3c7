package notes

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"mime/quotedprintable"
	"path/filepath"
	"strings"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindContacts forces the address-book reader.
const KindContacts = "contacts"

// ContactsReader reads address books: vCard files (.vcf, .vcard; versions 2.1,
// 3.0 and 4.0, one or many cards, folded lines, quoted-printable and charsets of
// 2.1, escaped values, grouped properties) and the CSV files Google Contacts
// exports (both the current "First Name, Last Name, E-mail 1 - Value" header and
// the older "Given Name, Family Name, E-mail 1 - Value") and Outlook's
// ("E-mail Address", "Mobile Phone"). Each contact is a person (memtree
// ContactInput): its names, nicknames, mail addresses, chat handles and phone
// numbers, never a document.
type ContactsReader struct{}

func (ContactsReader) Kind() string { return KindContacts }

func (ContactsReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	h := readkit.TrimUTF8BOM(head)
	switch strings.ToLower(filepath.Ext(p)) {
	case ".vcf", ".vcard":
		return true
	case ".csv":
		line, _, _ := bytes.Cut(h, []byte{'\n'})
		_, ok := contactCSVColumns(string(line))
		return ok
	}
	return bytes.HasPrefix(bytes.TrimLeft(h, " \t\r\n"), []byte("BEGIN:VCARD"))
}

func (ContactsReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	b, err := readkit.ReadFileLimited(in.Path)
	if err != nil {
		rep.Fail(readkit.FileError{Path: in.Path, Err: err})
		return
	}
	b = readkit.TrimUTF8BOM(b)
	var cs []memtree.ContactInput
	if bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("BEGIN:VCARD")) || bytes.Contains(b[:min(len(b), 4096)], []byte("BEGIN:VCARD")) {
		cs = readVCards(string(readkit.NormalizeNewlines(b)), in.Path, rep)
	} else {
		cs = readContactCSV(b, in.Path, rep)
	}
	if ctx.Err() != nil {
		return
	}
	if len(cs) == 0 {
		rep.Warn(in.Path, "", "no contact with a name, an address or a phone number: nothing to ingest")
		return
	}
	out.Contacts(in.Path, cs)
}

// vcardProp is one property line of a card: its name (upper case, group
// dropped), its parameters (upper-case names) and its raw value.
type vcardProp struct {
	name   string
	params map[string][]string
	value  string
}

// readVCards reads every card of a vCard file.
func readVCards(text, path string, rep *readkit.Report) []memtree.ContactInput {
	// unfold: a line starting with a space or tab continues the one before
	lines := strings.Split(text, "\n")
	var props [][]vcardProp
	var cur []vcardProp
	in := false
	num := 0
	for i := 0; i < len(lines); i++ {
		// Both joins build the line once (linear): appending to a string per
		// continuation made a card folded over 100,000 lines take 16 s.
		l := lines[i]
		continues := func(j int) bool {
			return j < len(lines) && len(lines[j]) > 0 && (lines[j][0] == ' ' || lines[j][0] == '\t')
		}
		if continues(i + 1) {
			var b strings.Builder
			b.WriteString(l)
			for continues(i + 1) {
				i++
				b.WriteString(lines[i][1:])
			}
			l = b.String()
		}
		// vCard 2.1 quoted-printable soft line breaks ("=" at the end)
		if strings.HasSuffix(l, "=") && strings.Contains(strings.ToUpper(l[:max(0, strings.IndexByte(l, ':'))]), "QUOTED-PRINTABLE") && i+1 < len(lines) {
			var b strings.Builder
			b.WriteString(l[:len(l)-1])
			for {
				i++
				next := lines[i]
				if strings.HasSuffix(next, "=") && i+1 < len(lines) {
					b.WriteString(next[:len(next)-1])
					continue
				}
				b.WriteString(next)
				break
			}
			l = b.String()
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		p, ok := parseVCardLine(l)
		if !ok {
			if in {
				rep.Warn(path, fmt.Sprintf("card %d, line %d", num, i+1), "not a vCard property (NAME:value): ignored")
			}
			continue
		}
		switch {
		case p.name == "BEGIN" && strings.EqualFold(strings.TrimSpace(p.value), "VCARD"):
			if in && len(cur) > 0 {
				// a card inside a card (2.1 AGENT): read the outer one's so far
				props = append(props, cur)
			}
			in, cur = true, nil
			num++
		case p.name == "END" && strings.EqualFold(strings.TrimSpace(p.value), "VCARD"):
			if in {
				props = append(props, cur)
			}
			in, cur = false, nil
		case in:
			cur = append(cur, p)
		}
	}
	if in && len(cur) > 0 {
		rep.Warn(path, fmt.Sprintf("card %d", num), "card without END:VCARD: read up to the end of the file")
		props = append(props, cur)
	}
	var out []memtree.ContactInput
	for k, ps := range props {
		c := vcardContact(ps)
		if c.Name == "" && c.Given == "" && c.Family == "" && len(c.Emails) == 0 && len(c.Phones) == 0 && len(c.Handles) == 0 {
			rep.Warn(path, fmt.Sprintf("card %d", k+1), "card without a name, an address or a phone number: not kept")
			continue
		}
		out = append(out, c)
	}
	return out
}

// parseVCardLine splits "group.NAME;PARAM=a,b;TYPE=x:value".
func parseVCardLine(l string) (vcardProp, bool) {
	l = strings.TrimRight(l, "\r")
	// the value starts at the first ':' outside a quoted parameter value
	colon, quote := -1, false
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '"':
			quote = !quote
		case ':':
			if !quote {
				colon = i
			}
		}
		if colon >= 0 {
			break
		}
	}
	if colon <= 0 {
		return vcardProp{}, false
	}
	head := l[:colon]
	p := vcardProp{value: l[colon+1:], params: map[string][]string{}}
	parts := strings.Split(head, ";")
	name := parts[0]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:] // "item1.EMAIL"
	}
	p.name = strings.ToUpper(strings.TrimSpace(name))
	if p.name == "" || strings.ContainsAny(p.name, " \t") {
		return vcardProp{}, false
	}
	for _, par := range parts[1:] {
		k, v, ok := strings.Cut(par, "=")
		if !ok {
			// 2.1: a bare type ("TEL;CELL;PREF:") or encoding ("QUOTED-PRINTABLE")
			k, v = "TYPE", par
			if u := strings.ToUpper(par); u == "QUOTED-PRINTABLE" || u == "BASE64" || u == "B" {
				k = "ENCODING"
			}
		}
		k = strings.ToUpper(strings.TrimSpace(k))
		for _, x := range strings.Split(v, ",") {
			p.params[k] = append(p.params[k], strings.Trim(strings.TrimSpace(x), `"`))
		}
	}
	return p, true
}

// text decodes a property's value: quoted-printable and a 2.1 charset.
func (p vcardProp) text() string {
	v := p.value
	if enc := p.params["ENCODING"]; len(enc) > 0 && strings.EqualFold(enc[0], "QUOTED-PRINTABLE") {
		if b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(v))); err == nil {
			v = string(b)
		}
	}
	if cs := p.params["CHARSET"]; len(cs) > 0 {
		v, _ = readkit.DecodeCharset(cs[0], []byte(v))
	} else if !readkit.IsText([]byte(v)) {
		v = readkit.DecodeFallback([]byte(v))
	}
	return v
}

// vcardSplit splits a structured value at unescaped sep and unescapes each part.
func vcardSplit(v string, sep byte) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n', 'N':
				b.WriteByte(' ')
			default:
				b.WriteByte(v[i])
			}
		case c == sep:
			out = append(out, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(b.String()))
}

// vcardUnescape unescapes a text value (\, \; \n \\).
func vcardUnescape(v string) string {
	parts := vcardSplit(v, 0)
	return strings.Join(parts, "")
}

// handleSchemes are the URI schemes of chat handles in IMPP and the social
// profile properties, with what the handle is after them.
var handleSchemes = []string{"xmpp:", "sip:", "skype:", "aim:", "msnim:", "ymsgr:", "icq:", "irc:", "matrix:", "tg:", "im:", "mailto:"}

// vcardContact makes a contact of one card's properties.
func vcardContact(ps []vcardProp) memtree.ContactInput {
	var c memtree.ContactInput
	addUniq := func(list *[]string, v string) {
		v = strings.TrimSpace(v)
		if v == "" {
			return
		}
		for _, x := range *list {
			if strings.EqualFold(x, v) {
				return
			}
		}
		*list = append(*list, v)
	}
	for _, p := range ps {
		v := p.text()
		switch p.name {
		case "FN":
			if c.Name == "" {
				c.Name = vcardUnescape(v)
			} else {
				addUniq(&c.Names, vcardUnescape(v))
			}
		case "N":
			parts := vcardSplit(v, ';')
			for len(parts) < 2 {
				parts = append(parts, "")
			}
			fam, giv := strings.ReplaceAll(parts[0], ",", " "), strings.ReplaceAll(parts[1], ",", " ")
			if c.Given == "" && c.Family == "" {
				c.Given, c.Family = strings.Join(strings.Fields(giv), " "), strings.Join(strings.Fields(fam), " ")
			}
		case "NICKNAME":
			for _, n := range vcardSplit(v, ',') {
				addUniq(&c.Nicknames, n)
			}
		case "X-PHONETIC-FIRST-NAME", "X-PHONETIC-LAST-NAME", "X-MAIDENNAME":
			addUniq(&c.Names, vcardUnescape(v))
		case "EMAIL":
			addUniq(&c.Emails, strings.TrimPrefix(strings.TrimSpace(vcardUnescape(v)), "mailto:"))
		case "TEL":
			addUniq(&c.Phones, strings.TrimPrefix(strings.TrimSpace(vcardUnescape(v)), "tel:"))
		case "IMPP", "X-SOCIALPROFILE", "X-TWITTER", "X-SKYPE", "X-SKYPE-USERNAME", "X-JABBER", "X-AIM", "X-ICQ", "X-MSN", "X-YAHOO", "X-GOOGLE-TALK", "X-TELEGRAM", "X-MATRIX", "X-DISCORD":
			if h := contactHandle(vcardUnescape(v), p.params["X-USER"]); h != "" {
				if strings.Contains(h, "@") && !strings.HasPrefix(h, "@") && isMailLike(h) {
					addUniq(&c.Emails, h) // an XMPP id is also an address people mail
				}
				addUniq(&c.Handles, h)
			}
		}
	}
	return c
}

// isMailLike reports whether s looks like user@host.tld.
func isMailLike(s string) bool {
	at := strings.IndexByte(s, '@')
	return at > 0 && strings.Contains(s[at:], ".") && !strings.ContainsAny(s, " /:")
}

// contactHandle reads a handle from an IMPP or social-profile value: a URI's
// path after its scheme ("xmpp:micah@jabber.org"), a profile URL's last path
// part ("https://twitter.com/micahs" → "micahs"), or the value as written.
func contactHandle(v string, user []string) string {
	if len(user) > 0 && strings.TrimSpace(user[0]) != "" {
		return strings.TrimSpace(user[0])
	}
	v = strings.TrimSpace(v)
	low := strings.ToLower(v)
	if strings.HasPrefix(low, "http://") || strings.HasPrefix(low, "https://") {
		rest := v[strings.Index(v, "//")+2:]
		_, path, _ := strings.Cut(rest, "/")
		path = strings.Trim(path, "/")
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			path = path[i+1:]
		}
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			path = path[:i]
		}
		return strings.TrimPrefix(path, "@")
	}
	for _, s := range handleSchemes {
		if strings.HasPrefix(low, s) {
			v = v[len(s):]
			break
		}
	}
	return strings.TrimPrefix(strings.TrimSpace(v), "//")
}

// contactColumns are where a contact CSV's fields are (-1 when absent).
type contactColumns struct {
	name, given, middle, family, nick int
	emails, phones, handles, names    []int
}

// contactCSVColumns reads a CSV header: Google Contacts (current and older)
// and Outlook. ok is false for any other CSV.
func contactCSVColumns(header string) (contactColumns, bool) {
	r := csv.NewReader(strings.NewReader(header))
	r.LazyQuotes = true
	cols, err := r.Read()
	if err != nil {
		return contactColumns{}, false
	}
	c := contactColumns{name: -1, given: -1, middle: -1, family: -1, nick: -1}
	for i, h := range cols {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		l := strings.ToLower(h)
		switch {
		case l == "name" || l == "display name" || l == "full name":
			c.name = i
		case l == "given name" || l == "first name":
			c.given = i
		case l == "additional name" || l == "middle name":
			c.middle = i
		case l == "family name" || l == "last name":
			c.family = i
		case l == "nickname" || l == "short name":
			c.nick = i
		case l == "file as" || l == "yomi name" || l == "phonetic first name" || l == "phonetic last name" || l == "maiden name":
			c.names = append(c.names, i)
		case strings.HasPrefix(l, "e-mail") && (strings.HasSuffix(l, "- value") || strings.HasSuffix(l, "address")),
			strings.HasPrefix(l, "email") && (strings.HasSuffix(l, "- value") || strings.HasSuffix(l, "address")):
			c.emails = append(c.emails, i)
		case strings.HasPrefix(l, "phone") && strings.HasSuffix(l, "- value"),
			strings.HasSuffix(l, " phone") || strings.HasSuffix(l, " phone 2") || l == "mobile phone" || l == "pager":
			c.phones = append(c.phones, i)
		case strings.HasPrefix(l, "im") && strings.HasSuffix(l, "- value"),
			strings.HasPrefix(l, "website") && strings.HasSuffix(l, "- value") || l == "web page":
			c.handles = append(c.handles, i)
		}
	}
	named := c.name >= 0 || c.given >= 0 || c.family >= 0
	return c, named && (len(c.emails) > 0 || len(c.phones) > 0)
}

// readContactCSV reads a contact CSV (contactCSVColumns).
func readContactCSV(b []byte, path string, rep *readkit.Report) []memtree.ContactInput {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	cols, ok := contactCSVColumns(strings.TrimRight(string(line), "\r"))
	if !ok {
		rep.Fail(readkit.FileError{Path: path, Err: errors.New("CSV without the columns of a contacts export (a name and an e-mail or phone column, as Google Contacts or Outlook write them): not read")})
		return nil
	}
	text := string(b)
	if !readkit.IsText(b) {
		text = readkit.DecodeFallback(b)
	}
	r := csv.NewReader(strings.NewReader(text))
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	if _, err := r.Read(); err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("contacts CSV header: %w", err)})
		return nil
	}
	get := func(rec []string, i int) string {
		if i < 0 || i >= len(rec) {
			return ""
		}
		return strings.TrimSpace(rec[i])
	}
	// Google writes several values of one field in one cell: "a@x ::: b@y"
	multi := func(rec []string, idx []int) []string {
		var out []string
		for _, i := range idx {
			for _, v := range strings.Split(get(rec, i), ":::") {
				if v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "* ")); v != "" {
					out = append(out, v)
				}
			}
		}
		return out
	}
	var out []memtree.ContactInput
	for row := 2; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rep.Warn(path, fmt.Sprintf("row %d", row), "not CSV ("+err.Error()+"): row skipped")
			continue
		}
		c := memtree.ContactInput{Name: get(rec, cols.name), Given: get(rec, cols.given), Family: get(rec, cols.family)}
		if c.Name == "" {
			c.Name = strings.Join(strings.Fields(strings.Join([]string{c.Given, get(rec, cols.middle), c.Family}, " ")), " ")
		}
		if n := get(rec, cols.nick); n != "" {
			c.Nicknames = append(c.Nicknames, n)
		}
		c.Names = multi(rec, cols.names)
		c.Emails = multi(rec, cols.emails)
		c.Phones = multi(rec, cols.phones)
		for _, h := range multi(rec, cols.handles) {
			if h = contactHandle(h, nil); h != "" {
				c.Handles = append(c.Handles, h)
			}
		}
		if c.Name == "" && len(c.Emails) == 0 && len(c.Phones) == 0 {
			rep.Warn(path, fmt.Sprintf("row %d", row), "contact without a name, an address or a phone number: not kept")
			continue
		}
		out = append(out, c)
	}
	return out
}
