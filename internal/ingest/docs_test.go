package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// readDoc writes one document into its own folder (the ingest root), runs the docs
// reader on it and returns the one source it emitted, with the report.
func readDoc(t *testing.T, name, content string, mtime time.Time) (memtree.SourceInput, *readkit.Report) {
	t.Helper()
	dir := writeFiles(t, map[string]string{name: content})
	p := filepath.Join(dir, filepath.FromSlash(name))
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	out, rep := readertest.Run(t, notes.DocsReader{}, p)
	if len(out.Sources) != 1 || len(out.Mails) != 0 {
		t.Fatalf("%s: %d sources, %d mails, want 1 source (errors %v, notes %v)", name, len(out.Sources), len(out.Mails), rep.Sum.Errors, rep.Sum.Notes)
	}
	src := out.Sources[0]
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "doc:" + filepath.ToSlash(abs); src.SourceID != want {
		t.Errorf("%s: source id %q, want %q", name, src.SourceID, want)
	}
	if len(src.Messages) != 1 || src.Messages[0].Ref != filepath.Base(name) || src.Kind != memtree.KindDocument || src.Origin != p {
		t.Errorf("%s: source = %+v, want one message with ref %q", name, src, filepath.Base(name))
	}
	return src, rep
}

// checkDoc asserts a document's title, tags, time and body.
func checkDoc(t *testing.T, src memtree.SourceInput, title string, tags []string, ts time.Time, body string) {
	t.Helper()
	m := src.Messages[0]
	if src.Title != title || m.Subject != title {
		t.Errorf("%s: title %q (subject %q), want %q", m.Ref, src.Title, m.Subject, title)
	}
	if !slices.Equal(src.Tags, tags) {
		t.Errorf("%s: tags %q, want %q", m.Ref, src.Tags, tags)
	}
	if m.TimestampMS != ts.UnixMilli() {
		t.Errorf("%s: time %s, want %s", m.Ref, time.UnixMilli(m.TimestampMS).UTC(), ts.UTC())
	}
	if m.Text != body {
		t.Errorf("%s: body %q, want %q", m.Ref, m.Text, body)
	}
}

func TestDocsReaderDetect(t *testing.T) {
	r := notes.DocsReader{}
	for _, p := range []string{"a.md", "b.MARKDOWN", "c.mdown", "d.mkd", "e.txt", "f.text"} {
		if !r.Detect(p, false, nil) {
			t.Errorf("%s not detected", p)
		}
	}
	for _, p := range []string{"a.json", "b.eml", "c.mbox", "d", "e.md.png"} {
		if r.Detect(p, false, nil) {
			t.Errorf("%s detected", p)
		}
	}
	if r.Detect("notes.md", true, nil) {
		t.Errorf("a folder is not a document")
	}
	if r.Kind() != KindDocs {
		t.Errorf("kind %q", r.Kind())
	}
}

// TestDocJekyllPost: front-matter date with time and zone keeps its instant.
func TestDocJekyllPost(t *testing.T) {
	src, rep := readDoc(t, "2013-05-08-release.markdown",
		"---\nlayout: news_item\ntitle: \"Release 1.0.1\"\ndate: \"2013-05-08 23:46:11 +0200\"\nauthor: someone\ncategories: [release]\n---\n\nA patch release.\n\nIt fixes two bugs.\n", time.Time{})
	checkDoc(t, src, "Release 1.0.1", []string{"release"}, time.Date(2013, 5, 8, 21, 46, 11, 0, time.UTC), "A patch release.\n\nIt fixes two bugs.\n")
	if src.Provider != "markdown" || rep.Sum.Warnings != 0 || rep.Sum.Failures != 0 {
		t.Errorf("provider %q, report %+v", src.Provider, rep.Sum)
	}
}

