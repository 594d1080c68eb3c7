package notes

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// TestEnexContentAsXMLText reads each way exporters write a note's ENML: a CDATA
// section opened inside another (the text after the inner "]]>" is the note's),
// Evernote's own split of a "]]>" in the text, ENML escaped as XML text with
// entities, ENML as child elements; resources are named, never read.
func TestEnexContentAsXMLText(t *testing.T) {
	for _, c := range []struct {
		name, note string
		want       []string
		atts       []string
	}{
		{name: "nested CDATA",
			note: `<note><title>Code</title><content><![CDATA[<en-note><div>before</div><pre><![CDATA[x < y]]></pre><div>after the inner end</div></en-note>]]></content><created>20130730T205204Z</created></note>`,
			want: []string{"before", "x < y", "after the inner end"}},
		{name: "an inner end without an opening",
			note: `<note><title>Odd</title><content><![CDATA[<en-note><div>one ]]> two</div><div>three</div></en-note>]]></content><created>20130730T205204Z</created></note>`,
			want: []string{"one", "two", "three"}},
		{name: "evernote's split of ]]> in the text",
			note: `<note><title>Split</title><content><![CDATA[<en-note><div>a]]]]><![CDATA[>b tail</div></en-note>]]></content><created>20130730T205204Z</created></note>`,
			want: []string{"a]]>b tail"}},
		{name: "escaped ENML with entities",
			note: `<note><title>Caf&#233; &amp; more</title><content>&lt;en-note&gt;&lt;div&gt;fish &amp;amp; chips&amp;nbsp;&lt;/div&gt;&lt;div&gt;&#x263A; smile&lt;/div&gt;&lt;/en-note&gt;</content><created>20130730T205204Z</created></note>`,
			want: []string{"fish & chips", "☺ smile"}},
		{name: "ENML as child elements",
			note: `<note><title>Inline</title><content><en-note><div>inline <b>bold</b> text</div></en-note></content><created>20130730T205204Z</created></note>`,
			want: []string{"inline bold text"}},
		{name: "resources named, data skipped",
			note: `<note><title>Files</title><content><![CDATA[<en-note>see attached</en-note>]]></content><created>20130730T205204Z</created>` +
				`<resource><data encoding="base64">` + strings.Repeat("QUJD", 5000) + `</data><mime>application/pdf</mime><resource-attributes><file-name>Report Q3.pdf</file-name></resource-attributes></resource>` +
				`<resource><data encoding="base64">iVBORw0KGgo=</data><mime>image/png</mime></resource></note>`,
			want: []string{"see attached"}, atts: []string{"Report Q3.pdf application/pdf", " image/png"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := readertest.WriteFile(t, "n.enex", readertest.EnexExport(c.note))
			out, rep := readertest.Run(t, EnexReader{}, p)
			if rep.Sum.Failures != 0 || len(out.Sources) != 1 {
				t.Fatalf("%d sources, errors %v", len(out.Sources), rep.Sum.Errors)
			}
			m := out.Sources[0].Messages[0]
			for _, w := range c.want {
				if !strings.Contains(m.Text, w) {
					t.Errorf("text misses %q: %q", w, m.Text)
				}
			}
			for _, bad := range []string{"CDATA", "]]>" + "<", "en-note", "QUJD"} {
				if strings.Contains(m.Text, bad) {
					t.Errorf("text holds %q: %q", bad, m.Text)
				}
			}
			var atts []string
			for _, a := range m.Attachments {
				atts = append(atts, a.Name+" "+a.ContentType)
			}
			if strings.Join(atts, ",") != strings.Join(c.atts, ",") {
				t.Errorf("attachments %q, want %q", atts, c.atts)
			}
		})
	}
	t.Run("title entities", func(t *testing.T) {
		p := readertest.WriteFile(t, "n.enex", readertest.EnexExport(`<note><title>Caf&#233; &amp; more &unknown;</title><content></content><created>20130730T205204Z</created></note>`))
		out, _ := readertest.Run(t, EnexReader{}, p)
		if len(out.Sources) != 1 || out.Sources[0].Title != "Café & more &unknown;" {
			t.Fatalf("sources %+v", out.Sources)
		}
	})
}

// TestEnexDeclaredEntitiesNotExpanded: an internal DTD's entities (a billion
// laughs) stay as written.
func TestEnexDeclaredEntitiesNotExpanded(t *testing.T) {
	doc := `<?xml version="1.0"?>
<!DOCTYPE en-export [ <!ENTITY a "aaaaaaaaaa"> <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"> ]>
<en-export><note><title>Laughs &b;</title><content><![CDATA[<en-note>&b;</en-note>]]></content><created>20130730T205204Z</created></note></en-export>`
	p := readertest.WriteFile(t, "l.enex", doc)
	out, rep := readertest.Run(t, EnexReader{}, p)
	if len(out.Sources) != 1 || rep.Sum.Failures != 0 {
		t.Fatalf("%d sources, errors %v", len(out.Sources), rep.Sum.Errors)
	}
	if s := out.Sources[0]; s.Title != "Laughs &b;" || strings.Contains(s.Messages[0].Text, "aaaa") {
		t.Errorf("entities expanded: %q %q", s.Title, s.Messages[0].Text)
	}
}

// TestEnexNoteOverBound: a note whose content passes the per-document bound is
// named and not ingested; the notes around it are read. The file is streamed
// (the bound is what is held).
func TestEnexNoteOverBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a file over the per-document bound")
	}
	p := filepath.Join(t.TempDir(), "big.enex")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(readertest.EnexExport(`<note><title>First</title><content><![CDATA[<en-note>first body</en-note>]]></content><created>20130730T205204Z</created></note>`))
	// drop the closing root written by enexTestExport and add the big note
	w.Flush()
	f.Truncate(int64(len(readertest.EnexExport(`<note><title>First</title><content><![CDATA[<en-note>first body</en-note>]]></content><created>20130730T205204Z</created></note>`))) - int64(len("\n</en-export>\n")))
	f.Seek(0, 2)
	w.Reset(f)
	w.WriteString("\n<note><title>Huge</title><content><![CDATA[<en-note><div>")
	line := strings.Repeat("word ", 200) + "\n"
	for n := 0; n <= readkit.MaxFileBytes/len(line)+10; n++ {
		w.WriteString(line)
	}
	w.WriteString("</div></en-note>]]></content><created>20130730T205204Z</created></note>\n")
	w.WriteString(`<note><title>Last</title><content><![CDATA[<en-note>last body</en-note>]]></content><created>20130731T205204Z</created></note></en-export>`)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, rep := readertest.Run(t, EnexReader{}, p)
	var titles []string
	for _, s := range out.Sources {
		titles = append(titles, s.Title)
	}
	if strings.Join(titles, ",") != "First,Last" {
		t.Errorf("notes read %q, want First,Last", titles)
	}
	if rep.Sum.Failures != 1 || !readertest.HasNote(rep, true, "note 2", "larger than") {
		t.Errorf("the big note must be named: %v", rep.Sum.Errors)
	}
}
