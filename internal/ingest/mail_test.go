package ingest

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

// runOn ingests paths into a collector and returns it with the summary.
func runOn(t *testing.T, opt Options, paths ...string) (*collector, *Summary) {
	t.Helper()
	c := &collector{}
	sum, err := Run(context.Background(), c, paths, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return c, sum
}

// message finds the message with ref among the collected sources.
func (c *collector) message(t *testing.T, ref string) (srcID string, text string, author string) {
	t.Helper()
	for _, s := range c.srcs {
		for _, m := range s.Messages {
			if m.Ref == ref {
				return s.SourceID, m.Text, m.Author
			}
		}
	}
	t.Fatalf("message %q not ingested; sources: %d", ref, len(c.srcs))
	return "", "", ""
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s: want %q in:\n%s", what, sub, s)
		}
	}
}

func mustNotContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			t.Errorf("%s: did not want %q in:\n%s", what, sub, s)
		}
	}
}

func TestMailEncodingsAndCharsets(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("The budget review moved to Thursday.\nBring the forecast.\n"))
	files := map[string]string{
		"qp.eml": readertest.MailHeader("Ana Souza <ana@mailbox.example>", "Caf=?utf-8?Q?=C3=A9?= plans", "Tue, 06 Jan 2026 10:00:00 -0500", "qp@x.example",
			"Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: quoted-printable") +
			"\nWe meet at the caf=C3=A9 on the corner; this line is long enough to be wrapp=\ned by the encoder.\n",
		"b64.eml": readertest.MailHeader("Ana Souza <ana@mailbox.example>", "Budget", "Wed, 07 Jan 2026 08:00:00 +0000", "b64@x.example",
			"Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64") + "\n" + b64 + "\n",
		"latin1.eml": "From: =?iso-8859-1?Q?Jos=E9_M=FCller?= <jose@postbox.example>\nTo: =?ISO-8859-1?Q?Ren=E9e_D=FCrr?= <renee@postbox.example>\n" +
			"Subject: =?iso-8859-1?Q?Gr=FC=DFe_aus_M=FCnchen?=\nDate: Thu, 08 Jan 2026 19:30:00 +0100\nMessage-ID: <latin1@x.example>\n" +
			"MIME-Version: 1.0\nContent-Type: text/plain; charset=ISO-8859-1\nContent-Transfer-Encoding: 8bit\n\nViele Gr\xfc\xdfe von Jos\xe9 M\xfcller.\n",
		"unknown.eml": "From: =?x-made-up?Q?J=F8rn_Ha=E6gen?= <jorn@postbox.example>\nSubject: =?x-made-up?B?SGVqIGTDpXI=?=\n" +
			"Date: Thu, 08 Jan 2026 19:30:00 +0100\nMessage-ID: <unknown@x.example>\nContent-Type: text/plain; charset=\"x-made-up\"\n" +
			"Content-Transfer-Encoding: 8bit\n\nVi ses p\xe5 l\xf8rdag.\n",
	}
	dir := readertest.WriteFiles(t, files)
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	_, text, _ := c.message(t, "qp@x.example")
	mustContain(t, "quoted-printable body", text, "café on the corner", "wrapped by the encoder")
	_, text, _ = c.message(t, "b64@x.example")
	mustContain(t, "base64 body", text, "The budget review moved to Thursday.\nBring the forecast.")
	_, text, author := c.message(t, "latin1@x.example")
	if author != "José Müller" {
		t.Errorf("ISO-8859-1 author = %q, want José Müller", author)
	}
	mustContain(t, "ISO-8859-1 body", text, "Viele Grüße von José Müller.")
	src := c.byID("email:latin1@x.example")
	if src == nil || src.Title != "Grüße aus München" || len(src.Messages[0].To) != 1 || src.Messages[0].To[0] != "Renée Dürr <renee@postbox.example>" {
		t.Errorf("ISO-8859-1 headers: %+v", src)
	}
	_, text, author = c.message(t, "unknown@x.example")
	if author != "Jørn Haægen" {
		t.Errorf("unknown-charset author = %q, want the Latin-1 fallback Jørn Haægen", author)
	}
	mustContain(t, "unknown-charset body", text, "Vi ses på lørdag.")
	if s := c.byID("email:unknown@x.example"); s == nil || s.Title != "Hej dår" {
		t.Errorf("unknown-charset subject (valid UTF-8 inside) = %+v", s)
	}
	noted := false
	for _, n := range sum.Notes {
		if strings.HasSuffix(n.Path, "unknown.eml") && strings.Contains(n.Err.Error(), "x-made-up") {
			noted = true
		}
	}
	if !noted {
		t.Errorf("unknown charset not noted: %v", sum.Notes)
	}
}

