package notes

import (
	"testing"
	"time"
)

// FuzzParseNote reads arbitrary text as each note format (TOML and YAML front
// matter, Org, Joplin, Notion, Logseq): it must never panic, and a document it
// keeps is dated at or after 1980.
func FuzzParseNote(f *testing.F) {
	f.Add("+++\ntitle = \"a\"\ntags = [\n\"x\",\n]\n[t]\n+++\nbody\n", "a.md")
	f.Add("---\ntitle: |-\n  x\n  y\n---\nb\n", "b.md")
	f.Add("#+TITLE: t\n#+DATE: <2022-07-08 Fri 09:30>\n* H :tag:\n:PROPERTIES:\n:CREATED: [2020-01-01]\n:END:\n", "c.org")
	f.Add("T\n\nbody\n\nid: 3edb302d6c6742df9e86b9c1c6ea3ec8\ncreated_time: 1970-01-01T00:00:00.000Z\ntype_: 1", "d.md")
	f.Add("# N\n\nCreated: January 2, 2021 3:04 PM\n\nx\n", "N 0123456789abcdef0123456789abcdef.md")
	f.Add("- title:: x\n  alias:: y\n- z\n", "e.md")
	mtime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text, name string) {
		src, err := parseDocumentAt(text, "notes/"+name, mtime, time.Time{})
		if err != nil {
			return
		}
		if ts := src.Messages[0].TimestampMS; ts < plausibleFileTime.UnixMilli() {
			t.Fatalf("dated %v", time.UnixMilli(ts).UTC())
		}
	})
}
