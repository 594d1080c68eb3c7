package readkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode"
	"unicode/utf8"

	mcharset "github.com/emersion/go-message/charset"
	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"golang.org/x/text/encoding/charmap"
	xunicode "golang.org/x/text/encoding/unicode"
)

// MaxLineBytes is the longest line a text document may have. Longer lines are not
// prose (minified data, a dump without newlines) and are rejected with a clear error.
const MaxLineBytes = 1 << 20

// MaxFileBytes bounds how much of one document or JSON file is read into memory.
const MaxFileBytes = 64 << 20

// NormalizeNewlines turns CRLF and bare CR into LF.
func NormalizeNewlines(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\r' {
			out = append(out, '\n')
			if i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// DecodeFallback turns bytes in an unknown or unreliable charset into UTF-8: valid
// UTF-8 stays as it is, anything else is read as Windows-1252 (a superset of the
// printable Latin-1 range), which never fails.
func DecodeFallback(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	s, err := charmap.Windows1252.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(s)
}

// DecodeCharset converts b from the named charset to UTF-8. known is false when the
// charset is not recognised; the text is then decoded with DecodeFallback.
func DecodeCharset(charset string, b []byte) (s string, known bool) {
	cs := strings.ToLower(strings.TrimSpace(charset))
	switch cs {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
		return SanitizeUTF8(b), true
	}
	if CheckCharset(cs) != nil {
		return DecodeFallback(b), false
	}
	r, err := mcharset.Reader(cs, bytes.NewReader(b))
	if err != nil {
		return DecodeFallback(b), false
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return DecodeFallback(b), false
	}
	return string(out), true
}

// SanitizeUTF8 returns b as valid UTF-8: a body that claims UTF-8 but is not is
// read as Windows-1252 when that is plausible (no valid multi-byte sequence at
// all), otherwise invalid sequences become U+FFFD.
func SanitizeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	if !hasMultibyteUTF8(b) {
		return DecodeFallback(b)
	}
	s, _ := replaceInvalidUTF8(b)
	return s
}

// hasMultibyteUTF8 reports whether b holds at least one valid multi-byte UTF-8 sequence.
func hasMultibyteUTF8(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if n > 1 && r != utf8.RuneError {
			return true
		}
		b = b[n:]
	}
	return false
}

// replaceInvalidUTF8 replaces every invalid byte sequence with U+FFFD and reports how
// many it replaced and the offset of the first.
func replaceInvalidUTF8(b []byte) (string, invalidInfo) {
	var info invalidInfo
	info.first = -1
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			if info.first < 0 {
				info.first = i
			}
			info.count++
			sb.WriteRune(unicode.ReplacementChar)
			i++
			continue
		}
		sb.Write(b[i : i+n])
		i += n
	}
	return sb.String(), info
}

type invalidInfo struct {
	count int
	first int
}

// StripControls removes control characters other than newline and tab; they carry
// no text and confuse terminals and tokenizers.
func StripControls(s string) string {
	clean := true
	for _, r := range s {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\uFEFF') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' {
			return '\n'
		}
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\uFEFF') {
			return -1
		}
		return r
	}, s)
}

// textFile is the decoded content of a text document plus what had to be repaired.
type textFile struct {
	Text  string
	Notes []string // repairs made (UTF-16 decoded, invalid bytes replaced, ...)
}

// ErrEmpty marks an empty input: nothing to ingest, not a failure.
var ErrEmpty = fmt.Errorf("empty file: nothing to ingest")

// OpenInput opens the file at path (on disk or in a mounted archive) for a
// reader that streams it; a file it cannot open is a failure told to rep, and
// ok is false.
func OpenInput(path string, rep *Report) (f fs.File, ok bool) {
	f, err := archive.Open(path)
	if err != nil {
		rep.Fail(FileError{Path: path, Err: err})
		return nil, false
	}
	return f, true
}

// NewLineScanner scans r by lines of up to MaxLineBytes (a longer line stops
// the scan with bufio.ErrTooLong).
func NewLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	return sc
}

