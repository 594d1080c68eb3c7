package mail

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// KindEmlx forces the Apple Mail message reader.
const KindEmlx = "emlx"

// EmlxReader reads Apple Mail's message files, .emlx and .partial.emlx: a line
// holding the message's length in bytes, the RFC 822 message of exactly that many
// bytes, then an XML property list (date-received in Unix seconds, flags). A
// .partial.emlx lacks the attachments' bodies (Mail keeps them in the Attachments
// folder beside Messages, which the runner skips as the message's parts).
type EmlxReader struct{}

func (EmlxReader) Kind() string { return KindEmlx }

func (EmlxReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	if strings.EqualFold(filepath.Ext(p), ".emlx") {
		return true
	}
	_, msg, ok := cutEmlxCount(head)
	return ok && looksLikeMailHeader(msg)
}

// cutEmlxCount splits the leading byte-count line off an .emlx file.
func cutEmlxCount(b []byte) (n int, rest []byte, ok bool) {
	line, rest, found := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSpace(line)
	if !found || len(line) == 0 || len(line) > 12 {
		return 0, nil, false
	}
	for _, c := range line {
		if c < '0' || c > '9' {
			return 0, nil, false
		}
	}
	n, err := strconv.Atoi(string(line))
	return n, rest, err == nil
}

var (
	reEmlxDate  = lazyre.New(`<key>date-received</key>\s*<(?:integer|real)>([0-9.eE+-]+)</(?:integer|real)>`)
	reEmlxFlags = lazyre.New(`<key>flags</key>\s*<integer>([0-9]+)</integer>`)
)

func (EmlxReader) Read(_ context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	b, err := readkit.ReadFileLimited(in.Path)
	if err != nil {
		rep.Fail(readkit.FileError{Path: in.Path, Err: err})
		return
	}
	n, rest, ok := cutEmlxCount(b)
	if !ok {
		rep.Fail(readkit.FileError{Path: in.Path, Err: fmt.Errorf("not an Apple Mail .emlx file: its first line is no byte count")})
		return
	}
	msg, plist := rest, []byte(nil)
	if n <= len(rest) {
		msg, plist = rest[:n], rest[n:]
	} else {
		rep.Warn(in.Path, "", fmt.Sprintf("cut short: the byte count says %d bytes, the file holds %d; read what is there", n, len(rest)))
	}
	var received time.Time
	if m := reEmlxDate.FindSubmatch(plist); m != nil {
		if f, err := strconv.ParseFloat(string(m[1]), 64); err == nil && f > 0 && f < math.MaxInt32*4 {
			received = time.Unix(int64(f), 0).UTC()
		}
	}
	if m := reEmlxFlags.FindSubmatch(plist); m != nil {
		if f, err := strconv.ParseUint(string(m[1]), 10, 64); err == nil {
			rep.Log.Debug("ingest: emlx flags", "path", in.Path, "read", f&1 != 0, "flagged", f&(1<<4) != 0)
		}
	}
	emitMail(in.Path, "", msg, mailDates{envelope: received, File: readkit.ModTime(in.Path), envelopeIs: "the date Apple Mail received it"}, KindEmlx, out, rep)
}