// TestDocDates: each front-matter date form, quoted or not.
func TestDocDates(t *testing.T) {
	cases := []struct {
		v    string
		want time.Time
	}{
		{"2013-05-08 23:46:11 +0200", time.Date(2013, 5, 8, 21, 46, 11, 0, time.UTC)},
		{"2013-05-08 23:46:11 -0700", time.Date(2013, 5, 9, 6, 46, 11, 0, time.UTC)},
		{"\"2013-05-08 23:46:11 -0700\"", time.Date(2013, 5, 9, 6, 46, 11, 0, time.UTC)},
		{"2013-05-08T23:46:11+02:00", time.Date(2013, 5, 8, 21, 46, 11, 0, time.UTC)},
		{"'2013-05-08T23:46:11+02:00'", time.Date(2013, 5, 8, 21, 46, 11, 0, time.UTC)},
		{"2013-05-08T23:46:11.250Z", time.Date(2013, 5, 8, 23, 46, 11, 250e6, time.UTC)},
		{"2013-05-08 23:46", time.Date(2013, 5, 8, 23, 46, 0, 0, time.UTC)},
		{"2013-05-08 23:46:11", time.Date(2013, 5, 8, 23, 46, 11, 0, time.UTC)},
		{"2013-05-08 23:46:11 UTC", time.Date(2013, 5, 8, 23, 46, 11, 0, time.UTC)},
		{"2013-05-08", time.Date(2013, 5, 8, 0, 0, 0, 0, time.UTC)},
		{"2023-01-29 18:30:22 2023 -0800", time.Date(2023, 1, 30, 2, 30, 22, 0, time.UTC)},
		{"2013/05/08", time.Date(2013, 5, 8, 0, 0, 0, 0, time.UTC)},
		{"May 8, 2013", time.Date(2013, 5, 8, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		fm, body := notes.SplitFrontMatter("---\ndate: " + c.v + "\n---\nbody\n")
		if !fm.Date.Equal(c.want) || body != "body\n" {
			t.Errorf("date: %s = %s (body %q), want %s", c.v, fm.Date, body, c.want)
		}
	}
	for _, bad := range []string{"2013-02-30", "2013-05-08 25:00", "2013-05-08 23:46:11 2012 -0700", "{{date}}", "soon"} {
		if d, ok := notes.ParseDocDate(bad); ok {
			t.Errorf("%q parsed as %s", bad, d)
		}
	}
}

// TestDocObsidianNote: front-matter tag list and aliases, the title from the first
// heading, wikilinks and tags left in the body (the store makes them entities).
func TestDocObsidianNote(t *testing.T) {
	mtime := time.Date(2024, 2, 1, 9, 30, 0, 0, time.UTC)
	src, _ := readDoc(t, "Linking/Internal links.md",
		"---\naliases:\n  - How to/Link\ntags: \n  - recipe\n  - cooking\npublish: true\n---\n\n# Internal links\n\nLink to [[Settings#Files and links|Files and links]] and #project/alpha.\n", mtime)
	checkDoc(t, src, "Internal links", []string{"recipe", "cooking"}, mtime,
		"# Internal links\n\nLink to [[Settings#Files and links|Files and links]] and #project/alpha.\n")
}

// TestDocLogseqPage: the leading property block sets title, tags and date and
// leaves the body; property lines further down stay.
func TestDocLogseqPage(t *testing.T) {
	src, rep := readDoc(t, "pages/garden.md",
		"title:: Garden plans\ntags:: [[home improvement]], #outdoor, seeds\nalias:: yard\ncreated:: [[Mar 15th, 2024]]\n\n- Plant tomatoes\n  id:: 65f3c0aa-1111\n- Ask about [[Soil]]\n", time.Time{})
	checkDoc(t, src, "Garden plans", []string{"home improvement", "outdoor", "seeds"}, time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC),
		"- Plant tomatoes\n  id:: 65f3c0aa-1111\n- Ask about [[Soil]]\n")
	if rep.Sum.Warnings != 0 {
		t.Errorf("notes: %v", rep.Sum.Notes)
	}
	// A property-looking line that does not start the page is body text.
	src, _ = readDoc(t, "pages/later.md", "Intro line\nstatus:: open\n", time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC))
	checkDoc(t, src, "later", nil, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), "Intro line\nstatus:: open\n")
	// date:: wins over created::, and a property block may follow front matter.
	src, _ = readDoc(t, "pages/both.md", "---\ntags: [a]\n---\ncreated:: 2024-01-01\ndate:: 2024-02-02 10:00 +0100\ntags:: b\nBody.\n", time.Time{})
	checkDoc(t, src, "both", []string{"a", "b"}, time.Date(2024, 2, 2, 9, 0, 0, 0, time.UTC), "Body.\n")
}

// TestDocLogseqJournal: a journal's file name is its date.
func TestDocLogseqJournal(t *testing.T) {
	src, _ := readDoc(t, "journals/2024_03_15.md", "- Met [[Ana]] about #garden\n", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	checkDoc(t, src, "2024_03_15", nil, time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC), "- Met [[Ana]] about #garden\n")
	// mixed separators are no date
	if d, ok := notes.DateFromName("2024_03-15.md"); ok {
		t.Errorf("2024_03-15 parsed as %s", d)
	}
}

// TestDocFileTime: without a date the file time is the document's time; an
// archive's epoch placeholder is not, and is said so.
func TestDocFileTime(t *testing.T) {
	mtime := time.Date(2021, 6, 7, 8, 9, 10, 0, time.UTC)
	src, rep := readDoc(t, "plain.txt", "just text\n", mtime)
	checkDoc(t, src, "plain", nil, mtime, "just text\n")
	if src.Provider != "text" || rep.Sum.Warnings != 0 {
		t.Errorf("provider %q, notes %v", src.Provider, rep.Sum.Notes)
	}
	before := time.Now()
	src, rep = readDoc(t, "old.md", "# Old\n\ntext\n", time.Unix(1, 0))
	ts := time.UnixMilli(src.Messages[0].TimestampMS)
	if ts.Before(before.Add(-time.Second)) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("epoch file time: document dated %s, want the ingest time", ts.UTC())
	}
	if rep.Sum.Warnings != 1 || !strings.Contains(rep.Sum.Notes[0].Error(), "1970-01-01") {
		t.Errorf("epoch file time must be noted: %v", rep.Sum.Notes)
	}
}

