package notes

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindDocs forces the document reader.
const KindDocs = "docs"

// DocsReader reads Markdown and plain-text documents: one source per file, its
// front matter (YAML) or leading Logseq property block giving the title, tags and
// date. Obsidian [[wikilinks]] and #tags in the body become entities in the store
// (memtree's document entity extraction).
//
// A document's SourceID is "doc:" + the file's absolute, cleaned path (slash
// separated), its message's Ref (source_ref) the path relative to the ingest root.
// The id therefore names the ingest root (p1/todo.md and p2/todo.md ingested in one
// run are two documents), stays the same on every run over the same root, and is
// also the same when the file is reached through another root that holds it
// (ingesting ~/notes, later ~/notes/projects), so overlapping ingests never store a
// file twice.
type DocsReader struct{}

func (DocsReader) Kind() string { return KindDocs }

// DocExts are the file name extensions read as documents.
var DocExts = map[string]bool{".md": true, ".markdown": true, ".mdown": true, ".mkd": true, ".txt": true, ".text": true, ".org": true}

func (DocsReader) Detect(p string, dir bool, _ []byte) bool {
	return !dir && DocExts[strings.ToLower(filepath.Ext(p))]
}

func (DocsReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	text, ok := readkit.ReadText(in.Path, rep)
	if !ok {
		return
	}
	if ext := strings.ToLower(filepath.Ext(in.Path)); ext == ".txt" || ext == ".text" || ext == ".log" {
		if shape, n, of := lineShape(text); n > 0 {
			rep.Warn(in.Path, "", fmt.Sprintf("%d of the first %d lines start alike (%q), as a chat's timestamped lines do, in no layout a chat reader knows: stored as one document (--kind chatlines reads timestamped lines of a layout it can infer, --kind whatsapp WhatsApp-like ones)", n, of, shape))
		}
	}
	mtime, note := docFileTime(in.Path, time.Now())
	src, err := parseWithinBudget(ctx, text, in.Rel, mtime, textBundleDate(in.Path))
	if errors.Is(err, errParseBudget) {
		rep.Skip(in.Path, ReasonParseBudget(DocParseBudget))
		return
	}
	if errors.Is(err, errJoplinItem) {
		rep.Skip(in.Path, ReasonJoplinItem)
		return
	}
	if errors.Is(err, readkit.ErrEmpty) {
		rep.Warn(in.Path, "", "no text: nothing to ingest")
		return
	}
	if err != nil {
		rep.Fail(readkit.FileError{Path: in.Path, Err: err})
		return
	}
	if note != "" && src.Messages[0].TimestampMS == mtime.UnixMilli() {
		rep.Warn(in.Path, "", note)
	}
	src.SourceID = DocSourceID(in.Path)
	src.Origin = in.Path
	out.Source(*src)
}

// DocSourceID is "doc:" + the absolute, cleaned, slash-separated path of the file.
func DocSourceID(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = filepath.Clean(p)
	}
	return "doc:" + filepath.ToSlash(abs)
}

// plausibleFileTime is the earliest file modification time taken as a document's
// time: archives and build systems stamp files with the Unix epoch (1970-01-01) or
// the DOS epoch (1980-01-01), which say nothing about the document.
var plausibleFileTime = time.Date(1980, 1, 2, 0, 0, 0, 0, time.UTC)

// docFileTime returns the file's modification time, or now with a note when the
// file has none that is plausible.
func docFileTime(p string, now time.Time) (time.Time, string) {
	st, err := archive.Stat(p)
	if err != nil {
		return now.UTC(), "no file time: dated at ingest"
	}
	mt := st.ModTime().UTC()
	if mt.Before(plausibleFileTime) {
		return now.UTC(), fmt.Sprintf("file time %s is an archive placeholder, not a date: dated at ingest", mt.Format("2006-01-02"))
	}
	return mt, ""
}

// frontMatter is the subset of YAML front matter (or of a Logseq page's leading
// property block) a document may carry.
type frontMatter struct {
	title string
	Date  time.Time
	tags  []string
}

