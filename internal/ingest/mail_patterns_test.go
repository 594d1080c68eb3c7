package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/mail"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// msgOf returns the collected message with ref and its source.
func (c *collector) msgOf(t *testing.T, ref string) (src int, idx int) {
	t.Helper()
	for i, s := range c.srcs {
		for j, m := range s.Messages {
			if m.Ref == ref {
				return i, j
			}
		}
	}
	t.Fatalf("message %q not ingested (%d sources)", ref, len(c.srcs))
	return 0, 0
}

// Interleaved and bottom-posted replies keep every line the author wrote between
// and after the quoted blocks; the attribution and the quotes go.
func TestMailInterleavedReplyKeepsOwnLines(t *testing.T) {
	body := readertest.MailHeader("Dana Ruiz <dana@list.example>", "Re: [dev] build times", "Wed, 07 Jan 2026 09:00:00 +0100", "il@x.example",
		"In-Reply-To: <q@x.example>", "Content-Type: text/plain") + `
Hi,

On Tue, Jan 6, 2026 at 5:00 PM Omar <omar@list.example> wrote:
> The nightly build takes forty minutes.

Most of that is the linker; caching it saved us twelve minutes.

> Should we split the test suite?

Yes, by package, and run the slow ones on the second runner.

-- 
Dana
`
	dir := readertest.WriteFiles(t, map[string]string{"il.eml": body})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	s, i := c.msgOf(t, "il@x.example")
	want := "Hi,\n\nMost of that is the linker; caching it saved us twelve minutes.\n\nYes, by package, and run the slow ones on the second runner."
	if got := c.srcs[s].Messages[i].Text; got != want {
		t.Errorf("interleaved reply = %q\nwant %q", got, want)
	}
}

// mbox variants: separators without a blank line before them, a BOM, CRLF, the
// bare "From -" of Thunderbird, a Content-Length body holding a "From " line, and
// an unescaped "From Russia" body line that is not a separator.
func TestMboxVariants(t *testing.T) {
	m := func(id, text string) string {
		return readertest.MailHeader("Ana <ana@mailbox.example>", "Note "+id, "Mon, 05 Jan 2026 10:00:00 +0000", id+"@x.example", "Content-Type: text/plain") + "\n" + text + "\n"
	}
	glued := "\ufeffFrom - \n" + m("g1", "First.") + "From - \n" + m("g2", "Second.") + "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n" + m("g3", "Third.")
	clBody := "Line one.\nFrom the start it was clear.\nFrom x@y Mon Jan  5 10:00:00 2026\nstill the body.\n"
	cl := "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n" +
		strings.TrimSuffix(readertest.MailHeader("Ana <ana@mailbox.example>", "CL", "Mon, 05 Jan 2026 10:00:00 +0000", "cl@x.example", "Content-Type: text/plain"), "\n") +
		"\nContent-Length: " + strconv.Itoa(len(clBody)) + "\n\n" + clBody + "\n" +
		"From ana@mailbox.example Mon Jan  5 11:00:00 2026\n" + m("cl2", "After.")
	unmunged := "From - \n" + m("u1", "My favourite film:\n\nFrom Russia with love\nYear: 1963\n\nAnd yours?") + "From - \n" + m("u2", "Goldfinger.")
	crlf := strings.ReplaceAll("From a@x Mon Jan  5 10:00:00 2026\n"+m("c1", "CRLF one.")+"From a@x Mon Jan  5 10:00:00 2026\n"+m("c2", "CRLF two."), "\n", "\r\n")
	dir := readertest.WriteFiles(t, map[string]string{"glued.mbox": glued, "cl.mbox": cl, "unmunged.mbox.txt": unmunged, "crlf.mbox": crlf})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	for ref, want := range map[string]string{
		"g1@x.example": "First.", "g2@x.example": "Second.", "g3@x.example": "Third.",
		"cl@x.example": "Line one.\nFrom the start it was clear.\nFrom x@y Mon Jan  5 10:00:00 2026\nstill the body.", "cl2@x.example": "After.",
		"u1@x.example": "My favourite film:\n\nFrom Russia with love\nYear: 1963\n\nAnd yours?", "u2@x.example": "Goldfinger.",
		"c1@x.example": "CRLF one.", "c2@x.example": "CRLF two.",
	} {
		s, i := c.msgOf(t, ref)
		if got := c.srcs[s].Messages[i].Text; got != want {
			t.Errorf("%s text = %q, want %q", ref, got, want)
		}
	}
}

