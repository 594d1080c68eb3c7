package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"os"
	"strings"
	"time"

	"github.com/emersion/go-message"
	mcharset "github.com/emersion/go-message/charset"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// maxMessageBytes bounds one mail message; larger ones are reported and skipped.
const maxMessageBytes = 64 << 20

// maxMIMEDepth bounds nested multiparts.
const maxMIMEDepth = 16

// errTruncated marks a message whose MIME structure ends early.
var errTruncated = errors.New("message truncated")

// mailMsg is one parsed message waiting to be threaded.
type mailMsg struct {
	id      string   // Message-ID without brackets (synthesised when missing)
	refs    []string // References, oldest first
	replyTo string   // In-Reply-To
	date    time.Time
	seq     int    // discovery order, breaks date ties
	origin  string // "path" or "path message N"
	prov    string // "mbox" or "eml"
	msg     memtree.MessageInput
}

// parsedMail is the outcome of parsing one raw message.
type parsedMail struct {
	m     *mailMsg
	notes []string // repairs (unknown charset, ...): worth a log line, not a failure
	// bodyErr is a body decoding error: the headers were kept, the body was skipped.
	bodyErr error
}

// parseMail parses one raw RFC 5322 message (any newline convention). envDate is the
// mbox "From " line date, used when the Date header is missing or unreadable.
func parseMail(raw []byte, envDate time.Time) (*parsedMail, error) {
	raw = normalizeNewlines(raw)
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty message")
	}
	ent, err := message.Read(bytes.NewReader(raw))
	if ent == nil {
		return nil, fmt.Errorf("unreadable header block: %w", err)
	}
	pm := &parsedMail{m: &mailMsg{}}
	hd := newHeaderDecoder()
	h := ent.Header
	if h.Get("From") == "" && h.Get("Message-Id") == "" && h.Get("Subject") == "" && h.Get("Date") == "" {
		return nil, errors.New("no From, Subject, Date or Message-ID header: not a mail message")
	}

	m := pm.m
	m.id = firstMsgID(h.Get("Message-Id"))
	m.refs = msgIDs(h.Get("References"))
	m.replyTo = firstMsgID(h.Get("In-Reply-To"))
	from := hd.addresses(h.Get("From"))
	if len(from) > 0 {
		m.msg.Author = from[0].Name
		m.msg.AuthorAddr = strings.ToLower(from[0].Address)
		if m.msg.Author == "" {
			m.msg.Author = m.msg.AuthorAddr
		}
	}
	for _, a := range hd.addresses(h.Get("To")) {
		m.msg.To = append(m.msg.To, formatAddress(a))
	}
	for _, a := range hd.addresses(h.Get("Cc")) {
		m.msg.Cc = append(m.msg.Cc, formatAddress(a))
	}
	m.msg.Subject = strings.TrimSpace(stripControls(hd.text(h.Get("Subject"))))
	if d, derr := parseMailDate(h.Get("Date")); derr == nil {
		m.date = d
	} else if !envDate.IsZero() {
		m.date = envDate
		pm.notes = append(pm.notes, fmt.Sprintf("Date header %q unreadable; used the mbox separator date", h.Get("Date")))
	} else {
		pm.notes = append(pm.notes, fmt.Sprintf("Date header %q unreadable; message has no time", h.Get("Date")))
	}
	if !m.date.IsZero() {
		m.msg.TimestampMS = m.date.UnixMilli()
	}
	if m.id == "" {
		sum := sha256.Sum256(raw)
		m.id = "noid-" + hex.EncodeToString(sum[:12]) + "@openhuman.invalid"
		pm.notes = append(pm.notes, "no Message-ID; synthesised "+m.id)
	}
	m.msg.Ref = m.id

	var acc bodyAcc
	if err != nil && message.IsUnknownCharset(err) {
		acc.unknownCharset(h)
	} else if err != nil && message.IsUnknownEncoding(err) {
		acc.notes = append(acc.notes, "unknown Content-Transfer-Encoding "+h.Get("Content-Transfer-Encoding")+"; body read as it is")
	}
	text, berr := acc.walk(ent, 0, err != nil && message.IsUnknownCharset(err))
	m.msg.Attachments = acc.attachments
	m.msg.Text = cleanMailBody(text)
	pm.notes = append(pm.notes, acc.notes...)
	if hd.unknown != "" {
		pm.notes = append(pm.notes, "unknown charset "+hd.unknown+" in a header; decoded as UTF-8/Windows-1252")
	}
	if errors.Is(berr, errTruncated) {
		return nil, berr
	}
	pm.bodyErr = berr
	return pm, nil
}

// formatAddress renders an address as "Name <addr>" or the bare address.
func formatAddress(a *mail.Address) string {
	if a.Name == "" {
		return strings.ToLower(a.Address)
	}
	return a.Name + " <" + strings.ToLower(a.Address) + ">"
}

