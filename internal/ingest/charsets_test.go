package ingest

import (
	"io"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"golang.org/x/text/transform"
)

// TestUTF7Decoder decodes RFC 2152's examples and the edge cases: "+-", a
// shifted run ended by a non-base64 character, a surrogate pair, a run split
// across the transformer's reads.
func TestUTF7Decoder(t *testing.T) {
	for in, want := range map[string]string{
		"Hi Mom -+Jjo--!":      "Hi Mom -☺-!",
		"+ZeVnLIqe-":           "日本語",
		"A+ImIDkQ.":            "A≢Α.",
		"1 +- 1 = 2":           "1 + 1 = 2",
		"ungl+APw-cklich":      "unglücklich",
		"+2D3eAA-":             "😀",
		"end+APw":              "endü",
		"Gr+APwA3w-e, Jos+AOk": "Grüße, José",
	} {
		got, _, err := transform.String(readkit.UTF7Encoding{}.NewDecoder(), in)
		if err != nil || got != want {
			t.Errorf("%q → %q (%v), want %q", in, got, err, want)
		}
	}
	// one byte at a time: the decoder keeps its state across reads
	long := strings.Repeat("ungl+APw-cklich +ZeVnLIqe- ", 400)
	var b strings.Builder
	r := transform.NewReader(&oneByteReader{s: long}, readkit.UTF7Encoding{}.NewDecoder())
	buf := make([]byte, 7)
	for {
		n, err := r.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if b.String() != strings.Repeat("unglücklich 日本語 ", 400) {
		t.Errorf("split reads: %q", b.String()[:80])
	}
}

type oneByteReader struct {
	s string
	i int
}

func (o *oneByteReader) Read(p []byte) (int, error) {
	if o.i >= len(o.s) {
		return 0, io.EOF
	}
	p[0] = o.s[o.i]
	o.i++
	return 1, nil
}

// TestMailUTF7AndUndecodableCharsets: a UTF-7 body and encoded word are
// decoded; a charset on the IANA list that nothing here decodes is named in a
// warning and its text kept.
func TestMailUTF7AndUndecodableCharsets(t *testing.T) {
	files := map[string]string{
		"utf7.eml": "From: =?utf-7?Q?J+APY-rg?= <jorg@postbox.example>\nSubject: =?UTF-7?Q?Gr+APwA3w-e?=\nDate: Thu, 08 Jan 2026 19:30:00 +0100\n" +
			"Message-ID: <utf7@x.example>\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-7\n\nEin ungl+APw-cklicher Zufall, 1 +- 1.\n",
		"cn.eml": "From: Li <li@postbox.example>\nSubject: hello\nDate: Thu, 08 Jan 2026 19:30:00 +0100\n" +
			"Message-ID: <cn@x.example>\nMIME-Version: 1.0\nContent-Type: text/plain; charset=ISO-2022-CN\n\nplain ascii text\n",
	}
	dir := readertest.WriteFiles(t, files)
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	_, text, author := c.message(t, "utf7@x.example")
	if author != "Jörg" {
		t.Errorf("UTF-7 author %q", author)
	}
	mustContain(t, "UTF-7 body", text, "Ein unglücklicher Zufall, 1 + 1.")
	if s := c.byID("email:utf7@x.example"); s == nil || s.Title != "Grüße" {
		t.Errorf("UTF-7 subject: %+v", s)
	}
	_, text, _ = c.message(t, "cn@x.example")
	mustContain(t, "ISO-2022-CN body", text, "plain ascii text")
	noted := false
	for _, n := range sum.Notes {
		if strings.HasSuffix(n.Path, "cn.eml") && strings.Contains(strings.ToLower(n.Err.Error()), "iso-2022-cn") {
			noted = true
		}
		if strings.HasSuffix(n.Path, "utf7.eml") {
			t.Errorf("UTF-7 warned about: %v", n)
		}
	}
	if !noted {
		t.Errorf("undecodable charset not named: %v", sum.Notes)
	}
}

// TestCheckCharset: the charsets x/text decodes pass, whatever "ab" becomes in
// them (UTF-16, EBCDIC); the replacement encoding and unknown names do not.
func TestCheckCharset(t *testing.T) {
	for _, cs := range []string{"utf-16", "UTF-16LE", "ibm037", "iso-8859-15", "windows-1251", "shift_jis", "euc-kr", "gb18030", "koi8-r", "hz-gb-2312", "utf-7", "\"UTF-7\""} {
		if err := readkit.CheckCharset(cs); err != nil {
			t.Errorf("%s: %v", cs, err)
		}
	}
	for _, cs := range []string{"iso-2022-cn", "iso-2022-kr", "x-made-up"} {
		if readkit.CheckCharset(cs) == nil {
			t.Errorf("%s accepted", cs)
		}
	}
}
