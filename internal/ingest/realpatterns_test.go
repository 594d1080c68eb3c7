package ingest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writePatternFolders writes, for TestRealData, folders that reproduce the
// layouts of the exports no file in ../shared/realdata shows, written from the
// formats' public descriptions: a Maildir copied with only cur/ and its standard
// file names, an MH folder, Apple Mail's .emlx and .partial.emlx beside their
// Attachments, mail files of any name; and notes from Hugo and Zola (TOML front
// matter), YAML block-scalar titles, Org-mode, Joplin's raw export, Logseq,
// Notion and Evernote. The independent readings of realdata_test.go count them
// as they count the real files.
func writePatternFolders(t *testing.T) []struct{ dir, kind string } {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	people := []string{"Ann Lee <ann@a.example>", "Bob Roy <bob@b.example>", "Cy Oduya <cy@c.example>", "\"Dee, Jr.\" <dee@d.example>"}
	msg := func(i int, date bool) string {
		at := time.Date(2008, 9, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 37 * time.Hour)
		s := fmt.Sprintf("Return-Path: <x@a.example>\nFrom: %s\nTo: team@a.example\nSubject: pattern message %d\nMessage-ID: <pattern-%d@a.example>\n", people[i%len(people)], i, i)
		if date {
			s += "Date: " + at.Format(time.RFC1123Z) + "\n"
		}
		return s + fmt.Sprintf("Content-Type: text/plain; charset=utf-8\n\nThe plan for item %d is settled; we ship it on the %s.\n", i, at.Format("2 January"))
	}
	n := 0
	// Maildir with only cur/ (and a Maildir++ folder), dotted and flagged names.
	for i := 0; i < 12; i++ {
		n++
		names := []string{"%d.%d_%d.mindcrime", "%d_%d.%d.cthulhu!2,S", "%d.M%dP%d.host:2,RS"}
		name := fmt.Sprintf(names[i%3], 1220863087+i*1000, 12663+i, 23+i)
		sub := "cur"
		if i%4 == 3 {
			sub = ".Sent/cur"
		}
		write("patterns/mail/Maildir/"+sub+"/"+name, msg(n, i%5 != 4))
	}
	// A notmuch-style tree: mail at a Maildir's top, in plain subfolders and in
	// sub-Maildirs, named "NN:2,".
	for i, rel := range []string{"05:2,", "bar/baz/24:2,", "bar/baz/cur/25:2,", "bar/cur/19:2,", "foo/06:2,", "foo/new/10:2,"} {
		n++
		write("patterns/mail/notmuch/cur/"+fmt.Sprintf("%02d:2,", 30+i), msg(n, true))
		n++
		write("patterns/mail/notmuch/"+rel, msg(n, true))
	}
	// An MH folder: numbered files and .mh_sequences.
	for i := 1; i <= 6; i++ {
		n++
		write(fmt.Sprintf("patterns/mail/inbox-mh/%d", i), msg(n, true))
	}
	write("patterns/mail/inbox-mh/.mh_sequences", "unseen: 4-6\n")
	// Apple Mail: .emlx and .partial.emlx, an attachment beside it.
	plist := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n\t<key>date-received</key>\n\t<integer>%d</integer>\n\t<key>flags</key>\n\t<integer>8590195713</integer>\n</dict>\n</plist>\n"
	for i := 0; i < 6; i++ {
		n++
		m := msg(n, i != 2)
		name := fmt.Sprintf("%d.emlx", 500+i)
		if i%2 == 1 {
			name = fmt.Sprintf("%d.partial.emlx", 500+i)
			write(fmt.Sprintf("patterns/mail/Mail/V10/INBOX.mbox/Data/5/Attachments/%d/2/notes.txt", 500+i), "attachment text, part of its message\n")
		}
		write("patterns/mail/Mail/V10/INBOX.mbox/Data/5/Messages/"+name, fmt.Sprintf("%d\n%s", len(m), m)+fmt.Sprintf(plist, 1220863087+i*3600))
	}
	// Mail files of any name.
	for i, name := range []string{"message", "saved mail.txt", "2019-01-01 note.mail", "reply"} {
		n++
		write("patterns/mail/loose/"+name, msg(n, i != 1))
		_ = i
	}

	// Notes.
	for i := 0; i < 8; i++ {
		write(fmt.Sprintf("patterns/notes/hugo/content/posts/post-%d.md", i), fmt.Sprintf("+++\ntitle = \"Post number %d: \\\"quoted\\\"\"\ndate = 2021-03-%02dT10:20:30+02:00\ntags = [\n  \"go\",\n  \"notes\",\n]\n[params]\ntitle = \"not the title\"\n+++\n\nBody of post %d.\n", i, i+1, i))
	}
	for i := 0; i < 4; i++ {
		write(fmt.Sprintf("patterns/notes/zola/content/page-%d.md", i), fmt.Sprintf("+++\ntitle = 'Zola page %d'\ndate = 2020-01-%02d\n\n[taxonomies]\ntags = [\"rust\"]\n+++\nZola body %d\n", i, i+2, i))
	}
	for i := 0; i < 4; i++ {
		write(fmt.Sprintf("patterns/notes/yaml/block-%d.md", i), fmt.Sprintf("---\ntitle: |-\n  A block title\n  number %d\ndate: 2019-05-%02d\n---\nBlock body %d\n", i, i+3, i))
	}
	for i := 0; i < 4; i++ {
		write(fmt.Sprintf("patterns/notes/org/plan-%d.org", i), fmt.Sprintf("#+TITLE: Org plan %d\n#+DATE: <2022-07-%02d Fri 09:30>\n#+FILETAGS: :work:\n\n* TODO Write part %d :urgent:\n  :PROPERTIES:\n  :ID: %d\n  :END:\n  The part is due <2022-08-01 Mon>.\n", i, i+8, i, i))
	}
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("%032x", 0xabc000+i)
		write("patterns/notes/joplin/"+id+".md", fmt.Sprintf("Joplin note %d\n\nBody of the Joplin note %d.\n\nid: %s\nparent_id: %032x\ncreated_time: 2020-04-%02dT10:22:33.123Z\nupdated_time: 2020-05-01T08:00:00.000Z\nis_conflict: 0\nauthor: \nsource_url: \nis_todo: 0\nuser_created_time: 2020-04-%02dT10:22:33.123Z\nmarkup_language: 1\ntype_: 1", i, i, id, 0xf00, i+10, i+10))
	}
	write(fmt.Sprintf("patterns/notes/joplin/%032x.md", 0xf00), fmt.Sprintf("Notebook\n\nid: %032x\ncreated_time: 2020-04-01T00:00:00.000Z\nparent_id: \ntype_: 2", 0xf00))
	write(fmt.Sprintf("patterns/notes/joplin/%032x.md", 0xf01), fmt.Sprintf("id: %032x\nnote_id: %032x\ntag_id: %032x\ncreated_time: 2020-04-12T10:22:34.000Z\ntype_: 6", 0xf01, 0xabc000, 0xf02))
	for i := 0; i < 4; i++ {
		write(fmt.Sprintf("patterns/notes/logseq/pages/page%d.md", i), fmt.Sprintf("title:: Logseq page %d\ntags:: a, b\n\n- first block %d\n", i, i))
	}
	write("patterns/notes/logseq/pages/dashed.md", "- title:: Logseq dashed page\n  alias:: dash\n- its block\n")
	write("patterns/notes/notion/Meeting 0123456789abcdef0123456789abcdef.md", "# Meeting\n\nCreated: January 2, 2021 3:04 PM\nTags: Work\n\nWe met.\n")
	enex := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE en-export SYSTEM \"http://xml.evernote.com/pub/evernote-export3.dtd\">\n<en-export export-date=\"20230101T120000Z\" application=\"Evernote\" version=\"10.0\">\n"
	for i := 0; i < 5; i++ {
		enex += fmt.Sprintf("<note><title>Evernote note %d &amp; more</title><content><![CDATA[<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<!DOCTYPE en-note SYSTEM \"http://xml.evernote.com/pub/enml2.dtd\">\n<en-note><div>Evernote body %d</div></en-note>]]></content><created>2013073%dT205204Z</created><tag>t</tag><resource><data encoding=\"base64\">iVBORw0KGgo=</data><mime>image/png</mime></resource></note>\n", i, i, i)
	}
	write("patterns/notes/evernote/My Notes.enex", enex+"</en-export>\n")
	return []struct{ dir, kind string }{
		{filepath.Join(root, "patterns", "mail"), "mail"},
		{filepath.Join(root, "patterns", "notes"), "docs"},
	}
}