// .eml wrappers and damaged headers: a BOM, a leading envelope line, a fold that
// lost its leading space, and more than a thousand header lines.
func TestEMLWrappersAndDamagedHeaders(t *testing.T) {
	env := "\ufeffFrom ana@mailbox.example Mon Jan  5 10:00:00 2026\n" + readertest.MailHeader("Ana <ana@mailbox.example>", "Wrapped", "Mon, 05 Jan 2026 10:00:00 +0000", "env@x.example", "Content-Type: text/plain") + "\nInside the wrapper.\n"
	fold := "From: Ana <ana@mailbox.example>\nTo: Sam <sam@kestrel.example>,\nLee <lee@kestrel.example>\nSubject: Folded badly\nDate: Mon, 05 Jan 2026 10:00:00 +0000\nMessage-ID: <fold@x.example>\n\nThe fold lost its space.\n"
	many := "From: Ana <ana@mailbox.example>\nSubject: Many hops\nDate: Mon, 05 Jan 2026 10:00:00 +0000\nMessage-ID: <many@x.example>\n" +
		strings.Repeat("Received: from relay.example by relay.example with ESMTP id 0123456789abcdef0123456789abcdef0123456789abcdef; Mon, 05 Jan 2026 09:59:00 +0000\n", 12000) + "\nStill here.\n"
	dir := readertest.WriteFiles(t, map[string]string{"env.eml": env, "fold.eml": fold, "many.eml": many})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	for ref, want := range map[string]string{"env@x.example": "Inside the wrapper.", "fold@x.example": "The fold lost its space.", "many@x.example": "Still here."} {
		s, i := c.msgOf(t, ref)
		if got := c.srcs[s].Messages[i]; got.Text != want || got.Author != "Ana" {
			t.Errorf("%s = %q by %q, want %q by Ana", ref, got.Text, got.Author, want)
		}
	}
	s, i := c.msgOf(t, "fold@x.example")
	if to := c.srcs[s].Messages[i].To; len(to) != 2 || to[1] != "Lee <lee@kestrel.example>" {
		t.Errorf("folded To = %v", to)
	}
}

// Senders and dates as real archives carry them.
func TestMailSendersAndDates(t *testing.T) {
	mk := func(id, from, date string, extra ...string) string {
		h := []string{"From: " + from, "Subject: Dates " + id, "Message-ID: <" + id + "@x.example>"}
		if date != "" {
			h = append(h, "Date: "+date)
		}
		return strings.Join(append(h, extra...), "\n") + "\n\nBody " + id + ".\n"
	}
	files := map[string]string{
		"pipermail.eml": mk("pm", "jdoe at lists.example.org (Jane Doe)", "Sat, 11 Dec 2004 13:43:05 +0100"),
		"nozone.eml":    mk("nz", "Ana <ana@mailbox.example>", "Sat, 11 Dec 2004 13:43:05 "),
		"onedigit.eml":  mk("od", "Ana <ana@mailbox.example>", "Sat, 11 Dec 2004 21:53:3 +0800"),
		"obsolete.eml":  mk("ob", "Ana <ana@mailbox.example>", "11 Dec 04 13:43 EST"),
		"received.eml":  mk("rc", "Ana <ana@mailbox.example>", "", "Received: from a by b; Sat, 11 Dec 2004 13:43:05 +0000"),
		"epoch.eml":     mk("ep", "Ana <ana@mailbox.example>", "Thu, 01 Jan 1970 00:00:00 +0000"),
		"noname.eml":    mk("nn", "\"Team Mailer\"", "Sat, 11 Dec 2004 13:43:05 +0000"),
	}
	dir := readertest.WriteFiles(t, files)
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "epoch.eml"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	for ref, want := range map[string]struct {
		author, addr string
		ms           int64
		guessed      bool
	}{
		"pm@x.example": {"Jane Doe", "jdoe@lists.example.org", at("2004-12-11T13:43:05+01:00"), false},
		"nz@x.example": {"Ana", "ana@mailbox.example", at("2004-12-11T13:43:05Z"), false},
		"od@x.example": {"Ana", "ana@mailbox.example", at("2004-12-11T21:53:03+08:00"), false},
		"ob@x.example": {"Ana", "ana@mailbox.example", at("2004-12-11T13:43:00-05:00"), false},
		"rc@x.example": {"Ana", "ana@mailbox.example", at("2004-12-11T13:43:05Z"), true},
		"ep@x.example": {"Ana", "ana@mailbox.example", mtime.UnixMilli(), true},
		"nn@x.example": {"Team Mailer", "", at("2004-12-11T13:43:05Z"), false},
	} {
		s, i := c.msgOf(t, ref)
		m := c.srcs[s].Messages[i]
		if m.Author != want.author || m.AuthorAddr != want.addr || m.TimestampMS != want.ms {
			t.Errorf("%s: author %q <%s> at %d, want %q <%s> at %d", ref, m.Author, m.AuthorAddr, m.TimestampMS, want.author, want.addr, want.ms)
		}
		tagged := strings.Contains(strings.Join(c.srcs[s].Tags, ","), "date-guessed")
		if tagged != want.guessed {
			t.Errorf("%s: date-guessed tag = %v, want %v", ref, tagged, want.guessed)
		}
	}
	warned := 0
	for _, n := range sum.Notes {
		if strings.Contains(n.Error(), "names no zone") || strings.Contains(n.Error(), "used the time the message was received") || strings.Contains(n.Error(), "used the file time") {
			warned++
		}
	}
	if warned != 3 {
		t.Errorf("want 3 warnings for the zone-less, received and file-time dates, got %d: %v", warned, sum.Notes)
	}
}

