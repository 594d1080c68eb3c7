package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"
	mcharset "github.com/emersion/go-message/charset"
	"github.com/emersion/go-message/textproto"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// maxMessageBytes bounds one mail message; larger ones are reported and skipped.
const maxMessageBytes = 64 << 20

// maxMIMEDepth bounds nested multiparts.
const maxMIMEDepth = 16

// parsedMail is the outcome of parsing one raw message.
type parsedMail struct {
	M *readkit.MailMessage
	// notes are repairs worth a debug line (a folded header fixed, a synthesised
	// Message-ID); warnings are guesses and partial losses the person should see.
	notes, warnings []string
	// bodyErr is a body decoding error: the headers (and any text read before the
	// error) were kept.
	bodyErr error
	// clean is how long cleaning the body took.
	clean time.Duration
}

// mailDates are the fallbacks parseMail uses when a message has no readable Date
// header, in order after its Received headers: the mbox separator (or Maildir file
// name) date, then the file's modification time.
type mailDates struct {
	envelope, File time.Time
	// envelopeIs names where envelope comes from in a warning ("" = the mbox
	// separator date).
	envelopeIs string
}

// parseMail parses one raw RFC 5322 message (any newline convention; a BOM or a
// leading mbox envelope line allowed).
func parseMail(raw []byte, dates mailDates) (*parsedMail, error) {
	raw = readkit.NormalizeNewlines(raw)
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty message")
	}
	pm := &parsedMail{M: &readkit.MailMessage{}}
	fixed, env, notes := repairHeader(raw)
	if dates.envelope.IsZero() {
		dates.envelope = env
	}
	pm.notes = append(pm.notes, notes...)
	ent, err := message.ReadWithOptions(bytes.NewReader(fixed), &message.ReadOptions{MaxHeaderBytes: maxMessageBytes})
	if ent == nil {
		return nil, fmt.Errorf("unreadable header block: %w", err)
	}
	hd := newHeaderDecoder()
	h := ent.Header
	if h.Len() == 0 {
		return nil, errors.New("no header fields: not a mail message")
	}
	if h.Get("From") == "" && h.Get("Message-Id") == "" && h.Get("Subject") == "" && h.Get("Date") == "" {
		pm.notes = append(pm.notes, "no From, Subject, Date or Message-ID header")
	}

	m := pm.M
	m.ID = firstMsgID(h.Get("Message-Id"))
	m.Refs = msgIDs(h.Get("References"))
	m.ReplyTo = firstMsgID(h.Get("In-Reply-To"))
	m.Msg.Author, m.Msg.AuthorAddr = hd.sender(h.Get("From"))
	if m.Msg.Author == "" && m.Msg.AuthorAddr == "" {
		m.Msg.Author, m.Msg.AuthorAddr = hd.sender(h.Get("Sender"))
	}
	for _, a := range hd.addresses(h.Get("To")) {
		m.Msg.To = append(m.Msg.To, formatAddress(a))
	}
	for _, a := range hd.addresses(h.Get("Cc")) {
		m.Msg.Cc = append(m.Msg.Cc, formatAddress(a))
	}
	m.Msg.Subject = strings.TrimSpace(readkit.StripControls(hd.text(h.Get("Subject"))))
	m.Date, m.DateGuessed, pm.warnings = messageDate(h, dates, pm.warnings)
	m.Msg.TimestampMS = m.Date.UnixMilli()
	if m.ID == "" {
		sum := sha256.Sum256(raw)
		m.ID = "noid-" + hex.EncodeToString(sum[:12]) + "@openhuman.invalid"
		if v := strings.TrimSpace(h.Get("Message-Id")); v != "" {
			pm.notes = append(pm.notes, fmt.Sprintf("Message-ID %q is not one; synthesised %s", v, m.ID))
		} else {
			pm.notes = append(pm.notes, "no Message-ID; synthesised "+m.ID)
		}
	}
	m.Msg.Ref = m.ID

	var acc bodyAcc
	if err != nil && message.IsUnknownCharset(err) {
		acc.unknownCharset(h)
	} else if err != nil && message.IsUnknownEncoding(err) {
		acc.warnings = append(acc.warnings, "unknown Content-Transfer-Encoding "+h.Get("Content-Transfer-Encoding")+"; body read as it is")
	}
	text, berr := acc.walk(ent, 0, err != nil && message.IsUnknownCharset(err))
	m.Msg.Attachments = acc.attachments
	t0 := time.Now()
	m.Msg.Text = CleanMailBody(text)
	pm.clean = time.Since(t0)
	pm.warnings = append(pm.warnings, acc.warnings...)
	if hd.unknown != "" {
		pm.warnings = append(pm.warnings, "unknown charset "+hd.unknown+" in a header; decoded as UTF-8/Windows-1252")
	}
	pm.bodyErr = berr
	return pm, nil
}