func TestMailMultipartHTMLAndAttachments(t *testing.T) {
	alt := readertest.MailHeader("Ana <ana@mailbox.example>", "Alt", "Tue, 06 Jan 2026 10:00:00 +0000", "alt@x.example",
		`Content-Type: multipart/alternative; boundary="b1"`) + `
--b1
Content-Type: text/plain; charset=utf-8

Plain version wins.
--b1
Content-Type: text/html; charset=utf-8

<p>HTML version loses.</p>
--b1--
`
	htmlOnly := readertest.MailHeader("Ana <ana@mailbox.example>", "Html", "Tue, 06 Jan 2026 11:00:00 +0000", "html@x.example",
		"Content-Type: text/html; charset=utf-8", "Content-Transfer-Encoding: quoted-printable") + `
<html><head><title>x</title><style>p{color:red}</style></head><body>
<p>Fish &amp; chips at <a href=3D"https://pub.example/menu">the pub</a> on Friday.</p>
<p>Second&nbsp;paragraph with &lt;angle&gt; brackets.<br>New line.</p>
<blockquote>On Mon someone wrote: quoted history</blockquote>
<div class=3D"signature">-- <br>Ana Souza<br>Kestrel Labs</div>
</body></html>
`
	mixed := readertest.MailHeader("Ana <ana@mailbox.example>", "Scan", "Tue, 06 Jan 2026 12:00:00 +0000", "mixed@x.example",
		`Content-Type: multipart/mixed; boundary="m1"`) + `
This is a multi-part message in MIME format.

--m1
Content-Type: text/plain; charset=utf-8

Checklist attached.
--m1
Content-Type: text/csv; name="checklist.csv"
Content-Disposition: attachment; filename="checklist.csv"
Content-Transfer-Encoding: base64

aXRlbSxzdGF0dXMKdXBsb2FkLHBlbmRpbmcK
--m1--
`
	dir := readertest.WriteFiles(t, map[string]string{"alt.eml": alt, "html.eml": htmlOnly, "mixed.eml": mixed})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	_, text, _ := c.message(t, "alt@x.example")
	if text != "Plain version wins." {
		t.Errorf("multipart/alternative text = %q", text)
	}
	_, text, _ = c.message(t, "html@x.example")
	mustContain(t, "HTML-only body", text, "Fish & chips at the pub (https://pub.example/menu) on Friday.", "Second paragraph with <angle> brackets.\nNew line.")
	mustNotContain(t, "HTML-only body", text, "<p>", "color:red", "quoted history", "Kestrel Labs", "&amp;")
	if !strings.Contains(text, "on Friday.\n\nSecond") {
		t.Errorf("HTML paragraphs not kept apart: %q", text)
	}
	src := c.byID("email:mixed@x.example")
	if src == nil {
		t.Fatal("mixed message not ingested")
	}
	m := src.Messages[0]
	if m.Text != "Checklist attached." {
		t.Errorf("mixed text = %q", m.Text)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "checklist.csv" || m.Attachments[0].ContentType != "text/csv" || m.Attachments[0].Size != len("item,status\nupload,pending\n") {
		t.Errorf("attachment = %+v", m.Attachments)
	}
	mustNotContain(t, "mixed text", m.Text, "upload,pending")
}

func TestMailCleaning(t *testing.T) {
	gmail := readertest.MailHeader("Sam Rivera <sam@kestrel.example>", "Re: Brakes", "Tue, 06 Jan 2026 10:00:00 +0000", "g@x.example",
		"In-Reply-To: <root@x.example>", "References: <root@x.example>", "Content-Type: text/plain") + `
Hi Ana,

The garage says the brake pads are worn.

Thanks,
Sam

-- 
Sam Rivera | Engineering Manager
Kestrel Labs · https://kestrel.example

On Mon, Jan 5, 2026 at 3:04 PM Ana Souza <ana@mailbox.example> wrote:

> Did the mechanic call back?
>
> Ana

CONFIDENTIALITY NOTICE: This e-mail message, including any attachments, is for the sole use of the intended recipient(s).
`
	outlook := readertest.MailHeader("Lars Berg <lars@halvorsen.example>", "RE: Contract", "Tue, 06 Jan 2026 11:00:00 +0000", "o@x.example",
		"Content-Type: text/plain") + `
Hello Sam,

Clause 7.2 caps liability at twelve months of fees.

Best regards,
Lars

________________________________
From: Sam Rivera <sam@kestrel.example>
Sent: Monday, January 5, 2026 3:04 PM
To: Lars Berg <lars@halvorsen.example>
Subject: Contract

Can you confirm the liability cap?

Halvorsen Logistics AS · Org. no. 912 345 678
This e-mail may contain confidential information.
`
	footerOnly := readertest.MailHeader("Nora <nora@firm.example>", "Hours", "Tue, 06 Jan 2026 12:00:00 +0000", "f@x.example", "Content-Type: text/plain") + `
The invoice is paid.

Please consider the environment before printing this e-mail.
`
	thunder := readertest.MailHeader("Ana <ana@mailbox.example>", "Re: Trip", "Tue, 06 Jan 2026 13:00:00 +0000", "t@x.example", "Content-Type: text/plain") + `
Lisbon it is.

On 1/5/2026 3:04 PM, Sam Rivera wrote:
> Lisbon or Porto?
`
	dir := readertest.WriteFiles(t, map[string]string{"g.eml": gmail, "o.eml": outlook, "f.eml": footerOnly, "t.eml": thunder})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	_, text, _ := c.message(t, "g@x.example")
	if text != "Hi Ana,\n\nThe garage says the brake pads are worn.\n\nThanks,\nSam" {
		t.Errorf("gmail reply cleaned = %q", text)
	}
	_, text, _ = c.message(t, "o@x.example")
	if text != "Hello Sam,\n\nClause 7.2 caps liability at twelve months of fees.\n\nBest regards,\nLars" {
		t.Errorf("outlook reply cleaned = %q", text)
	}
	_, text, _ = c.message(t, "f@x.example")
	if text != "The invoice is paid." {
		t.Errorf("footer not removed: %q", text)
	}
	_, text, _ = c.message(t, "t@x.example")
	if text != "Lisbon it is." {
		t.Errorf("thunderbird quote not removed: %q", text)
	}
}

func TestMailThreading(t *testing.T) {
	mbox := "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n" +
		readertest.MailHeader("Ana Souza <ana@mailbox.example>", "Phoenix launch", "Mon, 05 Jan 2026 10:00:00 +0000", "root@x.example", "Content-Type: text/plain") +
		"\nShall we launch on Monday?\n>From the plan it looks feasible.\n\n" +
		"From sam@kestrel.example Mon Jan  5 12:00:00 2026\n" +
		readertest.MailHeader("Sam Rivera <sam@kestrel.example>", "Re: Phoenix launch", "Mon, 05 Jan 2026 12:00:00 +0000", "r1@x.example",
			"In-Reply-To: <root@x.example>", "References: <root@x.example>", "Cc: Lee <lee@kestrel.example>", "Content-Type: text/plain") +
		"\nMonday works.\n\n" +
		"From news@letter.example Mon Jan  5 13:00:00 2026\n" +
		readertest.MailHeader("Letter <news@letter.example>", "Weekly news", "Mon, 05 Jan 2026 13:00:00 +0000", "news@x.example", "Content-Type: text/plain") +
		"\nNews.\n"
	// a later reply in its own .eml, referencing only the parent: still the same thread
	reply := readertest.MailHeader("Lee <lee@kestrel.example>", "RE: Re: Phoenix launch", "Tue, 06 Jan 2026 09:00:00 +0000", "r2@x.example",
		"In-Reply-To: <r1@x.example>", "Content-Type: text/plain") + "\nI will tell marketing.\n"
	// an orphan reply whose root was never ingested
	orphan := readertest.MailHeader("Lee <lee@kestrel.example>", "Re: Old thing", "Tue, 06 Jan 2026 09:00:00 +0000", "o2@x.example",
		"In-Reply-To: <o1@x.example>", "References: <o0@x.example> <o1@x.example>", "Content-Type: text/plain") + "\nStill on it.\n"
	dir := readertest.WriteFiles(t, map[string]string{"inbox.mbox": mbox, "single/reply.eml": reply, "single/orphan.eml": orphan})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 || sum.Files != 3 {
		t.Fatalf("files %d failures %v", sum.Files, sum.Errors)
	}
	if len(c.srcs) != 3 {
		t.Fatalf("want 3 threads, got %d", len(c.srcs))
	}
	th := c.byID("email:root@x.example")
	if th == nil || len(th.Messages) != 3 || th.Title != "Phoenix launch" || th.Kind != "email" {
		t.Fatalf("thread = %+v", th)
	}
	for i, want := range []string{"root@x.example", "r1@x.example", "r2@x.example"} {
		if th.Messages[i].Ref != want {
			t.Errorf("message %d ref = %q, want %q", i, th.Messages[i].Ref, want)
		}
	}
	m := th.Messages[1]
	if m.Author != "Sam Rivera" || m.AuthorAddr != "sam@kestrel.example" || len(m.Cc) != 1 || m.Cc[0] != "Lee <lee@kestrel.example>" ||
		m.TimestampMS != 1767614400000 || m.Subject != "Re: Phoenix launch" {
		t.Errorf("reply fields = %+v", m)
	}
	if got := th.Messages[0].Text; got != "Shall we launch on Monday?\nFrom the plan it looks feasible." {
		t.Errorf(">From not unescaped: %q", got)
	}
	if c.byID("email:o0@x.example") == nil {
		t.Errorf("orphan reply should be rooted at its oldest reference o0@x.example")
	}
	if c.byID("email:news@x.example") == nil {
		t.Errorf("unrelated message should be its own thread")
	}
}

func TestMailBadInputs(t *testing.T) {
	good := func(i int) string {
		return "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n" +
			readertest.MailHeader("Ana <ana@mailbox.example>", "Part", "Mon, 05 Jan 2026 10:00:00 +0000", "m"+string(rune('0'+i))+"@x.example", "Content-Type: text/plain") +
			"\nBody " + string(rune('0'+i)) + ".\n\n"
	}
	truncated := good(1) + good(2) + "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n" +
		readertest.MailHeader("Ana <ana@mailbox.example>", "Scan attached", "Tue, 06 Jan 2026 10:00:00 -0500", "trunc@x.example",
			`Content-Type: multipart/mixed; boundary="cut"`) +
		"\n--cut\nContent-Type: text/plain\n\nScan attached.\n--cut\nContent-Type: application/pdf; name=\"scan.pdf\"\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQKJeLjz9MKMSAwIG9iago8PCAvVHlwZSAvQ2F0YWxvZyAvUGFn"
	noSep := strings.Repeat(readertest.MailHeader("Ana <ana@mailbox.example>", "Run together", "Mon, 05 Jan 2026 10:00:00 +0000", "ns@x.example")+"\nText.\n\n", 3)
	badB64 := strings.ReplaceAll(readertest.MailHeader("Payroll <payroll@kestrel.example>", "Your payslip", "Wed, 07 Jan 2026 08:00:00 +0000", "b64bad@x.example",
		"Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64")+"\nSGVsbG8gU2FtLAoKWW91ciBwYXlzbGlwIGlz!!!IGF0dGFjaGVkLg==\nthis line is not base64 at all ~~~\n", "\n", "\r\n")
	mixed := "From a@x Mon Jan  5 10:00:00 2026\n" + readertest.MailHeader("A <a@x.example>", "LF", "Mon, 05 Jan 2026 10:00:00 +0000", "lf@x.example") + "\nHi,\nthere\n\n" +
		strings.ReplaceAll("From a@x Mon Jan  5 11:00:00 2026\n"+readertest.MailHeader("A <a@x.example>", "CRLF", "Mon, 05 Jan 2026 11:00:00 +0000", "crlf@x.example")+"\nHi,\nthere\n\n", "\n", "\r\n") +
		"From a@x Mon Jan  5 12:00:00 2026\n" + readertest.MailHeader("A <a@x.example>", "CR", "Mon, 05 Jan 2026 12:00:00 +0000", "cr@x.example") + "\nHi,\rthere\n"
	dir := readertest.WriteFiles(t, map[string]string{"truncated.mbox": truncated, "no-separator.mbox": noSep, "bad-base64.eml": badB64, "mixed.mbox": mixed})
	c, sum := runOn(t, Options{}, dir)

	errFor := func(name string) []FileError {
		var out []FileError
		for _, e := range sum.Errors {
			if filepath.Base(e.Path) == name {
				out = append(out, e)
			}
		}
		return out
	}
	// A multipart cut off inside its attachment keeps its headers and every part
	// read before the break; the error line says what was lost.
	if es := errFor("truncated.mbox"); len(es) != 1 || !strings.Contains(es[0].Where, "message 3") || !strings.Contains(es[0].Error(), "kept in part") ||
		!strings.Contains(es[0].Error(), `attachment "scan.pdf" (application/pdf) ends without its closing boundary`) {
		t.Errorf("truncated.mbox errors = %v", es)
	}
	c.message(t, "m1@x.example")
	c.message(t, "m2@x.example")
	if s := c.byID("email:trunc@x.example"); s == nil || s.Messages[0].Text != "Scan attached." || s.Messages[0].Author != "Ana" ||
		len(s.Messages[0].Attachments) != 1 || s.Messages[0].Attachments[0].Name != "scan.pdf" {
		t.Errorf("the truncated message must keep its headers, its text and name its attachment: %+v", s)
	}
	if es := errFor("no-separator.mbox"); len(es) != 1 || !strings.Contains(es[0].Error(), "byte 0") || !strings.Contains(es[0].Error(), "not an mbox") {
		t.Errorf("no-separator.mbox errors = %v", es)
	}
	if c.byID("email:ns@x.example") != nil {
		t.Errorf("no message boundaries may be invented for a separator-less mbox")
	}
	es := errFor("bad-base64.eml")
	if len(es) != 1 || !strings.Contains(es[0].Error(), "base64") {
		t.Errorf("bad-base64.eml errors = %v", es)
	}
	if s := c.byID("email:b64bad@x.example"); s == nil || s.Title != "Your payslip" || s.Messages[0].Author != "Payroll" || s.Messages[0].TimestampMS == 0 {
		t.Errorf("bad-base64 headers must be kept: %+v", s)
	}
	for _, ref := range []string{"lf@x.example", "crlf@x.example", "cr@x.example"} {
		if _, text, _ := c.message(t, ref); text != "Hi,\nthere" {
			t.Errorf("%s text = %q, want normalised newlines", ref, text)
		}
	}
	if len(errFor("mixed.mbox")) != 0 {
		t.Errorf("mixed newlines must parse cleanly: %v", errFor("mixed.mbox"))
	}
	if sum.Failures != 3 {
		t.Errorf("failures = %d, want 3: %v", sum.Failures, sum.Errors)
	}
}
