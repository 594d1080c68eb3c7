package notes

import (
	"encoding/json"
	"errors"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// The note formats beside plain Markdown: TOML front matter (Hugo, Zola), Org-mode,
// Joplin's raw export, Notion's property lines and Bear's TextBundles. Each takes
// the title and date the export itself carries.

// splitTOMLFrontMatter separates a leading "+++" TOML block (Hugo, Zola) from the
// body, reading title, date (also publishDate, created, lastmod, updated), and
// tags, categories and keywords (top level or under [taxonomies]). A block
// without a closing line is treated as body.
func splitTOMLFrontMatter(text string) (frontMatter, string) {
	var fm frontMatter
	if !strings.HasPrefix(text, "+++\n") {
		return fm, text
	}
	rest := text[4:]
	block, after, ok := cutAtLine(rest, "+++")
	if !ok {
		return fm, text
	}
	lines := strings.Split(block, "\n")
	table := ""
	var dateRank int
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			table = strings.ToLower(strings.TrimSpace(strings.Trim(t, "[]")))
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		key := strings.ToLower(strings.Trim(strings.TrimSpace(k), `"'`))
		v = strings.TrimSpace(v)
		// Continuation lines are scanned once each: an array or string that
		// never closes costs time linear in the block (issue 39, finding 3:
		// rescanning the whole value per line took 37 s for 500 KB).
		if strings.HasPrefix(v, "[") {
			var sc tomlArrayScan
			if !sc.feed(v) && i+1 < len(lines) {
				var b strings.Builder
				b.WriteString(v)
				for i+1 < len(lines) {
					i++
					line := strings.TrimSpace(lines[i])
					b.WriteByte(' ')
					b.WriteString(line)
					if sc.feed(" " + line) {
						break
					}
				}
				v = b.String()
			}
		}
		if strings.HasPrefix(v, `"""`) || strings.HasPrefix(v, "'''") {
			q, s := v[:3], v[3:]
			if !strings.Contains(s, q) {
				var b strings.Builder
				b.WriteString(s)
				for i+1 < len(lines) {
					i++
					line := strings.TrimSpace(lines[i])
					b.WriteByte(' ')
					b.WriteString(line)
					if strings.Contains(line, q) {
						break
					}
				}
				s = b.String()
			}
			s, _, _ = strings.Cut(s, q)
			v = strconv.Quote(strings.TrimSpace(s))
		}
		top := table == ""
		switch {
		case top && key == "title":
			fm.title = tomlString(v)
		case top && (key == "date" || key == "publishdate" || key == "created" || key == "lastmod" || key == "updated"):
			rank := map[string]int{"date": 4, "publishdate": 3, "created": 2, "lastmod": 1, "updated": 1}[key]
			if d, ok := ParseDocDate(tomlString(v)); ok && rank > dateRank {
				fm.Date, dateRank = d, rank
			}
		case (top || table == "taxonomies") && (key == "tags" || key == "categories" || key == "keywords"):
			fm.tags = append(fm.tags, tomlArray(v)...)
		}
	}
	return fm, strings.TrimLeft(after, "\n")
}

