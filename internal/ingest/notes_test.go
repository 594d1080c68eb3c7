package ingest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

func day(y int, m time.Month, d, h, mi int) int64 {
	return time.Date(y, m, d, h, mi, 0, 0, time.UTC).UnixMilli()
}

// Each note format's title and date come from the export itself, and its
// metadata is never indexed as text.
func TestNoteFormats(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		// Hugo: TOML front matter, a multi-line array.
		"site/content/posts/hello.md": "+++\ntitle = \"Hello, \\\"TOML\\\"\"\ndate = 2021-03-04T10:20:30+02:00\ndraft = false\ntags = [\n  \"go\",\n  'notes',\n]\n[params]\ntitle = \"not this\"\n+++\n\nThe post body.\n",
		// Zola: taxonomies table, a bare date.
		"site/content/zola.md": "+++\ntitle = 'Zola page' # a comment\ndate = 2020-01-02\n\n[taxonomies]\ntags = [\"rust\", \"ssg\"]\n+++\nZola body\n",
		// YAML block-scalar titles.
		"notes/block.md":  "---\ntitle: |-\n  A title written\n  as a block\ndate: 2019-05-06\n---\nblock body\n",
		"notes/folded.md": "---\ntitle: >\n  Folded title\ntags:\n  - a\n---\nfolded body\n",
		// Org-mode.
		"org/plan.org":     "#+TITLE: Project plan\n#+DATE: <2022-07-08 Fri 09:30>\n#+FILETAGS: :work:plan:\n#+OPTIONS: toc:nil\n\n* TODO Write the spec :urgent:\n  SCHEDULED: <2022-07-10 Sun>\n  :PROPERTIES:\n  :ID: 1234\n  :END:\n  The spec covers ingest.\n#+BEGIN_SRC go\nfmt.Println(1)\n#+END_SRC\n",
		"org/untitled.org": "* First heading\nSome text [2023-01-02 Mon].\n",
		// Logseq: plain and first-block page properties.
		"logseq/pages/a.md": "title:: Logseq Page A\ntags:: [[x]], y\n\n- a block\n",
		"logseq/pages/b.md": "- title:: Logseq Page B\n  alias:: bee\n- a block of b\n",
		// Notion: "Created" under the title, a 32-hex id in the name.
		"notion/Meeting notes 0123456789abcdef0123456789abcdef.md": "# Meeting notes\n\nCreated: January 2, 2021 3:04 PM\nTags: Work, Sync\n\nWe met.\n",
		"notion/plain.md": "# Plain\n\nNote: this is no property.\n",
		// Joplin raw export: a note, a notebook, a note-tag link.
		"joplin/3edb302d6c6742df9e86b9c1c6ea3ec8.md": "Groceries\n\nMilk and bread.\n\nid: 3edb302d6c6742df9e86b9c1c6ea3ec8\nparent_id: 994f8d784b2b3fc2cd0e00000000aaaa\ncreated_time: 2020-04-12T10:22:33.123Z\nupdated_time: 2020-04-13T08:00:00.000Z\nis_conflict: 0\nlatitude: 0.00000000\nauthor: Jo\nsource_url: \nis_todo: 0\nuser_created_time: 2020-04-12T10:22:33.123Z\nmarkup_language: 1\ntype_: 1",
		"joplin/994f8d784b2b3fc2cd0e00000000aaaa.md": "Personal\n\nid: 994f8d784b2b3fc2cd0e00000000aaaa\ncreated_time: 2020-04-01T00:00:00.000Z\nupdated_time: 2020-04-01T00:00:00.000Z\nparent_id: \ntype_: 2",
		"joplin/8449599a40df4146952119dd78ac9da5.md": "id: 8449599a40df4146952119dd78ac9da5\nnote_id: 3edb302d6c6742df9e86b9c1c6ea3ec8\ntag_id: 9836727eda734191b4e281770565e494\ncreated_time: 2020-04-12T10:22:34.000Z\ntype_: 6",
	})
	c, sum := runOn(t, Options{}, dir)
	doc := func(rel string) *struct {
		title, text, author string
		ts                  int64
		tags                []string
	} {
		s := c.byID(notes.DocSourceID(filepath.Join(dir, filepath.FromSlash(rel))))
		if s == nil {
			t.Errorf("%s: not stored", rel)
			return nil
		}
		m := s.Messages[0]
		return &struct {
			title, text, author string
			ts                  int64
			tags                []string
		}{s.Title, m.Text, m.Author, m.TimestampMS, s.Tags}
	}
	cases := []struct {
		rel, title string
		ts         int64
		tags       string
		notIn      []string
	}{
		{"site/content/posts/hello.md", `Hello, "TOML"`, day(2021, 3, 4, 8, 20) + 30000, "go,notes", []string{"+++", "draft"}},
		{"site/content/zola.md", "Zola page", day(2020, 1, 2, 0, 0), "rust,ssg", []string{"taxonomies"}},
		{"notes/block.md", "A title written as a block", day(2019, 5, 6, 0, 0), "", []string{"|-"}},
		{"notes/folded.md", "Folded title", -1, "a", nil},
		{"org/plan.org", "Project plan", day(2022, 7, 8, 9, 30), "work,plan", []string{"#+", ":PROPERTIES:", "TODO Write the spec :urgent:", "<2022"}},
		{"org/untitled.org", "First heading", -1, "", []string{"* First"}},
		{"logseq/pages/a.md", "Logseq Page A", -1, "x,y", []string{"title::"}},
		{"logseq/pages/b.md", "Logseq Page B", -1, "", []string{"title::", "alias::"}},
		{"notion/Meeting notes 0123456789abcdef0123456789abcdef.md", "Meeting notes", day(2021, 1, 2, 15, 4), "Work,Sync", nil},
		{"joplin/3edb302d6c6742df9e86b9c1c6ea3ec8.md", "Groceries", day(2020, 4, 12, 10, 22) + 33123, "", []string{"id:", "created_time", "type_", "parent_id", "Groceries"}},
	}
	for _, k := range cases {
		d := doc(k.rel)
		if d == nil {
			continue
		}
		if d.title != k.title {
			t.Errorf("%s: title %q, want %q", k.rel, d.title, k.title)
		}
		if k.ts >= 0 && d.ts != k.ts {
			t.Errorf("%s: time %s, want %s", k.rel, time.UnixMilli(d.ts).UTC(), time.UnixMilli(k.ts).UTC())
		}
		if got := strings.Join(d.tags, ","); got != k.tags {
			t.Errorf("%s: tags %q, want %q", k.rel, got, k.tags)
		}
		for _, bad := range k.notIn {
			if strings.Contains(d.text, bad) {
				t.Errorf("%s: text holds %q: %q", k.rel, bad, d.text)
			}
		}
	}
	if d := doc("org/plan.org"); d != nil && (!strings.Contains(d.text, "Write the spec") || !strings.Contains(d.text, "fmt.Println(1)") || !strings.Contains(d.text, "2022-07-10")) {
		t.Errorf("org text: %q", d.text)
	}
	if d := doc("joplin/3edb302d6c6742df9e86b9c1c6ea3ec8.md"); d != nil && (d.author != "Jo" || strings.TrimSpace(d.text) != "Milk and bread.") {
		t.Errorf("joplin: author %q text %q", d.author, d.text)
	}
	if d := doc("notion/plain.md"); d != nil && d.title != "Plain" {
		t.Errorf("plain: %q", d.title)
	}
	if sum.SkippedBy[notes.ReasonJoplinItem] != 2 {
		t.Errorf("Joplin notebook and note-tag records must be named as skipped: %v", sum.SkippedBy)
	}
	if sum.Failures != 0 {
		t.Errorf("errors: %v", sum.Errors)
	}
}