// SplitFrontMatter separates a leading "---" YAML block from the body. Only the
// simple forms are read: `key: value`, `key: "quoted"`, `tags: [a, b]` and a
// following `- item` list. A block without a closing line is treated as body.
func SplitFrontMatter(text string) (frontMatter, string) {
	var fm frontMatter
	if !strings.HasPrefix(text, "---\n") {
		return fm, text
	}
	rest := text[4:]
	end := -1
	var after string
	for off := 0; off <= len(rest); {
		nl := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if nl >= 0 {
			line = rest[off : off+nl]
		}
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			end = off
			if nl >= 0 {
				after = rest[off+nl+1:]
			}
			break
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	if end < 0 {
		return fm, text
	}
	var listKey string
	lines := strings.Split(rest[:end], "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "- ") && listKey != "" {
			if listKey == "tags" {
				if v := yamlScalar(t[2:]); v != "" {
					fm.tags = append(fm.tags, v)
				}
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		listKey = ""
		if isBlockScalar(v) {
			// `title: |-` or `>`: the value is the more indented lines below.
			var parts []string
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || lines[i+1][0] == ' ' || lines[i+1][0] == '\t') {
				i++
				if t := strings.TrimSpace(lines[i]); t != "" {
					parts = append(parts, t)
				}
			}
			v = strings.Join(parts, " ")
			if v == "" {
				continue
			}
			v = strconv.Quote(v) // read below as the scalar it is, never as a list or a quote
		}
		if v == "" {
			listKey = key
			continue
		}
		switch key {
		case "title":
			fm.title = yamlScalar(v)
		case "date", "created", "modified", "updated":
			if t, ok := ParseDocDate(yamlScalar(v)); ok && (key == "date" || fm.Date.IsZero()) {
				fm.Date = t
			}
		case "tags", "keywords", "categories":
			if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
				for _, p := range strings.Split(v[1:len(v)-1], ",") {
					if s := yamlScalar(p); s != "" {
						fm.tags = append(fm.tags, s)
					}
				}
			} else if s := yamlScalar(v); s != "" {
				for _, p := range strings.Split(s, ",") {
					if p = strings.TrimSpace(p); p != "" {
						fm.tags = append(fm.tags, p)
					}
				}
			}
		}
	}
	return fm, strings.TrimLeft(after, "\n")
}

// isBlockScalar reports whether a YAML value is a block scalar's indicator
// ("|", "|-", ">+", "|2-", ...).
func isBlockScalar(v string) bool {
	if v == "" || v[0] != '|' && v[0] != '>' {
		return false
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	for _, c := range v[1:] {
		if c != '-' && c != '+' && (c < '1' || c > '9') {
			return false
		}
	}
	return len(v) <= 3
}

// reLogseqProp is one Logseq property line, `key:: value`.
var reLogseqProp = lazyre.New(`^([A-Za-z][A-Za-z0-9_.-]*)::(?:[ \t]*([^ \t:].*))?$`)

// splitLogseqProps separates a Logseq page's leading property block (the lines
// `key:: value` the page starts with, up to the first other line) from the body,
// reading title::, tags:: (a comma list of names, [[links]] and #tags), and
// date:: / created:: (a date, a [[journal link]] or epoch milliseconds). Property
// lines further down belong to blocks and stay in the body. alias:: and the other
// keys are dropped with the block.
func splitLogseqProps(text string) (frontMatter, string) {
	var fm frontMatter
	body := strings.TrimLeft(text, "\n")
	// Logseq also writes the page's properties as its first block, "- title:: x"
	// with the next properties indented under it.
	first, _, _ := strings.Cut(body, "\n")
	dashed := strings.HasPrefix(first, "- ") && reLogseqProp.MatchString(strings.TrimRight(first[2:], " \t"))
	n := 0
	for body != "" {
		line, rest, _ := strings.Cut(body, "\n")
		if dashed {
			switch {
			case n == 0:
				line = line[2:]
			case strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "\t"):
				line = strings.TrimLeft(line, " \t")
			default:
				line = "" // the next block: no property
			}
		}
		m := reLogseqProp.FindStringSubmatch(strings.TrimRight(line, " \t"))
		if m == nil {
			break
		}
		n++
		body = rest
		v := strings.TrimSpace(m[2])
		switch strings.ToLower(m[1]) {
		case "title":
			fm.title = v
		case "tags":
			fm.tags = append(fm.tags, logseqList(v)...)
		case "date", "created", "created-at", "created_at":
			if t, ok := logseqDate(v); ok && (strings.EqualFold(m[1], "date") || fm.Date.IsZero()) {
				fm.Date = t
			}
		}
	}
	if n == 0 {
		return fm, text
	}
	return fm, strings.TrimLeft(body, "\n")
}