// cutAtLine splits s at the first line that is exactly marker (trailing blanks
// aside): what is before it and what follows it.
func cutAtLine(s, marker string) (before, after string, ok bool) {
	for off := 0; off <= len(s); {
		nl := strings.IndexByte(s[off:], '\n')
		line := s[off:]
		if nl >= 0 {
			line = s[off : off+nl]
		}
		if strings.TrimRight(line, " \t") == marker {
			if nl >= 0 {
				return s[:off], s[off+nl+1:], true
			}
			return s[:off], "", true
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	return "", "", false
}

// tomlString reads a TOML string or bare value (a date): quotes removed, a
// trailing comment dropped.
func tomlString(v string) string {
	v = strings.TrimSpace(v)
	switch {
	case strings.HasPrefix(v, `"`):
		if end := closingQuote(v); end > 0 {
			if u, err := strconv.Unquote(v[:end+1]); err == nil {
				return u
			}
			return v[1:end]
		}
	case strings.HasPrefix(v, "'"):
		if end := strings.IndexByte(v[1:], '\''); end >= 0 {
			return v[1 : end+1]
		}
	}
	if i := strings.Index(v, "#"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// closingQuote returns the index of the '"' that closes the basic string v
// starts with (-1 when none).
func closingQuote(v string) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// tomlArrayClosed reports whether the brackets of v balance outside strings.
func tomlArrayClosed(v string) bool {
	var sc tomlArrayScan
	return sc.feed(v)
}

// tomlArrayScan follows a TOML array's brackets and strings across the pieces
// of text fed to it, so that each piece is scanned once.
type tomlArrayScan struct {
	depth   int
	q       byte // the open string's quote, 0 outside strings
	escaped bool // the previous byte was a backslash inside "…"
	comment bool // a '#' outside strings was seen: the value is over
}

// feed scans the next piece of the value and reports whether the array is
// closed (its brackets balance) after it. After a comment outside strings the
// value is over and the balance then is the answer, as a rescan would give.
func (sc *tomlArrayScan) feed(v string) bool {
	if sc.comment {
		return sc.depth <= 0
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case sc.escaped:
			sc.escaped = false
		case sc.q != 0:
			if c == '\\' && sc.q == '"' {
				sc.escaped = true
			} else if c == sc.q {
				sc.q = 0
			}
		case c == '"' || c == '\'':
			sc.q = c
		case c == '[':
			sc.depth++
		case c == ']':
			sc.depth--
		case c == '#':
			sc.comment = true
			return sc.depth <= 0
		}
	}
	return sc.depth <= 0
}

// tomlArray reads the strings of a TOML array (or one string).
func tomlArray(v string) []string {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "[") {
		if s := tomlString(v); s != "" {
			return []string{s}
		}
		return nil
	}
	var out []string
	v = v[1:]
	for {
		v = strings.TrimLeft(v, " \t,")
		if v == "" || v[0] == ']' {
			return out
		}
		var item string
		switch v[0] {
		case '"':
			end := closingQuote(v)
			if end < 0 {
				return out
			}
			item, v = tomlString(v[:end+1]), v[end+1:]
		case '\'':
			end := strings.IndexByte(v[1:], '\'')
			if end < 0 {
				return out
			}
			item, v = v[1:end+1], v[end+2:]
		default:
			end := strings.IndexAny(v, ",]")
			if end < 0 {
				end = len(v)
			}
			item, v = strings.TrimSpace(v[:end]), v[end:]
		}
		if item != "" {
			out = append(out, item)
		}
	}
}

// reOrgKeyword is an Org-mode in-buffer setting, "#+TITLE: value".
var reOrgKeyword = lazyre.New(`^#\+([A-Za-z_]+):(?:[ \t]*(.*))?$`)

// reOrgTimestamp is an Org-mode timestamp, active <...> or inactive [...]:
// "<2024-03-15 Fri>", "[2024-03-15 Fri 10:30]", "<2024-03-15 Fri 10:30-11:00 +1w>".
var reOrgTimestamp = lazyre.New(`[<\[](\d{4}-\d{2}-\d{2})(?:[ \t]+[^\s\d>\]]+)?(?:[ \t]+(\d{1,2}:\d{2}))?[^>\]\n]*[>\]]`)

// reOrgHeading is an Org-mode heading with its optional trailing tags.
var reOrgHeading = lazyre.New(`^\*+[ \t]+(.*?)(?:[ \t]+(:[[:alnum:]_@#%:]+:))?[ \t]*$`)

// splitOrg reads an Org-mode document: #+TITLE, #+DATE and #+FILETAGS (also a
// file-level property drawer's :TITLE:, :CREATED: and :DATE:, as Logseq writes),
// and returns the body with in-buffer settings and property drawers removed,
// headings without their stars and tags, comment lines ("# ...") dropped, and
// timestamps as plain dates. The first heading titles a document without
// #+TITLE (parseDocumentAt falls back to the file name, never to a line of text).
func splitOrg(text string) (frontMatter, string) {
	var fm frontMatter
	var out []string
	var firstHead string
	inDrawer, headed := false, false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if inDrawer {
			if strings.EqualFold(t, ":END:") {
				inDrawer = false
				continue
			}
			if k, v, ok := orgProperty(t); ok && !headed {
				switch k {
				case "title":
					if fm.title == "" {
						fm.title = v
					}
				case "created", "date":
					if d, ok := orgDate(v); ok && fm.Date.IsZero() {
						fm.Date = d
					}
				}
			}
			continue
		}
		if strings.EqualFold(t, ":PROPERTIES:") {
			inDrawer = true
			continue
		}
		if u := strings.ToUpper(t); strings.HasPrefix(u, "#+BEGIN") || strings.HasPrefix(u, "#+END") {
			continue // a block's delimiters; its lines are text
		}
		if t == "#" || strings.HasPrefix(t, "# ") {
			continue // a comment line ("# -*- mode: org -*-"): no text, never a title
		}
		if m := reOrgKeyword.FindStringSubmatch(t); m != nil {
			v := strings.TrimSpace(m[2])
			switch strings.ToUpper(m[1]) {
			case "TITLE":
				fm.title = strings.TrimSpace(fm.title + " " + v)
			case "DATE":
				if d, ok := orgDate(v); ok {
					fm.Date = d
				}
			case "FILETAGS", "TAGS":
				for _, tag := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' || r == '\t' }) {
					fm.tags = append(fm.tags, tag)
				}
			}
			continue // in-buffer settings are no text
		}
		if m := reOrgHeading.FindStringSubmatch(line); m != nil {
			headed = true
			h := orgPlain(strings.TrimSpace(m[1]))
			if firstHead == "" {
				firstHead = h
			}
			out = append(out, h)
			continue
		}
		out = append(out, orgPlain(line))
	}
	if fm.title == "" {
		fm.title = firstHead
	}
	return fm, strings.Join(out, "\n")
}