// TestDocEmpty: an empty file and a front matter without text are notes, not
// sources or failures.
func TestDocEmpty(t *testing.T) {
	dir := writeFiles(t, map[string]string{"empty.md": " \n", "meta.md": "---\npublish: true\n---\n\n"})
	for name, want := range map[string]string{"empty.md": "empty file", "meta.md": "no text"} {
		out, rep := readertest.Run(t, notes.DocsReader{}, filepath.Join(dir, name))
		if len(out.Sources) != 0 || rep.Sum.Failures != 0 || rep.Sum.Warnings != 1 || !strings.Contains(rep.Sum.Notes[0].Error(), want) {
			t.Errorf("%s: %d sources, report %+v", name, len(out.Sources), rep.Sum)
		}
	}
}

// TestDocTwoRootsOneStore: p1/todo.md and p2/todo.md are two documents in the
// store, each citing its own path relative to its root, and reading both roots
// again changes nothing.
func TestDocTwoRootsOneStore(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"p1/todo.md": "# Todo one\n\nBuy #paint for [[Kitchen]].\n",
		"p2/todo.md": "# Todo two\n\nCall the plumber.\n",
	})
	st := openStore(t)
	ctx := context.Background()
	ingestRoots := func() (ids []string, stats memtree.IngestStats) {
		for _, root := range []string{"p1", "p2"} {
			out, rep := readertest.Run(t, notes.DocsReader{}, filepath.Join(dir, root, "todo.md"))
			if rep.Sum.Failures+rep.Sum.Warnings != 0 || len(out.Sources) != 1 {
				t.Fatalf("%s: %d sources, report %+v", root, len(out.Sources), rep.Sum)
			}
			s, err := st.Ingest(ctx, out.Sources[0])
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, out.Sources[0].SourceID)
			stats.NewChunks += s.NewChunks
			stats.UnchangedChunks += s.UnchangedChunks
			stats.RemovedChunks += s.RemovedChunks
		}
		return ids, stats
	}
	ids, first := ingestRoots()
	if ids[0] == ids[1] {
		t.Fatalf("both roots gave source id %q", ids[0])
	}
	for i, want := range []string{"Todo one", "Todo two"} {
		cs := sourceChunks(t, st, ids[i])
		if len(cs) != 1 || cs[0].SourceRef != "todo.md" || !strings.Contains(cs[0].Text, want) {
			t.Fatalf("source %s: chunks %+v", ids[i], cs)
		}
		if i == 0 && (!slices.Contains(cs[0].Entities, "topic:kitchen") || !slices.Contains(cs[0].Entities, "hashtag:paint")) {
			t.Errorf("wikilink and tag entities: %v", cs[0].Entities)
		}
	}
	ids2, again := ingestRoots()
	if !slices.Equal(ids, ids2) || first.NewChunks != 2 || again.NewChunks != 0 || again.RemovedChunks != 0 || again.UnchangedChunks != 2 {
		t.Errorf("re-reading the roots: ids %v then %v, first %+v, again %+v", ids, ids2, first, again)
	}
}

// TestUnknownChatShapeNamed: a text file whose lines share a timestamp-like
// prefix that no chat reader knows is stored as one document with a warning
// naming the shape; prose is not warned about.
func TestUnknownChatShapeNamed(t *testing.T) {
	var log strings.Builder
	for i := range 8 {
		fmt.Fprintf(&log, "%02d.%02d.2013 @ 19h%02d | Ann: message %d\n", i+1, 8, i, i)
	}
	dir := writeFiles(t, map[string]string{
		"chat.txt":  log.String(),
		"prose.txt": "A plain note.\nIt has lines: some with colons.\nNo timestamps at all.\n1. a list\n2. of things\n",
	})
	c, sum := runOn(t, Options{}, dir)
	if len(c.srcs) != 2 {
		t.Fatalf("%d sources", len(c.srcs))
	}
	var warned []string
	for _, n := range sum.Notes {
		if strings.Contains(n.Err.Error(), "start alike") {
			warned = append(warned, filepath.Base(n.Path)+": "+n.Err.Error())
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "chat.txt: 8 of the first 8 lines") || !strings.Contains(warned[0], `"99.99.9999 @ 99a99 | a: "`) {
		t.Errorf("warnings: %v", warned)
	}
}