// Threads: junk References do not merge threads; a reply whose references name
// nothing known joins its subject's thread only when it shares a participant.
func TestMailThreadsIgnoreJunkReferences(t *testing.T) {
	mk := func(id, from, to, subj, date string, extra ...string) string {
		return readertest.MailHeader(from, subj, date, id, append([]string{"Content-Type: text/plain"}, extra...)...) + "\n" + "Text of " + id + ".\n"
	}
	files := map[string]string{
		"a.eml": mk("a@x.example", "Ana <ana@mailbox.example>", "", "Budget", "Mon, 05 Jan 2026 10:00:00 +0000", "References: yes", "In-Reply-To: n"),
		"b.eml": mk("b@x.example", "Lee <lee@other.example>", "", "Holidays", "Tue, 06 Jan 2026 10:00:00 +0000", "References: <yes>", "In-Reply-To: n"),
		// a reply with no references at all, same subject and a shared participant: joins a
		"c.eml": mk("c@x.example", "Sam Rivera <sam@kestrel.example>", "", "Re: Budget", "Wed, 07 Jan 2026 10:00:00 +0000"),
		// same subject, no shared participant: its own thread
		"d.eml": strings.Replace(mk("d@x.example", "Zoe <zoe@far.example>", "", "Re: Budget", "Wed, 07 Jan 2026 11:00:00 +0000"), "To: Sam Rivera <sam@kestrel.example>", "To: Max <max@far.example>", 1),
	}
	dir := readertest.WriteFiles(t, files)
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	sa, _ := c.msgOf(t, "a@x.example")
	sb, _ := c.msgOf(t, "b@x.example")
	sc, _ := c.msgOf(t, "c@x.example")
	sd, _ := c.msgOf(t, "d@x.example")
	if sa == sb {
		t.Errorf("junk References merged %q and %q", c.srcs[sa].Title, c.srcs[sb].Title)
	}
	if sa != sc {
		t.Errorf("the reply by subject with a shared participant did not join its thread")
	}
	if sd == sa {
		t.Errorf("a same-subject reply among other people joined the thread")
	}
	if c.srcs[sa].SourceID != "email:a@x.example" {
		t.Errorf("thread id = %s", c.srcs[sa].SourceID)
	}
}

// A declared charset the bytes do not match, when they are valid UTF-8, is read
// as UTF-8; HTML keeps only its text.
func TestMailCharsetsAndHTML(t *testing.T) {
	gb := readertest.MailHeader("=?gb2312?B?"+"5byg5LiJ"+"?= <zhang@x.example>", "Mislabelled", "Mon, 05 Jan 2026 10:00:00 +0800", "gb@x.example",
		`Content-Type: text/plain; charset="gb2312"`, "Content-Transfer-Encoding: 8bit") + "\n会议改到周三下午三点。\n"
	html := readertest.MailHeader("Ana <ana@mailbox.example>", "HTML", "Mon, 05 Jan 2026 10:00:00 +0000", "html@x.example", `Content-Type: text/html; charset=utf-8`) +
		"\n<html><head><title>T</title><style>p{color:red}</style></head><body><p title=\"a > b secret-attribute\">Visible <b>text</b>.</p>" +
		"<img alt=\"hidden-alt\" src=\"x.png\"><script>var leaked = 1;</script><p>See <a href=\"https://kestrel.example/doc\" data-x=\"attr-leak\">the doc</a>.</p></body></html>\n"
	dir := readertest.WriteFiles(t, map[string]string{"gb.eml": gb, "html.eml": html})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	s, i := c.msgOf(t, "gb@x.example")
	if m := c.srcs[s].Messages[i]; m.Text != "会议改到周三下午三点。" || m.Author != "张三" {
		t.Errorf("mislabelled UTF-8 = %q by %q", m.Text, m.Author)
	}
	s, i = c.msgOf(t, "html@x.example")
	txt := c.srcs[s].Messages[i].Text
	mustContain(t, "html", txt, "Visible text.", "See the doc (https://kestrel.example/doc).")
	mustNotContain(t, "html", txt, "secret-attribute", "hidden-alt", "leaked", "color:red", "attr-leak", "T\n")
}