// DecodeTextFile checks that b is text and returns it as valid UTF-8 with LF line
// endings. Binary data and over-long lines are errors naming the byte offset.
// ReadTextFile reads and decodes the chat or text file at path for a reader: a
// file it cannot read is a failure, an empty one a warning; ok is false for both
// (each told to rep).
func ReadTextFile(path string, rep *Report) (tf textFile, ok bool) {
	b, err := ReadFileLimited(path)
	if err != nil {
		rep.Fail(FileError{Path: path, Err: err})
		return tf, false
	}
	tf, err = DecodeTextFile(b)
	if errors.Is(err, ErrEmpty) {
		rep.Warn(path, "", "empty file: nothing to ingest")
		return tf, false
	}
	if err != nil {
		rep.Fail(FileError{Path: path, Err: err})
		return tf, false
	}
	return tf, true
}

// ReadText is ReadTextFile for a reader that keeps what decoding repaired
// told: each repair is a warning on path, and the text is returned.
func ReadText(path string, rep *Report) (text string, ok bool) {
	tf, ok := ReadTextFile(path, rep)
	if !ok {
		return "", false
	}
	for _, n := range tf.Notes {
		rep.Warn(path, "", n)
	}
	return tf.Text, true
}

func DecodeTextFile(b []byte) (textFile, error) {
	var tf textFile
	if len(bytes.TrimSpace(b)) == 0 {
		return tf, ErrEmpty
	}
	switch {
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}), bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		dec := xunicode.UTF16(xunicode.LittleEndian, xunicode.UseBOM).NewDecoder()
		out, err := dec.Bytes(b)
		if err != nil {
			return tf, fmt.Errorf("byte 0: file starts with a UTF-16 byte-order mark but does not decode as UTF-16: %w; save it as UTF-8", err)
		}
		b = out
		tf.Notes = append(tf.Notes, "decoded from UTF-16 (byte-order mark)")
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return tf, fmt.Errorf("byte %d: NUL byte: this is a binary file, not text; skipped", i)
	}
	if off, ok := binaryLooking(b); ok {
		return tf, fmt.Errorf("byte %d: mostly control characters and invalid UTF-8: this is a binary file, not text; skipped", off)
	}
	if line, off, n := longestLine(b); n > MaxLineBytes {
		return tf, fmt.Errorf("line %d (byte %d) is %d bytes long, over the %d-byte line limit: not a readable document; split it into lines or paragraphs", line, off, n, MaxLineBytes)
	}
	b = NormalizeNewlines(b)
	if utf8.Valid(b) {
		tf.Text = StripControls(string(b))
		return tf, nil
	}
	s, info := replaceInvalidUTF8(b)
	tf.Text = StripControls(s)
	tf.Notes = append(tf.Notes, fmt.Sprintf("%d invalid UTF-8 byte(s) replaced with U+FFFD, first at byte %d", info.count, info.first))
	return tf, nil
}

// binaryLooking reports whether the first 8 KiB look like binary data: more than
// 10 % control bytes (other than whitespace), or (in a sample of at least 256
// bytes) more than a third of the bytes in invalid UTF-8 sequences. A few stray
// invalid bytes in text are repaired instead.
func binaryLooking(b []byte) (int, bool) {
	head := b
	if len(head) > 8192 {
		head = head[:8192]
	}
	controls, invalid, first := 0, 0, -1
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			// a sequence cut at the end of the sample is not evidence
			if len(head)-i < 4 && len(head) < len(b) {
				i = len(head)
				continue
			}
			invalid++
		case r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f':
			controls++
		default:
			i += n
			continue
		}
		if first < 0 {
			first = i
		}
		i += n
	}
	return first, controls*10 > len(head) || (len(head) >= 256 && invalid*3 > len(head))
}

// longestLine returns the 1-based number, start offset and length of the longest line.
func longestLine(b []byte) (line, off, n int) {
	start, ln := 0, 1
	for start <= len(b) {
		i := bytes.IndexByte(b[start:], '\n')
		end := len(b)
		if i >= 0 {
			end = start + i
		}
		if end-start > n {
			line, off, n = ln, start, end-start
		}
		if i < 0 {
			break
		}
		start = end + 1
		ln++
	}
	return line, off, n
}
