package ingest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/mail"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// mailFile is one small RFC 5322 message.
func mailFile(from, id, date, body string) string {
	s := "From: " + from + "\nTo: team@x.example\nSubject: note " + id + "\nMessage-ID: <" + id + ">\n"
	if date != "" {
		s += "Date: " + date + "\n"
	}
	return s + "\n" + body + "\n"
}

// A Maildir copied with only cur/ (git, zip files and backups drop empty
// folders) is a Maildir, and its messages are read whatever their names: the
// standard "<time>.<unique>.<host>" names with dots and ":2,S" / "!2,S" flags.
func TestMaildirCurOnlyAnyNames(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"box/cur/1220863087.12663_23.mindcrime":  mailFile("Ann <ann@x.example>", "a1@x", "Mon, 08 Sep 2008 08:38:07 +0000", "first one"),
		"box/cur/1252168370_3.14675.cthulhu!2,S": mailFile("Bob <bob@x.example>", "b1@x", "", "no date header"),
		"box/cur/1700000000.M1P2.host:2,RS":      mailFile("Cy <cy@x.example>", "c1@x", "Tue, 14 Nov 2023 22:13:20 +0000", "third"),
		"box/.Sent/cur/1700000100.M3P4.host:2,S": mailFile("Ann <ann@x.example>", "d1@x", "Tue, 14 Nov 2023 22:15:00 +0000", "sent one"),
		"box/.Sent/maildirfolder":                "",
		"box/dovecot-uidlist":                    "3 V1 N2\n",
		// a notmuch-style tree: mail at a Maildir's top and in plain subfolders
		"box/05:2,":                               mailFile("Hal <hal@x.example>", "h1@x", "Mon, 08 Sep 2008 10:00:00 +0000", "top-level file"),
		"box/bar/baz/24:2,":                       mailFile("Ivy <ivy@x.example>", "h2@x", "Mon, 08 Sep 2008 10:05:00 +0000", "plain subfolder"),
		"box/bar/cur/19:2,":                       mailFile("Jon <jon@x.example>", "h3@x", "Mon, 08 Sep 2008 10:10:00 +0000", "sub-Maildir"),
		"other/new/1700000200.M5P6.host":          mailFile("Di <di@x.example>", "e1@x", "Tue, 14 Nov 2023 22:20:00 +0000", "new only"),
		"direct/1220863087.99999_1.mindcrime:2,S": mailFile("Ed <ed@x.example>", "f1@x", "Mon, 08 Sep 2008 08:40:00 +0000", "named directly"),
		"mh/1":             mailFile("Fay <fay@x.example>", "g1@x", "Mon, 08 Sep 2008 09:00:00 +0000", "mh one"),
		"mh/2":             mailFile("Gus <gus@x.example>", "g2@x", "Mon, 08 Sep 2008 09:05:00 +0000", "mh two"),
		"mh/.mh_sequences": "unseen: 2\n",
	})
	c, sum := runOn(t, Options{}, filepath.Join(dir, "box"), filepath.Join(dir, "other"), filepath.Join(dir, "direct", "1220863087.99999_1.mindcrime:2,S"), filepath.Join(dir, "mh"))
	for _, id := range []string{"a1@x", "b1@x", "c1@x", "d1@x", "e1@x", "f1@x", "g1@x", "g2@x", "h1@x", "h2@x", "h3@x"} {
		_, text, author := c.message(t, id)
		if author == "" || strings.TrimSpace(text) == "" {
			t.Errorf("%s: author %q text %q", id, author, text)
		}
	}
	s, i := c.msgOf(t, "b1@x")
	if got := c.srcs[s].Messages[i].TimestampMS; got != time.Unix(1252168370, 0).UnixMilli() {
		t.Errorf("b1 time = %d, want the delivery time of its file name", got)
	}
	if sum.Failures != 0 || len(sum.Unread) != 0 {
		t.Errorf("failures %d %v, unread %v", sum.Failures, sum.Errors, sum.Unread)
	}
	if sum.SkippedBy[mail.ReasonMaildirMeta] != 2 {
		t.Errorf("a Maildir's metadata files must be named: %v", sum.SkippedBy)
	}
	if sum.SkippedBy[readkit.ReasonMHSequences] != 1 {
		t.Errorf(".mh_sequences must be named: %v", sum.SkippedBy)
	}
}