// orgProperty reads a property drawer line ":KEY: value" (key lower-cased).
func orgProperty(t string) (string, string, bool) {
	if !strings.HasPrefix(t, ":") {
		return "", "", false
	}
	k, v, ok := strings.Cut(t[1:], ":")
	if !ok || k == "" || strings.ContainsAny(k, " \t") {
		return "", "", false
	}
	return strings.ToLower(k), strings.TrimSpace(v), true
}

// orgDate reads an Org timestamp or a bare ISO date.
func orgDate(v string) (time.Time, bool) {
	if m := reOrgTimestamp.FindStringSubmatch(v); m != nil {
		if m[2] != "" {
			return ParseDocDate(m[1] + " " + m[2])
		}
		return ParseDocDate(m[1])
	}
	return ParseDocDate(v)
}

// orgPlain writes an Org line's timestamps as plain dates ("2024-03-15 10:30").
func orgPlain(line string) string {
	if !strings.ContainsAny(line, "<[") {
		return line
	}
	return reOrgTimestamp.ReplaceAllString(line, "$1 $2")
}

// Joplin's raw export ends every item with a metadata footer of "key: value"
// lines: "id: <32 hex>", "created_time: 2020-04-12T10:22:33.123Z", ..., "type_: 1".
var (
	reJoplinMeta = lazyre.New(`^[a-z_]+:(?: .*)?$`)
	reJoplinID   = lazyre.New(`^id: [0-9a-f]{32}$`)
)

// errJoplinItem marks a Joplin raw-export file that is no note.
var errJoplinItem = errors.New("Joplin notebook, tag or resource record")

// ReasonJoplinItem is the skip reason of errJoplinItem.
const ReasonJoplinItem = "Joplin notebook, tag or resource record: export metadata, not a note"

// joplinNote is a Joplin raw-export note: its first line is its title, its
// footer metadata (never indexed as text).
type joplinNote struct {
	title, body, author string
	created             time.Time
}

// splitJoplin reads a Joplin raw-export item. ok is false when text has no
// Joplin footer; err is errJoplinItem for items that are no note.
func splitJoplin(text string) (n joplinNote, ok bool, err error) {
	lines := strings.Split(strings.TrimRight(text, "\n \t"), "\n")
	i := len(lines)
	for i > 0 && reJoplinMeta.MatchString(lines[i-1]) {
		i--
	}
	if i == len(lines) || (i > 0 && strings.TrimSpace(lines[i-1]) != "") {
		return n, false, nil
	}
	meta := map[string]string{}
	hasID := false
	for _, l := range lines[i:] {
		k, v, _ := strings.Cut(l, ":")
		meta[k] = strings.TrimSpace(v)
		hasID = hasID || reJoplinID.MatchString(l)
	}
	typ, terr := strconv.Atoi(meta["type_"])
	if !hasID || terr != nil {
		return n, false, nil
	}
	if typ != 1 {
		return n, true, errJoplinItem
	}
	pre := lines[:i]
	for len(pre) > 0 && strings.TrimSpace(pre[0]) == "" {
		pre = pre[1:]
	}
	if len(pre) > 0 {
		n.title = strings.TrimSpace(pre[0])
		n.body = strings.TrimSpace(strings.Join(pre[1:], "\n"))
	}
	for _, k := range []string{"created_time", "user_created_time", "updated_time"} {
		if d, ok := ParseDocDate(meta[k]); ok && !d.Before(plausibleFileTime) {
			n.created = d
			break
		}
	}
	n.author = meta["author"]
	return n, true, nil
}