// parseMailDate reads an RFC 5322 date, tolerating a trailing comment and a few
// common deviations.
func parseMailDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("no Date header")
	}
	if t, err := mail.ParseDate(s); err == nil {
		return t, nil
	}
	if i := strings.IndexByte(s, '('); i > 0 {
		if t, err := mail.ParseDate(strings.TrimSpace(s[:i])); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02 15:04:05 -0700", "Mon, 2 Jan 2006 15:04:05 MST", time.ANSIC} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("unreadable date %q", s)
}

// msgIDs extracts every <id> from a References-style header, without brackets.
func msgIDs(s string) []string {
	var out []string
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			break
		}
		if id := strings.TrimSpace(s[i+1 : i+j]); id != "" {
			out = append(out, id)
		}
		s = s[i+j+1:]
	}
	if len(out) == 0 {
		// bare ids without brackets
		for _, f := range strings.Fields(s) {
			if strings.Contains(f, "@") {
				out = append(out, strings.Trim(f, "<>,"))
			}
		}
	}
	return out
}

func firstMsgID(s string) string {
	ids := msgIDs(s)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// headerDecoder decodes RFC 2047 words, falling back for unknown charsets.
type headerDecoder struct {
	dec     *mime.WordDecoder
	unknown string // first unknown charset seen
}

func newHeaderDecoder() *headerDecoder {
	hd := &headerDecoder{}
	hd.dec = &mime.WordDecoder{CharsetReader: func(cs string, in io.Reader) (io.Reader, error) {
		if r, err := mcharset.Reader(cs, in); err == nil {
			return r, nil
		}
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, err
		}
		if hd.unknown == "" {
			hd.unknown = cs
		}
		return strings.NewReader(decodeFallback(b)), nil
	}}
	return hd
}

// text decodes an unstructured header (Subject).
func (hd *headerDecoder) text(s string) string {
	out, err := hd.dec.DecodeHeader(s)
	if err != nil {
		return decodeFallback([]byte(s))
	}
	return sanitizeUTF8([]byte(out))
}

// addresses parses an address list; an unparsable list degrades to bare addresses
// found in it rather than failing the message.
func (hd *headerDecoder) addresses(s string) []*mail.Address {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	p := mail.AddressParser{WordDecoder: hd.dec}
	if list, err := p.ParseList(s); err == nil {
		for _, a := range list {
			a.Name = strings.TrimSpace(stripControls(sanitizeUTF8([]byte(a.Name))))
		}
		return list
	}
	var out []*mail.Address
	for _, part := range strings.Split(s, ",") {
		if a, err := p.Parse(part); err == nil {
			out = append(out, a)
			continue
		}
		for _, f := range strings.Fields(part) {
			f = strings.Trim(f, "<>\"'")
			if strings.Contains(f, "@") {
				out = append(out, &mail.Address{Address: f})
			}
		}
	}
	return out
}

// bodyAcc collects the readable text and the attachments of a MIME tree.
type bodyAcc struct {
	attachments []abi.Attachment
	notes       []string
}

func (acc *bodyAcc) unknownCharset(h message.Header) {
	_, params, _ := h.ContentType()
	acc.notes = append(acc.notes, fmt.Sprintf("unknown charset %q; body decoded as UTF-8/Windows-1252", params["charset"]))
}