// --kind maildir on a folder of message files (a lone cur/) reads each file as a
// message instead of failing with "not a directory".
func TestKindMaildirOnCurFolder(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"cur/1220863087.12663_23.mindcrime":  mailFile("Ann <ann@x.example>", "a1@x", "Mon, 08 Sep 2008 08:38:07 +0000", "first"),
		"cur/1252168370_3.14675.cthulhu!2,S": mailFile("Bob <bob@x.example>", "b1@x", "Sat, 05 Sep 2009 16:32:50 +0000", "second"),
	})
	for _, p := range []string{filepath.Join(dir, "cur"), dir} {
		c, sum := runOn(t, Options{Kind: KindMaildir}, p)
		if sum.Failures != 0 || len(c.srcs) != 2 {
			t.Errorf("%s: %d sources, errors %v", p, len(c.srcs), sum.Errors)
		}
	}
}

// emlxFile builds an Apple Mail .emlx file: the byte count, the message, the plist.
func emlxFile(msg string, received int64) string {
	return fmt.Sprintf("%d\n%s<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n\t<key>date-received</key>\n\t<integer>%d</integer>\n\t<key>flags</key>\n\t<integer>8590195713</integer>\n</dict>\n</plist>\n", len(msg), msg, received)
}

// Apple Mail's .emlx and .partial.emlx are read as mail (the plist is not part
// of the text, date-received dates a message without a Date header), and the
// attachments Mail keeps beside them are named as parts of their message, never
// stored as documents.
func TestAppleMailEmlx(t *testing.T) {
	partial := "From: Ann <ann@x.example>\nSubject: report\nMessage-ID: <p1@x>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\nsee the report\n--b\nContent-Type: text/plain; name=report.txt\nContent-Disposition: attachment; filename=report.txt\nX-Apple-Content-Length: 12\n\n\n--b--\n"
	dir := readertest.WriteFiles(t, map[string]string{
		"Mail/INBOX.mbox/Data/1/Messages/101.emlx":            emlxFile(mailFile("Bob <bob@x.example>", "e1@x", "Wed, 05 Feb 2020 00:53:20 +0000", "whole message"), 1580864000),
		"Mail/INBOX.mbox/Data/1/Messages/102.partial.emlx":    emlxFile(partial, 1581123200),
		"Mail/INBOX.mbox/Data/1/Attachments/102/2/report.txt": "quarterly numbers\n",
		"Mail/INBOX.mbox/Info.plist":                          "<?xml version=\"1.0\"?><plist/>",
	})
	c, sum := runOn(t, Options{}, dir)
	_, text, author := c.message(t, "e1@x")
	if !strings.Contains(text, "whole message") || strings.Contains(text, "plist") || !strings.Contains(author, "Bob") {
		t.Errorf("emlx: %q by %q", text, author)
	}
	s, i := c.msgOf(t, "p1@x")
	if got := c.srcs[s].Messages[i].TimestampMS; got != 1581123200000 {
		t.Errorf("partial.emlx without Date: ts %d, want date-received", got)
	}
	for _, src := range c.srcs {
		if strings.Contains(src.SourceID, "report.txt") {
			t.Errorf("an attachment of a message was stored as a document: %s", src.SourceID)
		}
	}
	if sum.SkippedBy[readkit.ReasonAppleAttachment] != 1 {
		t.Errorf("attachment not named: %v", sum.SkippedBy)
	}
}