// messageDate picks a message's time: its Date header (read leniently), else its
// newest Received header, else the envelope date, else the file time; guessed is
// true for all but the first. It never returns a time before earliestMailYear
// while any source of a date is left.
func messageDate(h message.Header, dates mailDates, warnings []string) (t time.Time, guessed bool, _ []string) {
	raw := strings.TrimSpace(h.Get("Date"))
	if d, ok := parseLooseDate(raw); ok {
		if d.zoneGuessed {
			warnings = append(warnings, fmt.Sprintf("Date header %q names no zone; read as UTC", raw))
		}
		return d.T, false, warnings
	}
	what := "no Date header"
	if raw != "" {
		what = fmt.Sprintf("Date header %q unreadable", raw)
	}
	for _, rcv := range h.Values("Received") {
		if d, ok := receivedDate(rcv); ok {
			return d.T, true, append(warnings, what+"; used the time the message was received")
		}
	}
	if !dates.envelope.IsZero() && dates.envelope.Year() >= earliestMailYear {
		from := dates.envelopeIs
		if from == "" {
			from = "the mbox separator date"
		}
		return dates.envelope, true, append(warnings, what+"; used "+from)
	}
	if !dates.File.IsZero() {
		return dates.File, true, append(warnings, what+"; used the file time")
	}
	return time.Now().UTC(), true, append(warnings, what+"; used the time of this ingest")
}

// formatAddress renders an address as "Name <addr>" or the bare address.
func formatAddress(a *mail.Address) string {
	a = &mail.Address{Name: readkit.SanitizeUTF8([]byte(a.Name)), Address: readkit.SanitizeUTF8([]byte(a.Address))}
	if a.Name == "" {
		return strings.ToLower(a.Address)
	}
	return a.Name + " <" + strings.ToLower(a.Address) + ">"
}

// headerDecoder decodes RFC 2047 words, falling back for unknown charsets.
type headerDecoder struct {
	dec     *mime.WordDecoder
	unknown string // first unknown charset seen
}

func newHeaderDecoder() *headerDecoder {
	hd := &headerDecoder{}
	hd.dec = &mime.WordDecoder{CharsetReader: func(cs string, in io.Reader) (io.Reader, error) {
		if r, err := lenientCharsetReader(cs, in); err == nil {
			return r, nil
		}
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, err
		}
		if hd.unknown == "" {
			hd.unknown = cs
		}
		return strings.NewReader(readkit.DecodeFallback(b)), nil
	}}
	return hd
}

// lenientCharsetReader converts a body or an encoded word from its declared
// charset to UTF-8, except when the bytes are valid UTF-8 with non-ASCII characters
// in them: then the label is wrong (a GB2312 or Latin-1 label on UTF-8 text is
// common, and the converse almost never forms valid UTF-8) and the bytes are kept.
// An unknown charset is an error, before anything is read from in.
func lenientCharsetReader(cs string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(cs), `"'`)) {
	case "utf-8", "utf8", "us-ascii", "ascii", "":
		return in, nil
	}
	if err := readkit.CheckCharset(cs); err != nil {
		return nil, err
	}
	return &lazyCharset{cs: cs, in: in}, nil
}

// lazyCharset decodes its input on the first Read (see lenientCharsetReader).
type lazyCharset struct {
	cs  string
	in  io.Reader
	out io.Reader
}

