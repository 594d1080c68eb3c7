package mail

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// mboxMessage is one raw message cut from an mbox file.
type mboxMessage struct {
	Num     int   // 1-based
	Offset  int64 // byte offset of its "From " line
	envDate time.Time
	Raw     []byte
	err     error // set when the message could not be cut out whole
}

// reEnvelope matches the "From " separator lines real mbox writers emit: an
// address (or "-", "MAILER-DAEMON", Pipermail's "user at host") followed by an
// asctime date (weekday optional, one- or two-digit day, a zone or not), or the
// bare "From -" of Netscape and Thunderbird.
var reEnvelope = lazyre.New(`^From (-\s*$|-?\s*\S+(\s+at\s+\S+)?\s+((Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s+)?(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\s+\d{1,2}\s+\d{1,2}:\d{2}(:\d{2})?\s+([A-Za-z+-][A-Za-z0-9+-]*\s+)?\d{4}\b)|^From -\s+((Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+)?(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+\d{1,2}:\d{2}`)

// reHeaderLine matches an RFC 5322 header field line ("Key: value").
var reHeaderLine = lazyre.New(`^[!-9;-~]{1,76}:`)

// mboxLines reads lines with a one-line pushback and raw byte reads (for
// Content-Length bodies), keeping the byte offset.
type mboxLines struct {
	br   *bufio.Reader
	off  int64
	back []byte
	err  error
}

// next returns the next line with its newline; nil at EOF.
func (l *mboxLines) next() ([]byte, error) {
	if l.back != nil {
		b := l.back
		l.back = nil
		l.off += int64(len(b))
		return b, nil
	}
	line, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		full := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = l.br.ReadSlice('\n')
			full = append(full, line...)
		}
		line = full
	} else {
		line = append([]byte(nil), line...)
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("byte %d: read: %w", l.off, err)
	}
	if len(line) == 0 {
		return nil, nil
	}
	l.off += int64(len(line))
	return line, nil
}

func (l *mboxLines) unread(line []byte) {
	l.back = line
	l.off -= int64(len(line))
}

// isSeparator decides whether line (a "From " line) starts a new message. A line
// that looks like an envelope line is one when a header follows it; after a blank
// line (or at the start of the file), any "From " line followed by a header is one
// too (mboxo writers put odd things after "From ").
func isSeparator(line, nextLine []byte, afterBlank bool) bool {
	if !bytes.HasPrefix(line, []byte("From ")) {
		return false
	}
	t := bytes.TrimRight(line, "\r\n")
	headerNext := reHeaderLine.Match(nextLine) || len(nextLine) == 0
	if reEnvelope.Match(t) {
		return headerNext || afterBlank
	}
	return afterBlank && isMailMarkerLine(nextLine)
}

// isMailMarkerLine reports whether line is a header field that starts real
// messages (From:, Received:, Message-ID: ...), not any "Key: value" text.
func isMailMarkerLine(line []byte) bool {
	if !reHeaderLine.Match(line) {
		return false
	}
	key := strings.ToLower(string(line[:bytes.IndexByte(line, ':')]))
	switch key {
	case "from", "received", "return-path", "message-id", "date", "subject", "to", "delivered-to", "mime-version", "x-mozilla-status":
		return true
	}
	return false
}

// contentLength reads a Content-Length header value from a header block, -1 when
// there is none or it is not a number.
func contentLength(header []byte) int64 {
	for _, ln := range bytes.Split(header, []byte("\n")) {
		if len(ln) > 15 && bytes.EqualFold(ln[:15], []byte("content-length:")) {
			n, err := strconv.ParseInt(strings.TrimSpace(string(ln[15:])), 10, 64)
			if err == nil && n >= 0 {
				return n
			}
		}
	}
	return -1
}

// readMbox streams an mbox file (mboxo, mboxrd, mboxcl and mboxcl2; LF or CRLF; a
// UTF-8 BOM), calling fn for every message. Separators are recognised whether or not
// a blank line precedes them (see isSeparator); a message whose headers carry a
// Content-Length that lands on the next separator (or the end of the file) is cut
// by it, so a "From " line inside its body does not split it. A file whose first
// non-blank line is not a separator is rejected. fn errors stop the read.
func readMbox(path string, fn func(mboxMessage) error) error {
	f, err := archive.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readMboxFrom(f, fn)
}