// logseqList splits a Logseq list value: "a, b", "[[a b]], [[c]]", "#d #[[e f]]".
func logseqList(v string) []string {
	var out []string
	for {
		v = strings.TrimLeft(v, " \t,")
		if v == "" {
			return out
		}
		var item string
		switch {
		case strings.HasPrefix(v, "[[") || strings.HasPrefix(v, "#[["):
			v = v[strings.Index(v, "[[")+2:]
			end := strings.Index(v, "]]")
			if end < 0 {
				end = len(v)
			}
			item, v = v[:end], strings.TrimPrefix(v[end:], "]]")
		case strings.HasPrefix(v, "#"):
			end := strings.IndexAny(v, " \t,")
			if end < 0 {
				end = len(v)
			}
			item, v = v[1:end], v[end:]
		default:
			end := strings.IndexByte(v, ',')
			if end < 0 {
				end = len(v)
			}
			item, v = v[:end], v[end:]
		}
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
}

var reOrdinal = lazyre.New(`\b(\d{1,2})(?:st|nd|rd|th)\b`)

// logseqDate reads a Logseq property date: one ParseDocDate reads, a journal link
// "[[Mar 15th, 2024]]", or epoch milliseconds.
func logseqDate(v string) (time.Time, bool) {
	v = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "[["), "]]"))
	if len(v) == 13 {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.UnixMilli(ms).UTC(), true
		}
	}
	if t, ok := ParseDocDate(v); ok {
		return t, true
	}
	return ParseDocDate(reOrdinal.ReplaceAllString(v, "$1"))
}

// yamlScalar unquotes a simple YAML scalar.
func yamlScalar(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// reDocDateTime is an ISO-style date with an optional time and zone, the forms
// front matter uses: "2013-05-08", "2013-05-08 23:46", "2013-05-08 23:46:11 +0200",
// "2013-05-08T23:46:11+02:00", "2013-05-08T23:46:11.5Z", "2013-05-08 23:46:11 UTC".
// Jekyll's own posts also hold "2023-01-29 18:30:22 2023 -0800" (the year repeated
// before the zone): the repeat is accepted when it is the date's year.
var reDocDateTime = lazyre.New(`^(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:T|[ \t]+)(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?(?:[ \t]+(\d{4}))?[ \t]*(Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?$`)

// ParseDocDate reads the date forms documents use. A date with a zone keeps its
// instant; one without is taken as UTC. The result is in UTC.
func ParseDocDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if m := reDocDateTime.FindStringSubmatch(s); m != nil {
		return isoDate(m)
	}
	for _, layout := range []string{time.RFC3339, "2006/01/02", "2006/01/02 15:04", "2006/01/02 15:04:05",
		"January 2, 2006", "Jan 2, 2006", "2 January 2006", "2 Jan 2006", time.RFC1123Z, time.RFC1123, "Mon, 2 Jan 2006 15:04:05 -0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// isoDate builds the time reDocDateTime matched, rejecting impossible fields.
func isoDate(m []string) (time.Time, bool) {
	num := func(s string) int {
		n, _ := strconv.Atoi(s)
		return n
	}
	y, mo, d := num(m[1]), num(m[2]), num(m[3])
	h, mi, sec := num(m[4]), num(m[5]), num(m[6])
	if m[8] != "" && m[8] != m[1] {
		return time.Time{}, false
	}
	ns := 0
	if m[7] != "" {
		ns = num((m[7] + "000000000")[:9])
	}
	loc := time.UTC
	if z := m[9]; z != "" && z != "Z" && z != "UTC" && z != "GMT" {
		z = strings.ReplaceAll(z, ":", "")
		off := num(z[1:3]) * 3600
		if len(z) == 5 {
			off += num(z[3:5]) * 60
		}
		if z[0] == '-' {
			off = -off
		}
		if off < -14*3600 || off > 14*3600 {
			return time.Time{}, false
		}
		loc = time.FixedZone("", off)
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ns, loc)
	if t.Year() != y || int(t.Month()) != mo || t.Day() != d || t.Hour() != h || t.Minute() != mi || t.Second() != sec {
		return time.Time{}, false // 2013-02-30, 25:00, ...
	}
	return t.UTC(), true
}

var reNameDate = lazyre.New(`(^|[^0-9])(20\d\d|19\d\d)([-_])(0[1-9]|1[0-2])([-_])(0[1-9]|[12]\d|3[01])([^0-9]|$)`)

// DateFromName finds a YYYY-MM-DD (Jekyll posts, daily notes) or YYYY_MM_DD
// (Logseq journals) date in a file name.
func DateFromName(name string) (time.Time, bool) {
	for _, m := range reNameDate.FindAllStringSubmatch(name, -1) {
		if m[3] == m[5] {
			return ParseDocDate(m[2] + "-" + m[4] + "-" + m[6])
		}
	}
	return time.Time{}, false
}

// FirstHeading returns the text of the first "# " heading of a Markdown body.
func FirstHeading(body string) string {
	inCode := false
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inCode = !inCode
			continue
		}
		if !inCode && strings.HasPrefix(t, "# ") {
			return strings.TrimSpace(strings.TrimRight(t[2:], "#"))
		}
	}
	return ""
}

// parseDocument turns a Markdown or text file into one document source. rel is the
// path relative to the ingest root (slash-separated): the message's source_ref; the
// SourceID is "doc:" + rel, which DocsReader replaces by DocSourceID. The title is the front matter's (or Logseq title::),
// else the first "# " heading, else the file name; the time is the front-matter
// (or Logseq date::) date, else a date in the file name, else mtime.
func parseDocument(text, rel string, mtime time.Time) (*memtree.SourceInput, error) {
	return parseDocumentAt(text, rel, mtime, time.Time{})
}

