package notes

import (
	"bytes"
	"context"
	"html"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindAppleNotes forces the Apple Notes HTML reader.
const KindAppleNotes = "applenotes"

// AppleNotesReader reads the HTML files Apple Notes exporters write, one note
// a file in folders mirroring the note's (Exporter, apple-notes-exporter,
// notes-exporter and the AppleScript/JXA scripts: each writes the note's
// "body", Notes' own HTML: a <div> a line, <div><br></div> between
// paragraphs, the title the first line, often an <h1>; "Apple-dash-list"
// lists, checklists, WebKit's "Apple-interchange-newline"), with or without an
// <html><head><title> around it. The title is <title>, else the first heading,
// else the first line, else the file name; the time the note's creation (else
// modification) date from a <meta> (created, date, dcterms.created, modified)
// or from the "Creation Date: …" / "Modification Date: …" lines scripts put
// first (AppleScript's "Monday, January 5, 2026 at 10:00:00 AM" or ISO), else
// the file's time; images and attached files are named. A page of no Notes
// mark is left to the rest (HTML is not otherwise read).
type AppleNotesReader struct{}

func (AppleNotesReader) Kind() string { return KindAppleNotes }

// appleNotesMarks are what Notes' HTML (and WebKit editing it) writes and web
// pages rarely do.
var appleNotesMarks = [][]byte{
	[]byte("Apple-dash-list"), []byte("Apple-interchange-newline"), []byte("-apple-system"),
	[]byte("x-apple-data-detectors"), []byte("Apple-tab-span"), []byte("<div><br></div>"), []byte("<div><br/></div>"),
	[]byte("com.apple.notes"), []byte("Apple Notes"),
}

func (AppleNotesReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	if ext := strings.ToLower(filepath.Ext(p)); ext != ".html" && ext != ".htm" {
		return false
	}
	h := bytes.TrimLeft(readkit.TrimUTF8BOM(head), " \t\r\n")
	low := bytes.ToLower(h[:min(len(h), 512)])
	if !bytes.HasPrefix(low, []byte("<div")) && !bytes.HasPrefix(low, []byte("<html")) && !bytes.HasPrefix(low, []byte("<!doctype html")) &&
		!bytes.HasPrefix(low, []byte("<h1")) && !bytes.HasPrefix(low, []byte("<meta")) && !bytes.HasPrefix(low, []byte("<p")) {
		return false
	}
	for _, m := range appleNotesMarks {
		if bytes.Contains(h, m) {
			return true
		}
	}
	return false
}

var (
	reANTitle   = lazyre.New(`(?is)<title[^>]*>(.*?)</title>`)
	reANHeading = lazyre.New(`(?is)<h[1-3][^>]*>(.*?)</h[1-3]>`)
	reANTag     = lazyre.New(`(?s)<[^>]*>`)
	reANMeta    = lazyre.New(`(?is)<meta\s+[^>]*>`)
	reANAttr    = lazyre.New(`(?is)\b(name|property|content|src|href|data-filename|title)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)
	reANMedia   = lazyre.New(`(?is)<(?:img|object|embed|video|audio|source)\s[^>]*>|<a\s[^>]*href\s*=\s*["']?(?:attachments?|media|images|files|_resources)/[^>]*>`)
	reANDateRow = lazyre.New(`(?i)^\s*(creation date|created(?: on| at)?|date created|modification date|modified(?: on| at)?|last modified|updated)\s*:\s*(.+?)\s*$`)
	reANDivOpen = lazyre.New(`(?i)<div(?:\s[^>]*)?>`)
	reANDivEnd  = lazyre.New(`(?i)</div\s*>`)
	reANMetaRow = lazyre.New(`(?i)^\s*(folder|account|id|note id|tags?)\s*:\s*.*$`)
)

// appleNoteAttrs reads a tag's attributes (lower-case names, values unquoted
// and unescaped).
func appleNoteAttrs(tag string) map[string]string {
	out := map[string]string{}
	for _, m := range reANAttr.FindAllStringSubmatch(tag, -1) {
		v := strings.Trim(m[2], `"'`)
		out[strings.ToLower(m[1])] = html.UnescapeString(v)
	}
	return out
}

// appleNoteDate reads a date as the exporters write them: AppleScript's
// long form ("Monday, January 5, 2026 at 10:00:00 AM", "5 January 2026 at
// 10:00:00"), RFC 3339 and the forms parseDocDate reads.
func appleNoteDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(html.UnescapeString(s))
	if t, ok := ParseDocDate(s); ok {
		return t, true
	}
	v := s
	if i := strings.Index(v, ", "); i > 0 && !strings.ContainsAny(v[:i], "0123456789") {
		v = v[i+2:] // the weekday
	}
	v = strings.Replace(v, " at ", " ", 1)
	v = strings.ReplaceAll(v, "\u202f", " ") // macOS puts a narrow space before AM/PM
	for _, layout := range []string{"January 2, 2006 3:04:05 PM", "January 2, 2006 15:04:05", "2 January 2006 15:04:05",
		"January 2, 2006 3:04 PM", "January 2, 2006 15:04", "2 January 2006 15:04", "January 2, 2006", "2 January 2006"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// appleNoteLines makes Notes' lines line breaks: a note is a <div> a line
// (an empty line <div><br></div>), which HTML as a page reads as paragraphs.
func appleNoteLines(doc string) string {
	doc = reANDivOpen.ReplaceAllString(doc, "")
	doc = strings.ReplaceAll(doc, "<br></div>", "</div>")
	doc = strings.ReplaceAll(doc, "<br/></div>", "</div>")
	return reANDivEnd.ReplaceAllString(doc, "<br>")
}

// appleNoteText turns a fragment of HTML into one line of text.
func appleNoteText(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(reANTag.ReplaceAllString(s, " "))), " ")
}

func (AppleNotesReader) Read(_ context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	doc, ok := readkit.ReadText(in.Path, rep)
	if !ok {
		return
	}
	var created, modified time.Time
	for _, tag := range reANMeta.FindAllString(doc, -1) {
		a := appleNoteAttrs(tag)
		name := strings.ToLower(readkit.FirstNonEmpty(a["name"], a["property"]))
		t, ok := appleNoteDate(a["content"])
		if !ok {
			continue
		}
		switch name {
		case "created", "creation-date", "creation_date", "date", "dcterms.created", "article:published_time":
			if created.IsZero() {
				created = t
			}
		case "modified", "last-modified", "updated", "dcterms.modified", "article:modified_time":
			if modified.IsZero() {
				modified = t
			}
		}
	}
	title := ""
	if m := reANTitle.FindStringSubmatch(doc); m != nil {
		title = appleNoteText(m[1])
	}
	if title == "" {
		if m := reANHeading.FindStringSubmatch(doc); m != nil {
			title = appleNoteText(m[1])
		}
	}
	var atts []abi.Attachment
	seen := map[string]bool{}
	for _, tag := range reANMedia.FindAllString(doc, -1) {
		a := appleNoteAttrs(tag)
		ref := readkit.FirstNonEmpty(a["data-filename"], a["src"], a["href"], a["title"])
		name := "embedded image"
		if ref != "" && !strings.HasPrefix(ref, "data:") {
			if u, err := url.PathUnescape(ref); err == nil {
				ref = u
			}
			name = path.Base(strings.ReplaceAll(ref, "\\", "/"))
		}
		if !seen[name] || name == "embedded image" {
			seen[name] = true
			atts = append(atts, abi.Attachment{Name: name})
		}
	}
	// the text, without the date and metadata lines a script put first (before
	// or after the title line)
	lines := strings.Split(readkit.HTMLToText(appleNoteLines(doc)), "\n")
	var kept []string
	i := 0
lead:
	for ; i < len(lines) && i < 12; i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if m := reANDateRow.FindStringSubmatch(l); m != nil {
			if t, ok := appleNoteDate(m[2]); ok {
				if k := strings.ToLower(m[1]); strings.HasPrefix(k, "creat") || k == "date created" {
					if created.IsZero() {
						created = t
					}
				} else if modified.IsZero() {
					modified = t
				}
				continue
			}
		}
		switch {
		case reANMetaRow.MatchString(l):
		case len(kept) == 0 && title != "" && l == title:
			kept = append(kept, l)
		default:
			break lead
		}
	}
	kept = append(kept, lines[i:]...)
	text := strings.TrimSpace(strings.Join(kept, "\n"))
	if title == "" {
		first, _, _ := strings.Cut(text, "\n")
		title = strings.TrimSpace(first)
	}
	if title == "" {
		title = strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path))
	}
	title = clipTitle(title)
	if text == "" && len(atts) == 0 {
		rep.Warn(in.Path, "", "Apple Notes note without text: nothing to ingest")
		return
	}
	when := created
	if when.IsZero() {
		when = modified
	}
	if when.IsZero() || when.Before(plausibleFileTime) {
		var note string
		when, note = docFileTime(in.Path, time.Now())
		rep.Warn(in.Path, "", readkit.FirstNonEmpty(note, "no creation or modification date in the note: dated by the file's time"))
	}
	var tags []string
	if folder := filepath.Base(filepath.Dir(in.Rel)); folder != "." && folder != "/" && folder != "" {
		tags = append(tags, folder) // the Notes folder the exporters mirror
	}
	out.Source(memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: DocSourceID(in.Path), Title: title, Provider: "applenotes", Tags: tags, Origin: in.Path,
		Messages: []memtree.MessageInput{{Ref: in.Rel, Subject: title, TimestampMS: when.UnixMilli(), Text: text + "\n", Attachments: atts}},
	})
}

// clipTitle bounds a title taken from a note's first line.
func clipTitle(s string) string {
	const most = 200
	if r := []rune(s); len(r) > most {
		return strings.TrimSpace(string(r[:most])) + "…"
	}
	return s
}
