package notes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// readDoc writes one document into its own folder (the ingest root), runs the docs
// reader on it and returns the one source it emitted, with the report.
func readDoc(t *testing.T, name, content string, mtime time.Time) (memtree.SourceInput, *readkit.Report) {
	t.Helper()
	dir := readertest.WriteFiles(t, map[string]string{name: content})
	p := filepath.Join(dir, filepath.FromSlash(name))
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	out, rep := readertest.Run(t, DocsReader{}, p)
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
	r := DocsReader{}
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
	if r.Detect("md", true, nil) {
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
		fm, body := SplitFrontMatter("---\ndate: " + c.v + "\n---\nbody\n")
		if !fm.Date.Equal(c.want) || body != "body\n" {
			t.Errorf("date: %s = %s (body %q), want %s", c.v, fm.Date, body, c.want)
		}
	}
	for _, bad := range []string{"2013-02-30", "2013-05-08 25:00", "2013-05-08 23:46:11 2012 -0700", "{{date}}", "soon"} {
		if d, ok := ParseDocDate(bad); ok {
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
	if d, ok := DateFromName("2024_03-15.md"); ok {
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
	dir := readertest.WriteFiles(t, map[string]string{"empty.md": " \n", "meta.md": "---\npublish: true\n---\n\n"})
	for name, want := range map[string]string{"empty.md": "empty file", "meta.md": "no text"} {
		out, rep := readertest.Run(t, DocsReader{}, filepath.Join(dir, name))
		if len(out.Sources) != 0 || rep.Sum.Failures != 0 || rep.Sum.Warnings != 1 || !strings.Contains(rep.Sum.Notes[0].Error(), want) {
			t.Errorf("%s: %d sources, report %+v", name, len(out.Sources), rep.Sum)
		}
	}
}