// reNotionName is the 32-hex id Notion appends to exported file names.
var reNotionName = lazyre.New(`[ _][0-9a-f]{32}$`)

// reNotionProp is one Notion property line under a page's title, "Created: ...".
var reNotionProp = lazyre.New(`^([A-Z][A-Za-z0-9 _()/-]{0,40}): (.+)$`)

// notionProps reads the property lines a Notion Markdown export writes under a
// page's "# Title": the creation date (Created, Created time, Date Created) and
// Tags. ok is false when the page carries no such date and its file name has no
// Notion id (a note's "Note: ..." line is no property).
func notionProps(body, base string) (fm frontMatter, ok bool) {
	lines := strings.Split(body, "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) || !strings.HasPrefix(lines[i], "# ") {
		return fm, false
	}
	for i++; i < len(lines) && strings.TrimSpace(lines[i]) == ""; i++ {
	}
	notionName := reNotionName.MatchString(strings.TrimSuffix(base, path.Ext(base)))
	for ; i < len(lines); i++ {
		m := reNotionProp.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			break
		}
		switch strings.ToLower(m[1]) {
		case "created", "created time", "date created", "created at", "created on":
			if d, ok := parseNotionDate(m[2]); ok {
				fm.Date = d
			}
		case "date":
			if d, ok := parseNotionDate(m[2]); ok && fm.Date.IsZero() && notionName {
				fm.Date = d
			}
		case "tags", "labels":
			if notionName {
				for _, t := range strings.Split(m[2], ",") {
					if t = strings.TrimSpace(t); t != "" {
						fm.tags = append(fm.tags, t)
					}
				}
			}
		}
	}
	return fm, !fm.Date.IsZero()
}

// parseNotionDate reads the dates Notion writes: "January 2, 2021 3:04 PM",
// "Jan 2, 2021", "2021/01/02 15:04", "@January 2, 2021" (a date mention), a
// range's start ("January 2, 2021 → January 5, 2021").
func parseNotionDate(v string) (time.Time, bool) {
	v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "@"))
	if i := strings.Index(v, "→"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	if i := strings.Index(v, " (GMT"); i >= 0 {
		v = v[:i]
	}
	for _, layout := range []string{"January 2, 2006 3:04 PM", "Jan 2, 2006 3:04 PM", "January 2, 2006 15:04", "January 2, 2006", "Jan 2, 2006", "2006/01/02 3:04 PM", "2006/01/02 15:04", "2006/01/02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), true
		}
	}
	return ParseDocDate(v)
}

// textBundleDate reads the creation date Bear writes into the info.json of a
// TextBundle ("net.shinyfrog.bear": {"creationDate": "2024-06-14T16:24:38Z"}).
// It returns the zero time when p is no TextBundle's text or carries no date.
func textBundleDate(p string) time.Time {
	dir := filepath.Dir(p)
	if !strings.EqualFold(filepath.Ext(dir), ".textbundle") {
		return time.Time{}
	}
	b, ok, err := archive.ReadAll(filepath.Join(dir, "info.json"), 1<<20)
	if err != nil || !ok {
		return time.Time{}
	}
	var info map[string]json.RawMessage
	if json.Unmarshal(readkit.TrimUTF8BOM(b), &info) != nil {
		return time.Time{}
	}
	var bear struct {
		Created  string `json:"creationDate"`
		Modified string `json:"modificationDate"`
	}
	if raw, ok := info["net.shinyfrog.bear"]; !ok || json.Unmarshal(raw, &bear) != nil {
		return time.Time{}
	}
	for _, v := range []string{bear.Created, bear.Modified} {
		if d, ok := ParseDocDate(v); ok {
			return d
		}
	}
	return time.Time{}
}