// An Evernote export becomes one document per note: title, created time, tags and
// author from the note, ENML turned to text, resources not read.
func TestEvernoteEnex(t *testing.T) {
	enex := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE en-export SYSTEM "http://xml.evernote.com/pub/evernote-export3.dtd">
<en-export export-date="20230101T120000Z" application="Evernote" version="10.0">
  <note>
    <title>Trip &amp; plans</title>
    <created>20130730T205204Z</created>
    <updated>20130731T080000Z</updated>
    <tag>travel</tag>
    <tag>2013</tag>
    <note-attributes><author>Eve</author></note-attributes>
    <content><![CDATA[<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE en-note SYSTEM "http://xml.evernote.com/pub/enml2.dtd">
<en-note><div>Pack the <b>tent</b>.</div><blockquote>Quote I wrote</blockquote><div><en-todo checked="true"/>book train</div><en-media type="image/png" hash="abc"/></en-note>]]></content>
    <resource><data encoding="base64">iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk</data><mime>image/png</mime></resource>
  </note>
  <note>
    <title>Second</title>
    <content><![CDATA[<en-note>second body</en-note>]]></content>
    <created>20200102T030405Z</created>
  </note>
</en-export>
`
	dir := readertest.WriteFiles(t, map[string]string{"Export.enex": enex})
	c, sum := runOn(t, Options{}, dir)
	if len(c.srcs) != 2 || sum.Failures != 0 {
		t.Fatalf("%d sources, errors %v", len(c.srcs), sum.Errors)
	}
	s := c.byID(notes.DocSourceID(filepath.Join(dir, "Export.enex")) + "#1")
	if s == nil {
		t.Fatalf("note 1 missing: %v", c.srcs[0].SourceID)
	}
	m := s.Messages[0]
	if s.Title != "Trip & plans" || m.Author != "Eve" || m.TimestampMS != time.Date(2013, 7, 30, 20, 52, 4, 0, time.UTC).UnixMilli() || strings.Join(s.Tags, ",") != "travel,2013" {
		t.Errorf("note 1: %q %q %d %v", s.Title, m.Author, m.TimestampMS, s.Tags)
	}
	for _, want := range []string{"Pack the tent.", "Quote I wrote", "[x] book train"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("note text misses %q: %q", want, m.Text)
		}
	}
	for _, bad := range []string{"<", "iVBOR", "en-note", "DOCTYPE"} {
		if strings.Contains(m.Text, bad) {
			t.Errorf("note text holds %q: %q", bad, m.Text)
		}
	}
}

// A Bear backup (.bear2bk, a zip of TextBundles) is read in place: each note
// dated by its info.json, which is named as read with its note.
func TestBearBackup(t *testing.T) {
	dir := t.TempDir()
	info := `{"creatorIdentifier":"net.shinyfrog.bear","net.shinyfrog.bear":{"creationDate":"2024-06-14T16:24:38Z","modificationDate":"2024-06-15T10:00:00Z","trashed":0},"type":"net.daringfireball.markdown","version":2}`
	writeZip(t, filepath.Join(dir, "Bear.bear2bk"), map[string]string{
		"Bear/Groceries.textbundle/text.markdown":    "# Groceries\n\nMilk #shopping\n",
		"Bear/Groceries.textbundle/info.json":        info,
		"Bear/Groceries.textbundle/assets/photo.jpg": "\xff\xd8\xff\xe0",
		"tags.json": `[]`,
	})
	c, sum := runOn(t, Options{}, dir)
	s := c.byID(notes.DocSourceID(filepath.Join(dir, "Bear.bear2bk", "Bear", "Groceries.textbundle", "text.markdown")))
	if s == nil || s.Title != "Groceries" || s.Messages[0].TimestampMS != time.Date(2024, 6, 14, 16, 24, 38, 0, time.UTC).UnixMilli() {
		t.Fatalf("bear note = %+v (errors %v)", s, sum.Errors)
	}
	if sum.SkippedBy[readkit.ReasonTextBundleInfo] != 1 {
		t.Errorf("info.json not named: %v", sum.SkippedBy)
	}
}

// Org titles come from #+TITLE, else the first heading, else the file name —
// never from a comment or a line of text; Logseq pages from their title::
// property however the property block is written (CRLF, a byte-order mark,
// tab-indented under a first "- " block, no space after "::").
func TestDocTitlesFromTheFormat(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"comment-only.org":  "# -*- mode: org -*-\n# a comment sentence.\n\nSome body sentence. More.\n",
		"comment-head.org":  "# comment\nText before.\n** TODO Real heading :work:\ntext\n",
		"titled.org":        "#+title: Set Title\n* Heading\n",
		"nospace.org":       "#+TITLE:No Space\n\nBody sentence.\n",
		"logseq-crlf.md":    "alias:: X\r\ntitle:: CRLF Page\r\n\r\n- body\r\n",
		"logseq-tab.md":     "- icon:: x\n\ttitle:: Tab Page\n- body\n",
		"logseq-nospace.md": "title::NoSpace Page\n- body\n",
		"logseq-bom.md":     "\ufefftitle:: Bom Page\n- body\n",
	})
	c, sum := runOn(t, Options{}, dir)
	want := map[string]string{
		"comment-only.org": "comment-only", "comment-head.org": "TODO Real heading", "titled.org": "Set Title", "nospace.org": "No Space",
		"logseq-crlf.md": "CRLF Page", "logseq-tab.md": "Tab Page", "logseq-nospace.md": "NoSpace Page", "logseq-bom.md": "Bom Page",
	}
	for name, title := range want {
		s := c.byID(notes.DocSourceID(filepath.Join(dir, name)))
		if s == nil {
			t.Errorf("%s not read: %v", name, sum.Errors)
			continue
		}
		if s.Title != title {
			t.Errorf("%s titled %q, want %q", name, s.Title, title)
		}
		if strings.Contains(s.Messages[0].Text, "comment") {
			t.Errorf("%s keeps an Org comment: %q", name, s.Messages[0].Text)
		}
	}
}