func (l *lazyCharset) Read(p []byte) (int, error) {
	if l.out == nil {
		b, err := io.ReadAll(io.LimitReader(l.in, maxMessageBytes))
		if utf8.Valid(b) && hasNonASCII(b) {
			l.out = bytes.NewReader(b)
		} else if r, cerr := mcharset.Reader(l.cs, bytes.NewReader(b)); cerr == nil {
			l.out = r
		} else {
			l.out = strings.NewReader(readkit.DecodeFallback(b))
		}
		if err != nil {
			l.out = io.MultiReader(l.out, errReader{err})
		}
	}
	return l.out.Read(p)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

func init() {
	// go-message converts bodies with this function; ours keeps mislabelled UTF-8.
	message.CharsetReader = lenientCharsetReader
}

// text decodes an unstructured header (Subject).
func (hd *headerDecoder) text(s string) string {
	out, err := hd.dec.DecodeHeader(s)
	if err != nil {
		return readkit.DecodeFallback([]byte(s))
	}
	return readkit.SanitizeUTF8([]byte(out))
}

// sender reads a From (or Sender) header into a display name and an address:
// RFC 5322 forms with encoded words, the Pipermail "user at host (Name)" form, and,
// when nothing in it is an address, the decoded text as the name. The name is the
// address when the header names none.
func (hd *headerDecoder) sender(s string) (name, addr string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", ""
	}
	if a, ok := pipermailSender(hd.text(s)); ok {
		name, addr = a.Name, strings.ToLower(a.Address)
	} else if list := hd.addresses(s); len(list) > 0 {
		name, addr = list[0].Name, strings.ToLower(list[0].Address)
	} else {
		name = strings.TrimSpace(strings.Trim(readkit.StripControls(hd.text(s)), `"'`))
	}
	name = strings.TrimSpace(strings.Trim(name, `"'`))
	addr = readkit.SanitizeUTF8([]byte(addr))
	if name == "" {
		name = addr
	}
	return readkit.SanitizeUTF8([]byte(name)), addr
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
			a.Name = strings.TrimSpace(readkit.StripControls(readkit.SanitizeUTF8([]byte(a.Name))))
		}
		return list
	}
	var out []*mail.Address
	for _, part := range strings.Split(s, ",") {
		if a, err := p.Parse(part); err == nil {
			a.Name = strings.TrimSpace(readkit.StripControls(readkit.SanitizeUTF8([]byte(a.Name))))
			out = append(out, a)
			continue
		}
		if a, ok := pipermailSender(part); ok {
			out = append(out, a)
			continue
		}
		var name []string
		var addr string
		for _, f := range strings.Fields(part) {
			t := strings.Trim(f, "<>\"'(),;")
			if addr == "" && strings.Contains(t, "@") {
				addr = t
			} else if t != "" {
				name = append(name, t)
			}
		}
		if addr != "" {
			out = append(out, &mail.Address{Name: strings.TrimSpace(readkit.StripControls(hd.text(strings.Join(name, " ")))), Address: addr})
		}
	}
	return out
}

// bodyAcc collects the readable text and the attachments of a MIME tree.
type bodyAcc struct {
	attachments []abi.Attachment
	warnings    []string
}

func (acc *bodyAcc) unknownCharset(h message.Header) {
	_, params, _ := h.ContentType()
	acc.warnings = append(acc.warnings, fmt.Sprintf("unknown charset %q; body decoded as UTF-8/Windows-1252", params["charset"]))
}