// writeZip writes a zip archive of files (name -> content) to p.
func writeZip(t *testing.T, p string, files map[string]string, order ...string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if len(order) == 0 {
		for name := range files {
			order = append(order, name)
		}
	}
	for _, name := range order {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Slack export handed over as a .zip is read in place, member by member, with
// or without --kind slack; a zip of notes and mail too.
func TestZipExportsReadInPlace(t *testing.T) {
	dir := t.TempDir()
	slack := map[string]string{
		"channels.json":           `[{"id":"C1","name":"general","members":["U1"]}]`,
		"users.json":              `[{"id":"U1","name":"ann","real_name":"Ann Lee"}]`,
		"general/2020-01-01.json": `[{"type":"message","user":"U1","text":"hello from the zip","ts":"1577880000.000100"}]`,
		"general/2020-01-02.json": `[{"type":"message","user":"U1","text":"second day","ts":"1577966400.000200"}]`,
		"integration_logs.json":   `[]`,
	}
	writeZip(t, filepath.Join(dir, "slack.zip"), slack)
	for _, kind := range []string{"", KindSlack} {
		c, sum := runOn(t, Options{Kind: kind}, filepath.Join(dir, "slack.zip"))
		n := 0
		for _, s := range c.srcs {
			for _, m := range s.Messages {
				if m.Author == "Ann Lee" && m.TimestampMS > 0 {
					n++
				}
			}
		}
		if n != 2 || sum.Failures != 0 {
			t.Errorf("--kind %q: %d messages by Ann, errors %v, unread %v", kind, n, sum.Errors, sum.Unread)
		}
	}
	writeZip(t, filepath.Join(dir, "notes.zip"), map[string]string{
		"Notes/a.md":                    "---\ntitle: Alpha\ndate: 2021-03-04\n---\nbody a\n",
		"Mail/1220863087.12663_23.host": mailFile("Ann <ann@x.example>", "z1@x", "Mon, 08 Sep 2008 08:38:07 +0000", "zipped mail"),
	})
	c, sum := runOn(t, Options{}, filepath.Join(dir, "notes.zip"))
	if s := c.byID(notes.DocSourceID(filepath.Join(dir, "notes.zip", "Notes", "a.md"))); s == nil || s.Title != "Alpha" || s.Messages[0].Ref != "notes.zip/Notes/a.md" {
		t.Errorf("zipped note = %+v (sources %d, errors %v)", s, len(c.srcs), sum.Errors)
	}
	c.message(t, "z1@x")
}

// Hostile archives are refused with a clear error and nothing of them is read:
// a member leaving the archive, a zip bomb, an archive inside an archive.
func TestZipRefusals(t *testing.T) {
	dir := t.TempDir()
	writeZip(t, filepath.Join(dir, "evil.zip"), map[string]string{"../../outside.md": "# evil\n"})
	writeZip(t, filepath.Join(dir, "abs.zip"), map[string]string{"/etc/passwd.md": "# evil\n"})
	var bomb bytes.Buffer
	zw := zip.NewWriter(&bomb)
	w, _ := zw.Create("big.txt")
	w.Write(bytes.Repeat([]byte{'0'}, 8<<20))
	zw.Close()
	os.WriteFile(filepath.Join(dir, "bomb.zip"), bomb.Bytes(), 0o644)
	// Issue 39, finding 5: the same bomb split into members of 1 MiB or less,
	// each under the per-member floor, is refused for its total ratio.
	bomb.Reset()
	zw = zip.NewWriter(&bomb)
	for i := 0; i < 16; i++ {
		w, _ := zw.Create(fmt.Sprintf("part%02d.txt", i))
		w.Write(bytes.Repeat([]byte{'0'}, 1<<20))
	}
	zw.Close()
	os.WriteFile(filepath.Join(dir, "split.zip"), bomb.Bytes(), 0o644)
	inner, _ := os.ReadFile(filepath.Join(dir, "evil.zip"))
	writeZip(t, filepath.Join(dir, "nest.zip"), map[string]string{"a.md": "# A\ntext\n", "inner.zip": string(inner)}, "a.md", "inner.zip")
	c, sum := runOn(t, Options{}, dir)
	got := map[string]string{}
	for _, e := range sum.Errors {
		got[filepath.Base(e.Path)] = e.Error()
	}
	if !strings.Contains(got["evil.zip"], "leaves the archive") || !strings.Contains(got["abs.zip"], "leaves the archive") {
		t.Errorf("traversal: %v", got)
	}
	if !strings.Contains(got["bomb.zip"], "zip bomb") {
		t.Errorf("bomb: %v", got)
	}
	if !strings.Contains(got["split.zip"], "16 members expand") || !strings.Contains(got["split.zip"], "zip bomb") {
		t.Errorf("bomb in small members: %v", got)
	}
	if sum.SkippedBy[readkit.ReasonNestedArchive] != 1 || len(c.srcs) != 1 {
		t.Errorf("nested: %v, %d sources", sum.SkippedBy, len(c.srcs))
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "outside.md")); err == nil {
		t.Errorf("a member was written outside the archive")
	}
	old := archive.Limits.Members
	archive.Limits.Members = 1
	defer func() { archive.Limits.Members = old }()
	writeZip(t, filepath.Join(dir, "many", "many.zip"), map[string]string{"a.md": "a\n", "b.md": "b\n"})
	_, sum = runOn(t, Options{}, filepath.Join(dir, "many"))
	if len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0].Error(), "2 members") {
		t.Errorf("member count: %v", sum.Errors)
	}
}