// walk returns the best text of entity e (text/plain preferred, HTML converted).
// rawCharset is true when go-message could not convert e's charset.
func (acc *bodyAcc) walk(e *message.Entity, depth int, rawCharset bool) (string, error) {
	if depth > maxMIMEDepth {
		return "", fmt.Errorf("MIME parts nested deeper than %d", maxMIMEDepth)
	}
	mt, params, cterr := e.Header.ContentType()
	if cterr != nil || mt == "" {
		mt = "text/plain"
	}
	disp, dparams, _ := e.Header.ContentDisposition()
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := e.MultipartReader()
		if mr == nil {
			return "", fmt.Errorf("multipart part without a boundary")
		}
		var plain, html, other []string
		var firstErr error
		for i := 1; ; i++ {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			partRaw := err != nil && message.IsUnknownCharset(err)
			if partRaw {
				acc.unknownCharset(part.Header)
			} else if err != nil && !message.IsUnknownEncoding(err) || part == nil {
				return "", fmt.Errorf("%w: MIME part %d of %s has no end (%v); message skipped", errTruncated, i, mt, err)
			}
			pmt, _, _ := part.Header.ContentType()
			txt, perr := acc.walk(part, depth+1, partRaw)
			if perr != nil && firstErr == nil {
				firstErr = perr
			}
			switch {
			case txt == "":
			case pmt == "text/html":
				html = append(html, txt)
			case pmt == "text/plain" || pmt == "":
				plain = append(plain, txt)
			default:
				other = append(other, txt)
			}
		}
		if mt == "multipart/alternative" {
			switch {
			case len(plain) > 0:
				return plain[0], firstErr
			case len(html) > 0:
				return html[0], firstErr
			case len(other) > 0:
				return other[0], firstErr
			}
			return "", firstErr
		}
		return joinNonEmpty(plain, html, other), firstErr
	}
	isText := mt == "text/plain" || mt == "text/html"
	if disp == "attachment" || (!isText && mt != "message/rfc822") || (name != "" && disp != "inline") || mt == "message/rfc822" {
		if mt == "text/calendar" && name == "" && disp != "attachment" {
			_, _ = io.Copy(io.Discard, e.Body)
			return "", nil
		}
		n, err := io.Copy(io.Discard, e.Body)
		if name == "" {
			name = "unnamed"
			if mt == "message/rfc822" {
				name = "forwarded message"
			}
		}
		acc.attachments = append(acc.attachments, abi.Attachment{Name: sanitizeUTF8([]byte(name)), ContentType: mt, Size: int(n)})
		if err != nil {
			return "", fmt.Errorf("attachment %q: %w", name, err)
		}
		return "", nil
	}
	b, err := io.ReadAll(io.LimitReader(e.Body, maxMessageBytes))
	var s string
	if rawCharset {
		s = decodeFallback(b)
	} else {
		s = sanitizeUTF8(b)
	}
	s = stripControls(string(normalizeNewlines([]byte(s))))
	if mt == "text/html" {
		s = htmlToText(s)
	}
	if err != nil {
		enc := e.Header.Get("Content-Transfer-Encoding")
		return "", fmt.Errorf("%s body (%s): %w; headers kept, body skipped", mt, strings.ToLower(enc), err)
	}
	return s, nil
}

func joinNonEmpty(lists ...[]string) string {
	var parts []string
	for _, l := range lists {
		for _, s := range l {
			if strings.TrimSpace(s) != "" {
				parts = append(parts, strings.TrimSpace(s))
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// mboxMessage is one raw message cut from an mbox file.
type mboxMessage struct {
	num     int   // 1-based
	offset  int64 // byte offset of its "From " line
	envDate time.Time
	raw     []byte
	err     error // set when the message could not be cut out whole
}

// readMbox streams an mboxrd file, calling fn for every message. A file whose first
// non-blank line is not a "From " separator is rejected (not an mbox, or messages
// run together without separators). fn errors stop the read.
func readMbox(path string, fn func(mboxMessage) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var (
		cur      *mboxMessage
		buf      bytes.Buffer
		off      int64
		num      int
		prevBlnk = true
		started  bool
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		cur.raw = append([]byte(nil), buf.Bytes()...)
		buf.Reset()
		m := *cur
		cur = nil
		return fn(m)
	}
	for {
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			// a long line: gather it whole
			full := append([]byte(nil), line...)
			for rerr == bufio.ErrBufferFull {
				line, rerr = br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("byte %d: read: %w", off, rerr)
		}
		if n := len(line); n > 0 {
			trimmed := bytes.TrimRight(line, "\r\n")
			switch {
			case bytes.HasPrefix(line, []byte("From ")) && prevBlnk:
				if err := flush(); err != nil {
					return err
				}
				num++
				cur = &mboxMessage{num: num, offset: off, envDate: envelopeDate(string(trimmed))}
				started = true
			case !started:
				if len(bytes.TrimSpace(line)) != 0 {
					return fmt.Errorf("byte %d: first line is not a \"From \" separator: not an mbox file (messages without separators cannot be split safely; save each as .eml or export a real mbox)", off)
				}
			default:
				if cur != nil && buf.Len()+len(line) > maxMessageBytes {
					if cur.err == nil {
						cur.err = fmt.Errorf("message larger than %d bytes; skipped", maxMessageBytes)
					}
				} else if cur != nil {
					// mboxrd: a line ">From " (any number of '>') loses one '>'
					j := 0
					for j < len(line) && line[j] == '>' {
						j++
					}
					if j > 0 && bytes.HasPrefix(line[j:], []byte("From ")) {
						line = line[1:]
					}
					buf.Write(line)
				}
			}
			prevBlnk = len(trimmed) == 0
			off += int64(n)
		}
		if rerr == io.EOF {
			break
		}
	}
	if !started {
		return errEmpty
	}
	return flush()
}

// envelopeDate reads the asctime date of an mbox "From addr date" line.
func envelopeDate(line string) time.Time {
	f := strings.Fields(line)
	if len(f) < 7 {
		return time.Time{}
	}
	t, err := time.Parse(time.ANSIC, strings.Join(f[len(f)-5:], " "))
	if err != nil {
		return time.Time{}
	}
	return t
}
