package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// TestAppleNotesHTML reads Apple Notes notes as exporters write them: Notes'
// own body HTML (an <h1> title line, <div> lines, a dash list, an image, a
// checklist), the same wrapped in a page with <title> and <meta> dates, and a
// script's note with "Creation Date:" lines in AppleScript's date form; a web
// page without Notes' marks is not read as a note.
func TestAppleNotesHTML(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"iCloud/Work/Budget review.html": `<div><h1>Budget review</h1></div><div>The quarterly budget needs another pass.</div><div><br></div>` +
			`<ul class="Apple-dash-list"><li>travel</li><li>venue</li></ul><div><img src="attachments/floorplan%201.png"></div>` +
			`<ul class="checklist"><li class="checked">ask Dana</li></ul>`,
		"export/Trip.html": `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Lisbon trip</title>` +
			`<meta name="created" content="2025-11-02T09:30:00Z"><meta name="modified" content="2025-12-01T10:00:00Z"></head>` +
			`<body><div style="font-family: -apple-system">Flights booked for April.</div><div><br></div><div>Hotel near Alfama.</div></body></html>`,
		"script/Groceries.html": `<h1>Groceries</h1>` + "\n" + `<p>Creation Date: Monday, January 5, 2026 at 10:00:00 AM</p>` + "\n" +
			`<p>Modification Date: Tuesday, January 6, 2026 at 9:15:00 PM</p>` + "\n" + `<div>milk</div><div>eggs</div><div><br></div>`,
		"site/page.html": `<!DOCTYPE html><html><head><title>Shop</title></head><body><p>Buy now</p></body></html>`,
	})
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	budget := filepath.Join(dir, "iCloud", "Work", "Budget review.html")
	if err := os.Chtimes(budget, old, old); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel, title, text string
		when             time.Time
		atts, tags       []string
		noted            string
	}{
		{"iCloud/Work/Budget review.html", "Budget review", "Budget review\nThe quarterly budget needs another pass.\n\n- travel\n- venue\n\n- ask Dana", old,
			[]string{"floorplan 1.png"}, []string{"Work"}, "dated by the file's time"},
		{"export/Trip.html", "Lisbon trip", "Flights booked for April.\n\nHotel near Alfama.", time.Date(2025, 11, 2, 9, 30, 0, 0, time.UTC), nil, []string{"export"}, ""},
		{"script/Groceries.html", "Groceries", "Groceries\nmilk\neggs", time.Date(2026, 1, 5, 10, 0, 0, 0, time.Local), nil, []string{"script"}, ""},
	} {
		p := filepath.Join(dir, filepath.FromSlash(c.rel))
		if r := detectedBy(t, p); r != "notes.AppleNotesReader" {
			t.Errorf("%s read by %q", c.rel, r)
			continue
		}
		out, rep := &readertest.Output{}, readkit.NewReport(nil)
		notes.AppleNotesReader{}.Read(context.Background(), readkit.Input{Path: p, Root: dir, Rel: c.rel}, out, rep)
		if len(out.Sources) != 1 {
			t.Errorf("%s: %d sources", c.rel, len(out.Sources))
			continue
		}
		src := out.Sources[0]
		m := src.Messages[0]
		if src.Title != c.title || strings.TrimSpace(m.Text) != c.text || m.TimestampMS != c.when.UnixMilli() || strings.Join(src.Tags, ",") != strings.Join(c.tags, ",") {
			t.Errorf("%s: title %q, time %s, tags %v, text:\n%s\nwant title %q, time %s, tags %v, text:\n%s", c.rel, src.Title, time.UnixMilli(m.TimestampMS).UTC(), src.Tags, m.Text,
				c.title, c.when.UTC(), c.tags, c.text)
		}
		var atts []string
		for _, a := range m.Attachments {
			atts = append(atts, a.Name)
		}
		if strings.Join(atts, ",") != strings.Join(c.atts, ",") {
			t.Errorf("%s: attachments %v, want %v", c.rel, atts, c.atts)
		}
		if notes := strings.Join(func() []string {
			var s []string
			for _, n := range rep.Sum.Notes {
				s = append(s, n.Error())
			}
			return s
		}(), "\n"); c.noted != "" && !strings.Contains(notes, c.noted) || c.noted == "" && notes != "" {
			t.Errorf("%s: notes %q, want %q", c.rel, notes, c.noted)
		}
	}
	if r := detectedBy(t, filepath.Join(dir, "site", "page.html")); r != "" {
		t.Errorf("a web page read by %s", r)
	}
}