// Maildir: cur/ and new/ are read, tmp/ is not, Maildir++ subfolders are, and the
// delivery time in a file name dates a message without a Date header.
func TestMaildir(t *testing.T) {
	msg := func(id, date string) string {
		h := "From: Ana <ana@mailbox.example>\nSubject: Maildir " + id + "\nMessage-ID: <" + id + "@x.example>\n"
		if date != "" {
			h += "Date: " + date + "\n"
		}
		return h + "\nBody " + id + ".\n"
	}
	dir := readertest.WriteFiles(t, map[string]string{
		"Mail/cur/1700000000.M1P1.host:2,S":       msg("cur1", "Mon, 05 Jan 2026 10:00:00 +0000"),
		"Mail/new/1700000100.M2P1.host":           msg("new1", ""),
		"Mail/tmp/1700000200.M3P1.host":           msg("tmp1", "Mon, 05 Jan 2026 10:00:00 +0000"),
		"Mail/.Sent/cur/1700000300.M4P1.host:2,S": msg("sent1", "Mon, 05 Jan 2026 11:00:00 +0000"),
		"Mail/.Sent/new/.keep":                    "",
		"Mail/.Sent/tmp/.keep":                    "",
		"Mail/courierimapsubscribed":              "INBOX.Sent\n",
	})
	c, sum := runOn(t, Options{}, filepath.Join(dir, "Mail"))
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	for _, ref := range []string{"cur1@x.example", "new1@x.example", "sent1@x.example"} {
		c.msgOf(t, ref)
	}
	for _, s := range c.srcs {
		for _, m := range s.Messages {
			if m.Ref == "tmp1@x.example" {
				t.Errorf("a message in tmp/ was read")
			}
		}
	}
	s, i := c.msgOf(t, "new1@x.example")
	if got := c.srcs[s].Messages[i].TimestampMS; got != 1700000100000 {
		t.Errorf("new1 time = %d, want the delivery time of its file name", got)
	}
	if sum.Files != 3 {
		t.Errorf("files = %d, want 3", sum.Files)
	}
}

// A path named on the command line that yields nothing says why.
func TestUnreadPathsAreNamed(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{"export/data.bin": "\x00\x01binary", "export/photo.jpg": "\xff\xd8\xff"})
	_, sum := runOn(t, Options{}, filepath.Join(dir, "export"))
	if len(sum.Unread) != 1 || !strings.Contains(sum.Unread[0].Error(), "1 not a known mail, chat or document format") || !strings.Contains(sum.Unread[0].Error(), "1 "+readkit.ReasonMedia) {
		t.Errorf("unread = %v", sum.Unread)
	}
	if sum.Skipped != 2 || sum.SkippedBy[readkit.ReasonUnknown] != 1 || sum.SkippedBy[readkit.ReasonMedia] != 1 || !strings.Contains(sum.Line(), "2 skipped (1 ") {
		t.Errorf("skips: %d %v %q", sum.Skipped, sum.SkippedBy, sum.Line())
	}
}

// The threader's spill file gives back exactly what it was given: a run that
// spills every message stores the same sources as one that holds them in memory.
func TestThreaderSpillRoundTrip(t *testing.T) {
	mbox := ""
	for i := 0; i < 30; i++ {
		id := "sp" + strconv.Itoa(i) + "@x.example"
		extra := []string{"Content-Type: text/plain; charset=utf-8"}
		if i%3 != 0 {
			root := "sp" + strconv.Itoa(i-i%3) + "@x.example"
			extra = append(extra, "In-Reply-To: <"+root+">", "References: <"+root+">")
		}
		mbox += "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n" +
			readertest.MailHeader("Ana Souza <ana@mailbox.example>", "Thread "+strconv.Itoa(i/3), "Mon, 05 Jan 2026 10:"+fmt.Sprintf("%02d", i)+":00 +0000", id, extra...) +
			"\nText number " + strconv.Itoa(i) + " with ünïcödé.\n\n"
	}
	dir := readertest.WriteFiles(t, map[string]string{"spill.mbox": mbox})
	held, _ := runOn(t, Options{}, dir)
	old := mail.SpillAfter
	mail.SpillAfter = 0
	defer func() { mail.SpillAfter = old }()
	spilled, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 || len(held.srcs) != 10 {
		t.Fatalf("failures %v, %d threads", sum.Errors, len(held.srcs))
	}
	if !reflect.DeepEqual(held.srcs, spilled.srcs) {
		t.Errorf("spilled sources differ from held ones:\n%+v\n%+v", spilled.srcs[0], held.srcs[0])
	}
}