// parseDocumentAt is parseDocument with the date the export keeps beside the file
// (Bear's info.json; zero when none), taken when the file itself carries none.
// It reads, by the file's own content: YAML ("---") or TOML ("+++") front
// matter, a Logseq property block, Org-mode settings (.org), Joplin's raw-export
// footer (errJoplinItem for an item that is no note) and Notion's property lines.
func parseDocumentAt(text, rel string, mtime, exportDate time.Time) (*memtree.SourceInput, error) {
	base := path.Base(rel)
	prov := "text"
	switch strings.ToLower(path.Ext(base)) {
	case ".md", ".markdown", ".mdown", ".mkd":
		prov = "markdown"
	}
	var fm frontMatter
	var body string
	var author string
	switch {
	case strings.EqualFold(path.Ext(base), ".org"):
		fm, body = splitOrg(text)
		prov = "org"
	case strings.HasPrefix(text, "+++\n"):
		fm, body = splitTOMLFrontMatter(text)
	default:
		fm, body = SplitFrontMatter(text)
	}
	if jn, ok, err := splitJoplin(body); err != nil {
		return nil, err
	} else if ok {
		body, author, prov = jn.body, jn.author, "joplin"
		if fm.title == "" {
			fm.title = jn.title
		}
		if fm.Date.IsZero() {
			fm.Date = jn.created
		}
	}
	if fm.Date.IsZero() {
		if np, ok := notionProps(body, base); ok {
			fm.Date = np.Date
			fm.tags = append(fm.tags, np.tags...)
		}
	}
	if lp, rest := splitLogseqProps(body); rest != body {
		body = rest
		if fm.title == "" {
			fm.title = lp.title
		}
		if fm.Date.IsZero() {
			fm.Date = lp.Date
		}
		fm.tags = append(fm.tags, lp.tags...)
	}
	if fm.Date.IsZero() {
		fm.Date = exportDate
	}
	body = strings.TrimSpace(body)
	if body == "" && fm.title == "" {
		return nil, readkit.ErrEmpty
	}
	title := fm.title
	if title == "" && prov != "org" {
		title = FirstHeading(body)
	}
	if title == "" {
		title = strings.TrimSuffix(base, path.Ext(base))
	}
	ts := fm.Date
	if ts.Before(plausibleFileTime) {
		// Joplin writes 1970-01-01 for times never set; no note predates 1980.
		ts = time.Time{}
	}
	if ts.IsZero() {
		if t, ok := DateFromName(base); ok && !t.Before(plausibleFileTime) {
			ts = t
		} else {
			ts = mtime
		}
	}
	return &memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: "doc:" + rel, Title: title, Provider: prov, Tags: fm.tags,
		Messages: []memtree.MessageInput{{Ref: rel, Author: author, Subject: title, TimestampMS: ts.UnixMilli(), Text: body + "\n"}},
	}, nil
}

// lineShape looks at a text file's first lines for the mark of a chat log: many
// lines starting with the same shape of digits and punctuation before a
// separator ("99:99, 99 a 9999 - " for "19:23, 28 Aug 2013 - Ann: hi"). It
// returns the shape (digits as 9, a run of letters as a), how many lines have
// it and how many were looked at; n is 0 when no shape is common enough.
func lineShape(text string) (shape string, n, of int) {
	counts := map[string]int{}
	for off := 0; off < len(text) && of < 200; {
		e := strings.IndexByte(text[off:], '\n')
		if e < 0 {
			e = len(text) - off
		}
		l := text[off : off+e]
		off += e + 1
		if strings.TrimSpace(l) == "" {
			continue
		}
		of++
		head := l[:min(len(l), 48)]
		cut := -1
		for _, sep := range []string{" - ", "] ", ": ", "\t"} {
			if i := strings.Index(head, sep); i > 0 && (cut < 0 || i < cut) {
				cut = i + len(sep)
			}
		}
		if cut < 0 {
			continue
		}
		var b strings.Builder
		digits, letter := 0, false
		for _, r := range head[:cut] {
			switch {
			case r >= '0' && r <= '9':
				b.WriteByte('9')
				digits++
				letter = false
			case unicode.IsLetter(r):
				if !letter {
					b.WriteByte('a')
				}
				letter = true
			default:
				b.WriteRune(r)
				letter = false
			}
		}
		if digits >= 4 {
			counts[b.String()]++
		}
	}
	for s, c := range counts {
		if c > n || c == n && s < shape {
			shape, n = s, c
		}
	}
	if n < 5 || n*2 < of {
		return "", 0, of
	}
	return shape, n, of
}