// Every skipped file is named with its reason; many of one reason are cut to the
// first few plus a list file, and formats nothing reads say what to do instead.
func TestSkippedFilesNamed(t *testing.T) {
	files := map[string]string{
		"old.msg":       "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x1b[31m",
		"archive.pst":   "!BDN\x00\x00",
		"messages.html": "<html>telegram</html>",
		"data.csv":      "a,b\n1,2\n",
	}
	for i := range 25 {
		files[fmt.Sprintf("img/%02d.jpg", i)] = "\xff\xd8\xff\xe0"
	}
	dir := readertest.WriteFiles(t, files)
	_, sum := runOn(t, Options{}, dir)
	list := filepath.Join(t.TempDir(), "skipped.txt")
	lines, err := sum.SkipLines(list)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"old.msg: Outlook .msg message: not read (save it as .eml", "archive.pst: Outlook data file", "messages.html: Telegram HTML export",
		"data.csv: text of no known", "use --kind docs", "... and 15 more (ingest --report FILE lists every file): " + readkit.ReasonMedia, "listed in " + list} {
		if !strings.Contains(all, want) {
			t.Errorf("skip lines miss %q:\n%s", want, all)
		}
	}
	if strings.Count(all, ".jpg") != readkit.SkipListEach {
		t.Errorf("want %d .jpg named on stderr:\n%s", readkit.SkipListEach, all)
	}
	b, err := os.ReadFile(list)
	if err != nil || strings.Count(string(b), "\n") != 29 {
		t.Errorf("list file: %v\n%s", err, b)
	}
	// --kind eml on an Outlook .msg fails with what it is, never its bytes.
	_, sum = runOn(t, Options{Kind: KindEML}, filepath.Join(dir, "old.msg"))
	if len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0].Error(), "Outlook .msg") || strings.ContainsAny(sum.Errors[0].Error(), "\x1b\xd0") {
		t.Errorf("--kind eml on .msg: %v", sum.Errors)
	}
}

// Nothing printed carries raw bytes: control characters and invalid UTF-8 are
// escaped.
func TestOneLineEscapesBinary(t *testing.T) {
	got := FileError{Path: "a", Err: fmt.Errorf("bad \xd0\xcf\x11 \x1b[31m é")}.Error()
	if got != `a: bad \xd0\xcf\x11 \x1b[31m é` {
		t.Errorf("got %q", got)
	}
}

// A WhatsApp chat exported "with media" and a Telegram export come as zip files:
// their chat files are read in place, their media named as not read.
func TestZipChatExports(t *testing.T) {
	dir := t.TempDir()
	writeZip(t, filepath.Join(dir, "WhatsApp Chat - Ann.zip"), map[string]string{
		"_chat.txt":                              "[14/03/2023, 09:15:02] Ann Lee: Morning! Shall we meet at ten?\n[14/03/2023, 09:16:40] Bob Roy: Yes, see you at the cafe.\n",
		"00000012-PHOTO-2023-03-14-09-17-00.jpg": "\xff\xd8\xff\xe0",
	})
	writeZip(t, filepath.Join(dir, "Telegram.zip"), map[string]string{
		"ChatExport_2023-03-14/result.json": `{"name":"Ann Lee","type":"personal_chat","id":42,"messages":[{"id":1,"type":"message","date":"2023-03-14T09:15:02","date_unixtime":"1678785302","from":"Ann Lee","from_id":"user1","text":"Hello from the zipped Telegram export"}]}`,
	})
	c, sum := runOn(t, Options{}, dir)
	authors := map[string]bool{}
	for _, s := range c.srcs {
		for _, m := range s.Messages {
			if m.TimestampMS > 0 {
				authors[s.Provider+":"+m.Author] = true
			}
		}
	}
	for _, want := range []string{"whatsapp:Ann Lee", "whatsapp:Bob Roy", "telegram:Ann Lee"} {
		if !authors[want] {
			t.Errorf("missing %s; got %v (errors %v, skips %v)", want, authors, sum.Errors, sum.SkippedBy)
		}
	}
	if sum.Skipped != 1 || sum.Failures != 0 {
		t.Errorf("want the photo named as skipped and no failure: %v %v", sum.SkippedBy, sum.Errors)
	}
}