// walk returns the best text of entity e (text/plain preferred, HTML converted).
// rawCharset is true when the charset of e could not be converted. A multipart
// that breaks off (no closing boundary, a part cut short, a part whose headers
// cannot be read) keeps every part read before the break; the error says what was
// lost.
func (acc *bodyAcc) walk(e *message.Entity, depth int, rawCharset bool) (string, error) {
	if depth > maxMIMEDepth {
		return "", fmt.Errorf("MIME parts nested deeper than %d: their text is not read", maxMIMEDepth)
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
		body, rerr := io.ReadAll(io.LimitReader(e.Body, maxMessageBytes))
		boundary := params["boundary"]
		if boundary == "" {
			// no boundary: the body is all one part; read it as text
			s := readkit.StripControls(string(readkit.NormalizeNewlines([]byte(readkit.DecodeFallback(body)))))
			acc.warnings = append(acc.warnings, mt+" without a boundary: body read as text")
			return s, rerr
		}
		mr := textproto.NewMultipartReader(bytes.NewReader(body), boundary)
		var plain, html, other []string
		var firstErr error
		n := 0
		for i := 1; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			var part *message.Entity
			if err == nil {
				part, err = message.New(message.Header{Header: p.Header}, p)
			}
			partRaw := err != nil && message.IsUnknownCharset(err)
			if partRaw {
				acc.unknownCharset(part.Header)
			} else if err != nil && !message.IsUnknownEncoding(err) || part == nil {
				if n == 0 {
					// Nothing could be split off (a nested multipart reusing its
					// parent's boundary, a boundary that never appears): keep the
					// body's text as it is.
					if txt := unsplitMultipart(body, boundary); txt != "" {
						acc.warnings = append(acc.warnings, fmt.Sprintf("%s has no readable parts (%v): its body is kept as text", mt, err))
						return txt, nil
					}
					break
				}
				if endsAfterLastBoundary(body, boundary) || strings.HasSuffix(err.Error(), "EOF") {
					// the last boundary lacks its closing "--": nothing follows it
					acc.warnings = append(acc.warnings, mt+" has no closing boundary; every part before it is kept")
					break
				}
				lost := fmt.Errorf("MIME part %d of %s cannot be read (%s): kept the %d part(s) before it, the rest of the message is lost", i, mt, readkit.Clip(err.Error(), 120), n)
				if firstErr == nil {
					firstErr = lost
				}
				break
			}
			n++
			pmt, _, _ := part.Header.ContentType()
			if part.Header.Len() == 0 {
				// a closing boundary without its "--": nothing follows it
				if b, _ := io.ReadAll(part.Body); len(bytes.TrimSpace(b)) == 0 {
					continue
				} else {
					part.Body = bytes.NewReader(b)
				}
			}
			txt, perr := acc.walk(part, depth+1, partRaw)
			if perr != nil && firstErr == nil {
				firstErr = fmt.Errorf("MIME part %d: %w", i, perr)
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
		if errors.Is(rerr, io.ErrUnexpectedEOF) {
			acc.warnings = append(acc.warnings, mt+" ends without its closing boundary; what it holds is kept")
		} else if rerr != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s body cut short: %w", mt, rerr)
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
	if mt == "message/rfc822" && disp != "attachment" {
		// a forwarded or digest message: its text is what the person reads
		b, err := io.ReadAll(io.LimitReader(e.Body, maxMessageBytes))
		if err == nil {
			if inner, perr := parseMail(b, mailDates{}); perr == nil {
				acc.attachments = append(acc.attachments, inner.M.Msg.Attachments...)
				return forwardedText(inner.M), inner.bodyErr
			}
		}
		acc.attachments = append(acc.attachments, abi.Attachment{Name: "forwarded message", ContentType: mt, Size: len(b)})
		return "", nil
	}
	if disp == "attachment" || !isText || (name != "" && disp != "inline") {
		if mt == "text/calendar" && name == "" && disp != "attachment" {
			_, _ = io.Copy(io.Discard, e.Body)
			return "", nil
		}
		n, err := io.Copy(io.Discard, e.Body)
		if name == "" {
			name = "unnamed"
		}
		acc.attachments = append(acc.attachments, abi.Attachment{Name: readkit.SanitizeUTF8([]byte(name)), ContentType: mt, Size: int(n)})
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return "", fmt.Errorf("attachment %q (%s) ends without its closing boundary: the file is cut short after %d bytes (attachments are named, not stored; the text is kept)", name, mt, n)
		}
		if err != nil {
			return "", fmt.Errorf("attachment %q is cut short: %w", name, err)
		}
		return "", nil
	}
	b, err := io.ReadAll(io.LimitReader(e.Body, maxMessageBytes))
	var s string
	if rawCharset {
		s = readkit.DecodeFallback(b)
	} else {
		s = readkit.SanitizeUTF8(b)
	}
	s = readkit.StripControls(string(readkit.NormalizeNewlines([]byte(s))))
	if mt == "text/html" {
		s = readkit.HTMLToText(s)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) && strings.TrimSpace(s) != "" {
		acc.warnings = append(acc.warnings, mt+" part ends without its closing boundary; its text is kept")
		return s, nil
	}
	if err != nil {
		enc := strings.ToLower(e.Header.Get("Content-Transfer-Encoding"))
		if strings.TrimSpace(s) != "" {
			return s, fmt.Errorf("%s body (%s) breaks off: %w; the text before the break is kept", mt, enc, err)
		}
		return "", fmt.Errorf("%s body (%s): %w; headers kept, body lost", mt, enc, err)
	}
	return s, nil
}

// endsAfterLastBoundary reports whether only blank space follows the last
// "--boundary" line of body.
func endsAfterLastBoundary(body []byte, boundary string) bool {
	i := bytes.LastIndex(body, []byte("--"+boundary))
	return i >= 0 && len(bytes.TrimSpace(body[i+2+len(boundary):])) == 0
}

// unsplitMultipart returns the text of a multipart body that could not be split
// into parts: the boundary lines and the part header blocks after them removed.
func unsplitMultipart(body []byte, boundary string) string {
	lines := strings.Split(string(readkit.NormalizeNewlines([]byte(readkit.DecodeFallback(body)))), "\n")
	var out []string
	inHeader := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "--"+boundary) {
			inHeader = true
			continue
		}
		if inHeader {
			if t == "" {
				inHeader = false
				continue
			}
			if reHeaderLine.MatchString(l) || l[0] == ' ' || l[0] == '\t' {
				continue
			}
			inHeader = false
		}
		out = append(out, l)
	}
	return strings.TrimSpace(readkit.StripControls(strings.Join(out, "\n")))
}

// forwardedText renders an attached message as the text a mail client shows for
// it: a short header and its body.
func forwardedText(m *readkit.MailMessage) string {
	var b strings.Builder
	b.WriteString("[attached message]\n")
	if m.Msg.Author != "" {
		fmt.Fprintf(&b, "From: %s\n", m.Msg.Author)
	}
	if !m.DateGuessed {
		fmt.Fprintf(&b, "Date: %s\n", m.Date.Format("2006-01-02 15:04 -0700"))
	}
	if m.Msg.Subject != "" {
		fmt.Fprintf(&b, "Subject: %s\n", m.Msg.Subject)
	}
	if t := strings.TrimSpace(m.Msg.Text); t != "" {
		b.WriteString("\n" + t)
	}
	return b.String()
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