func readMboxFrom(r io.Reader, fn func(mboxMessage) error) error {
	l := &mboxLines{br: bufio.NewReaderSize(r, 64<<10)}
	if bom, err := l.br.Peek(3); err == nil && bytes.Equal(bom, []byte{0xEF, 0xBB, 0xBF}) {
		l.br.Discard(3)
		l.off = 3
	}
	var (
		cur       *mboxMessage
		buf       bytes.Buffer
		num       int
		afterBlnk = true
		inHeader  bool
		started   bool
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		cur.Raw = append([]byte(nil), buf.Bytes()...)
		buf.Reset()
		m := *cur
		cur = nil
		return fn(m)
	}
	add := func(line []byte) {
		if cur == nil {
			return
		}
		if buf.Len()+len(line) > maxMessageBytes {
			if cur.err == nil {
				cur.err = fmt.Errorf("message larger than %d MiB; skipped", maxMessageBytes>>20)
			}
			return
		}
		if !inHeader {
			// mboxrd: a line ">From " (any number of '>') loses one '>'
			j := 0
			for j < len(line) && line[j] == '>' {
				j++
			}
			if j > 0 && bytes.HasPrefix(line[j:], []byte("From ")) {
				line = line[1:]
			}
		}
		buf.Write(line)
	}
	for {
		line, err := l.next()
		if err != nil {
			return err
		}
		if line == nil {
			break
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if bytes.HasPrefix(line, []byte("From ")) {
			next, err := l.next()
			if err != nil {
				return err
			}
			if next != nil {
				l.unread(next)
			}
			if isSeparator(line, next, afterBlnk || !started) {
				if err := flush(); err != nil {
					return err
				}
				num++
				cur = &mboxMessage{Num: num, Offset: l.off - int64(len(line)), envDate: envelopeDate(string(trimmed))}
				started, inHeader, afterBlnk = true, true, false
				continue
			}
		}
		if !started {
			if len(bytes.TrimSpace(line)) != 0 {
				return fmt.Errorf("byte %d: first line is not a \"From \" separator: not an mbox file (messages without separators cannot be split safely; save each as .eml or export a real mbox)", l.off-int64(len(line)))
			}
			continue
		}
		add(line)
		afterBlnk = len(trimmed) == 0
		if inHeader && len(trimmed) == 0 {
			inHeader = false
			if n := contentLength(buf.Bytes()); n > 0 && n <= maxMessageBytes {
				if body, ok := l.takeBody(n); ok {
					buf.Write(body)
					afterBlnk = true
				}
			}
		}
	}
	if !started {
		return readkit.ErrEmpty
	}
	return flush()
}

// takeBody reads n bytes of a Content-Length body when they end where the next
// message (or the file) begins; otherwise it reads nothing and returns false, and
// the body is cut at separators as usual.
func (l *mboxLines) takeBody(n int64) ([]byte, bool) {
	if l.back != nil {
		return nil, false
	}
	peek, err := l.br.Peek(int(min(n+2+5, int64(l.br.Size()))))
	if int64(len(peek)) < n && err == nil {
		// the body is larger than the buffer: read it and put it back when it does
		// not end at a separator
		body := make([]byte, n)
		k, rerr := io.ReadFull(l.br, body)
		body = body[:k]
		if rerr == nil && l.endsAtSeparator(nil) {
			l.off += int64(k)
			return body, true
		}
		l.br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(body), l.br), 64<<10)
		return nil, false
	}
	if int64(len(peek)) < n {
		return nil, false
	}
	if !l.endsAtSeparator(peek[n:]) {
		return nil, false
	}
	body := make([]byte, n)
	io.ReadFull(l.br, body)
	l.off += n
	return body, true
}

// endsAtSeparator reports whether after (the bytes following a Content-Length
// body; nil to peek them) is the end of the file or, after at most one newline, a
// "From " line.
func (l *mboxLines) endsAtSeparator(after []byte) bool {
	if after == nil {
		after, _ = l.br.Peek(7)
	}
	if len(after) == 0 {
		return true
	}
	rest := after
	for _, nl := range [][]byte{[]byte("\r\n"), []byte("\n")} {
		if bytes.HasPrefix(rest, nl) {
			rest = rest[len(nl):]
			break
		}
	}
	return len(rest) == 0 || bytes.HasPrefix(rest, []byte("From ")) || bytes.HasPrefix([]byte("From "), rest)
}

// envelopeDate reads the asctime date of an mbox "From addr date" line.
func envelopeDate(line string) time.Time {
	f := strings.Fields(line)
	if len(f) >= 7 {
		// the common form: "From addr Mon Jan  5 10:00:00 2026"
		if t, err := time.Parse(time.ANSIC, strings.Join(f[len(f)-5:], " ")); err == nil && t.Year() >= earliestMailYear {
			return t
		}
	}
	for i := 1; i+3 < len(f); i++ {
		if _, ok := monthNum(f[i]); ok {
			if t, ok := parseLooseDate(strings.Join(f[max(i-1, 1):], " ")); ok {
				return t.T
			}
			break
		}
	}
	return time.Time{}
}
