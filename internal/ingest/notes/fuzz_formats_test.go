package notes

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// FuzzEnexScan feeds arbitrary bytes to the streaming .enex scanner: it must
// never panic, never keep more text than the input holds, and always end.
func FuzzEnexScan(f *testing.F) {
	f.Add([]byte(readertest.EnexExport(`<note><title>T &amp; &#233;</title><content><![CDATA[<en-note>a<![CDATA[b]]>c]]></content><created>20130730T205204Z</created></note>`)))
	f.Add([]byte(`<en-export><note><content><![CDATA[x]]]]><![CDATA[>y]]></content><resource><data>QUJD</data><file-name>a.pdf</file-name></resource></note>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "b">]><en-export><note><title>&a;&#x0;&#99999999;</title><content>&lt;p&gt;</content></note></en-export>`))
	f.Add([]byte(`<en-export><note><content><![CDATA[unterminated`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := &enexScan{R: bufio.NewReaderSize(bytes.NewReader(raw), 16)}
		kept := 0
		for {
			tag, ok := s.NextTag()
			if !ok {
				break
			}
			if !tag.End && tag.Name == "note" && !tag.SelfClosing {
				n := s.Note(context.Background())
				kept += len(n.Title) + len(n.Content) + len(n.Author)
			}
		}
		// entities may grow (&lt; is 4 bytes for 1, a numeric reference up to 10
		// for 4): never beyond the input
		if kept > len(raw) {
			t.Fatalf("kept %d bytes of text from %d input bytes", kept, len(raw))
		}
	})
}

// FuzzVCard feeds arbitrary text to the vCard reader: it must never panic, and
// every contact it keeps has a name, an address or a number, in valid UTF-8.
func FuzzVCard(f *testing.F) {
	f.Add("BEGIN:VCARD\nVERSION:3.0\nFN:A\\, B\nN:B;A;;;\nEMAIL;type=INTERNET:a@x.example\nTEL:+1 555\nEND:VCARD\n")
	f.Add("BEGIN:VCARD\nN;ENCODING=QUOTED-PRINTABLE;CHARSET=ISO-8859-1:M=FC=\n=FCller;J\nEND:VCARD")
	f.Add("BEGIN:VCARD\nitem1.X-SOCIALPROFILE;x-user=\"a:b\":http://x/y\nBEGIN:VCARD\nEND:VCARD\n")
	f.Fuzz(func(t *testing.T, text string) {
		rep := readkit.NewReport(nil)
		for _, c := range readVCards(text, "f.vcf", rep) {
			if c.Name == "" && c.Given == "" && c.Family == "" && len(c.Emails) == 0 && len(c.Phones) == 0 && len(c.Handles) == 0 {
				t.Fatalf("empty contact kept: %+v", c)
			}
			for _, s := range append(append([]string{c.Name, c.Given, c.Family}, c.Emails...), c.Nicknames...) {
				if !utf8.ValidString(s) && utf8.ValidString(text) && !strings.Contains(strings.ToUpper(text), "CHARSET") && !strings.Contains(strings.ToUpper(text), "QUOTED") {
					t.Fatalf("invalid UTF-8 from valid input: %q", s)
				}
			}
		}
	})
}
