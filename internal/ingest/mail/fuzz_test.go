package mail

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// FuzzParseMail feeds arbitrary bytes to the message parser: it must never panic,
// and what it keeps must be valid UTF-8 with a time at or after earliestMailYear.
func FuzzParseMail(f *testing.F) {
	f.Add([]byte(readertest.MailHeader("Ana <ana@mailbox.example>", "Hi", "Mon, 05 Jan 2026 10:00:00 +0000", "a@x.example", "Content-Type: text/plain") + "\nHello.\n"))
	f.Add([]byte("\ufeffFrom a@b Mon Jan  5 10:00:00 2026\nFrom: x at y.org (X)\nSubject: =?gb2312?B?5byg5LiJ?=\nDate: 11 Dec 04 13:43 EST\n\n> q\nown\n"))
	f.Add([]byte("From: a@b\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\nx\n--b\nContent-Type: message/rfc822\n\nFrom: c@d\n\ninner\n--b"))
	f.Add([]byte("Content-Type: multipart/alternative; boundary=x\n\n--x\nContent-Type: text/html\n\n<p title='>'>t</p><script>s</script>\n"))
	file := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte) {
		pm, err := parseMail(raw, mailDates{File: file})
		if err != nil {
			return
		}
		m := pm.M.Msg
		for _, s := range append([]string{m.Text, m.Author, m.AuthorAddr, m.Subject, m.Ref}, m.To...) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 kept: %q", s)
			}
		}
		if pm.M.Date.Year() < earliestMailYear {
			t.Fatalf("time %v before %d", pm.M.Date, earliestMailYear)
		}
	})
}

// FuzzReadMbox cuts arbitrary bytes as an mbox: it must never panic, and the bytes
// of the messages it cuts (plus separator lines and mboxrd unescaping) never
// exceed the input.
func FuzzReadMbox(f *testing.F) {
	f.Add([]byte("From a@b Mon Jan  5 10:00:00 2026\nFrom: a@b\n\nx\n>From y\n\nFrom - \nSubject: s\n\nz\n"))
	f.Add([]byte("\ufeffFrom a@b Mon Jan  5 10:00:00 2026\r\nContent-Length: 5\r\n\r\nFrom \r\nFrom b@c Mon Jan  5 10:00:00 2026\r\nX: y\r\n\r\nq\r\n"))
	f.Add([]byte("From Russia with love\nYear: 1963\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		total := 0
		err := readMboxFrom(bytes.NewReader(raw), func(m mboxMessage) error {
			total += len(m.Raw)
			if m.Num < 1 || m.Offset < 0 || m.Offset > int64(len(raw)) {
				t.Fatalf("message %d at offset %d of %d bytes", m.Num, m.Offset, len(raw))
			}
			return nil
		})
		if total > len(raw) {
			t.Fatalf("cut %d message bytes out of %d input bytes", total, len(raw))
		}
		if err != nil && !strings.Contains(err.Error(), "not an mbox") && err != readkit.ErrEmpty {
			t.Fatalf("unexpected error: %v", err)
		}
	})
}

// FuzzLooseDate: the lenient date parser never panics and never returns a year
// outside its bounds.
func FuzzLooseDate(f *testing.F) {
	for _, s := range []string{"Sat, 11 Dec 2004 13:43:05 ", "21:53:3 +0800 11 Dec 2004", "11-Dec-2004 10:00 GMT+0100", "2013-05-08 23:46:11 +0200", "Thu, 01 Jan 1970 00:00:00 +0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := parseLooseDate(s); ok && (d.T.Year() < earliestMailYear || d.T.After(time.Now().AddDate(1, 0, 1))) {
			t.Fatalf("%q → %v", s, d.T)
		}
	})
}
