package notes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindEnex forces the Evernote export reader.
const KindEnex = "enex"

// EnexReader reads Evernote exports (.enex): an <en-export> of <note> elements,
// each with a title, its ENML content (XHTML in a CDATA section, or escaped as
// XML text), created and updated times ("20130730T205204Z"), tags, attributes
// (author) and resources (base64 attachments: their file names and types are
// kept, their data skipped). Each note becomes one document, its ENML turned to
// text. The file is streamed by enexScan, never held whole: a note's content
// is bounded by MaxFileBytes (a larger note is named and skipped, the others
// read), a resource's data is skipped as it is read, and no entity a DOCTYPE
// declares is expanded. Content is read as XML text whatever its exporter did
// with CDATA: a CDATA section opened inside another is closed by its own
// "]]>", and the content ends only at "</content>", so the text after an
// inner "]]>" is kept.
type EnexReader struct{}

func (EnexReader) Kind() string { return KindEnex }

func (EnexReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	if strings.EqualFold(filepath.Ext(p), ".enex") {
		return true
	}
	return bytes.Contains(head[:min(len(head), 1024)], []byte("<en-export"))
}

// enexNote is one note as read.
type enexNote struct {
	Title, Content, Author string
	created, updated       time.Time
	tags                   []string
	atts                   []abi.Attachment
	tooBig                 bool // its content passed MaxFileBytes
}

// enexFieldBytes bounds a note's small fields (title, tag, time, author, a
// resource's name): what passes it is cut.
const enexFieldBytes = 64 << 10

func (EnexReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	f, err := archive.Open(in.Path)
	if err != nil {
		rep.Fail(readkit.FileError{Path: in.Path, Err: err})
		return
	}
	defer f.Close()
	s := &enexScan{R: bufio.NewReaderSize(f, 64<<10)}
	num, sawExport := 0, false
	for {
		if ctx.Err() != nil {
			return
		}
		tag, ok := s.NextTag()
		if !ok {
			break
		}
		if tag.End {
			continue
		}
		switch tag.Name {
		case "en-export":
			sawExport = true
			continue
		case "note":
		default:
			continue
		}
		if tag.SelfClosing {
			continue
		}
		num++
		where := fmt.Sprintf("note %d (byte %d)", num, s.off)
		n := s.Note(ctx)
		if s.err != nil && !errors.Is(s.err, io.EOF) {
			rep.Fail(readkit.FileError{Path: in.Path, Where: where, Err: fmt.Errorf("Evernote note: %w; the notes after it are not read", s.err)})
			return
		}
		if n.tooBig {
			rep.Fail(readkit.FileError{Path: in.Path, Where: where, Err: fmt.Errorf("note content larger than %d MiB: not ingested; split it (the other notes are read)", readkit.MaxFileBytes>>20)})
			continue
		}
		src, err := enexSource(n, in, num)
		if errors.Is(err, readkit.ErrEmpty) {
			rep.Warn(in.Path, where, "empty note: nothing to ingest")
			continue
		}
		for _, w := range n.warnings() {
			rep.Warn(in.Path, where, w)
		}
		src.Origin = in.Path + " " + where
		out.Source(*src)
		if s.err != nil {
			break
		}
	}
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		rep.Fail(readkit.FileError{Path: in.Path, Where: fmt.Sprintf("byte %d", s.off), Err: fmt.Errorf("Evernote export: %w; the notes after it are not read", s.err)})
		return
	}
	if !sawExport {
		rep.Fail(readkit.FileError{Path: in.Path, Err: errors.New("not an Evernote export: no <en-export> element")})
	} else if num == 0 {
		rep.Warn(in.Path, "", "Evernote export without notes: nothing to ingest")
	}
}

// enexScan reads an .enex file as a stream of tags and text, bounded in memory
// whatever the file holds.
type enexScan struct {
	R   *bufio.Reader
	off int64 // bytes read
	err error // the first read error (io.EOF at the end)
}

// enexTag is a start or end tag; name is its local name.
type enexTag struct {
	Name             string
	End, SelfClosing bool
}

func (s *enexScan) byte() (byte, bool) {
	if s.err != nil {
		return 0, false
	}
	c, err := s.R.ReadByte()
	if err != nil {
		s.err = err
		return 0, false
	}
	s.off++
	return c, true
}

// ahead reports whether the next bytes are lit, and consumes them if so.
func (s *enexScan) ahead(lit string) bool {
	b, _ := s.R.Peek(len(lit))
	if string(b) != lit {
		return false
	}
	n, _ := s.R.Discard(len(lit))
	s.off += int64(n)
	return true
}

// skipPast reads up to and including lit, holding no more than the reader's
// buffer.
func (s *enexScan) skipPast(lit string) {
	last := lit[len(lit)-1]
	var tail []byte // the bytes read before the current slice, up to len(lit)-1
	keep := func(b []byte) {
		if n := len(lit) - 1; len(b) >= n {
			tail = append(tail[:0], b[len(b)-n:]...)
		} else {
			tail = append(tail, b...)
			if len(tail) > n {
				tail = tail[len(tail)-n:]
			}
		}
	}
	for {
		b, err := s.R.ReadSlice(last)
		s.off += int64(len(b))
		switch {
		case err == bufio.ErrBufferFull:
			keep(b)
			continue
		case err != nil:
			s.err = err
			return
		}
		if len(b) >= len(lit) {
			if string(b[len(b)-len(lit):]) == lit {
				return
			}
		} else if w := append(append([]byte(nil), tail...), b...); bytes.HasSuffix(w, []byte(lit)) {
			return
		}
		keep(b)
	}
}

// NextTag skips text and comments, processing instructions, DOCTYPEs and
// stray CDATA up to the next start or end tag.
func (s *enexScan) NextTag() (enexTag, bool) {
	for {
		s.skipPast("<")
		if s.err != nil {
			return enexTag{}, false
		}
		if t, ok := s.markup(); ok {
			return t, true
		}
		if s.err != nil {
			return enexTag{}, false
		}
	}
}

// markup reads what follows a '<': a tag (ok), or a comment, processing
// instruction, DOCTYPE or CDATA section, skipped.
func (s *enexScan) markup() (enexTag, bool) {
	switch {
	case s.ahead("!--"):
		s.skipPast("-->")
		return enexTag{}, false
	case s.ahead("![CDATA["):
		s.skipPast("]]>")
		return enexTag{}, false
	case s.ahead("?"):
		s.skipPast("?>")
		return enexTag{}, false
	case s.ahead("!"):
		// <!DOCTYPE ...> with an internal subset in brackets: skipped, never expanded
		depth := 0
		for {
			c, ok := s.byte()
			if !ok {
				return enexTag{}, false
			}
			switch {
			case c == '[':
				depth++
			case c == ']':
				depth--
			case c == '>' && depth <= 0:
				return enexTag{}, false
			}
		}
	}
	var t enexTag
	var name []byte
	inName, quote := true, byte(0)
	prev := byte(0)
	for n := 0; ; n++ {
		c, ok := s.byte()
		if !ok {
			return enexTag{}, false
		}
		if n > enexFieldBytes {
			// a tag this long is no Evernote tag: read on to its end
			inName = false
		}
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			t.SelfClosing = prev == '/'
			if len(name) > 0 && name[0] == '/' {
				t.End, name = true, name[1:]
			}
			if i := bytes.LastIndexByte(name, ':'); i >= 0 {
				name = name[i+1:]
			}
			t.Name = string(name)
			return t, true
		case inName && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/' && len(name) > 0):
			inName = false
		case inName:
			name = append(name, c)
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			prev = c
		}
	}
}

// Note reads one <note>'s elements up to its end tag.
func (s *enexScan) Note(ctx context.Context) *enexNote {
	n := &enexNote{}
	for ctx.Err() == nil {
		t, ok := s.NextTag()
		if !ok {
			return n
		}
		if t.End {
			if t.Name == "note" {
				return n
			}
			continue
		}
		if t.SelfClosing {
			continue
		}
		switch t.Name {
		case "content":
			text, over := s.text("content", readkit.MaxFileBytes)
			n.Content, n.tooBig = text, over
		case "title", "created", "updated", "tag", "author":
			v, _ := s.text(t.Name, enexFieldBytes)
			v = strings.TrimSpace(v)
			switch t.Name {
			case "title":
				n.Title = v
			case "created":
				n.created, _ = parseEnexTime(v)
			case "updated":
				n.updated, _ = parseEnexTime(v)
			case "tag":
				if v != "" {
					n.tags = append(n.tags, v)
				}
			case "author":
				n.Author = v
			}
		case "resource":
			if a, ok := s.resource(); ok {
				n.atts = append(n.atts, a)
			}
		}
		// note-attributes holds author: its tags are read as they come
	}
	return n
}

// resource reads a <resource>: its file name and type, its data skipped.
func (s *enexScan) resource() (abi.Attachment, bool) {
	var a abi.Attachment
	for {
		t, ok := s.NextTag()
		if !ok {
			return a, false
		}
		if t.End {
			if t.Name == "resource" {
				return a, a.Name != "" || a.ContentType != ""
			}
			continue
		}
		if t.SelfClosing {
			continue
		}
		switch t.Name {
		case "data":
			start := s.off
			s.skipPast("</")
			a.Size = int(max(0, (s.off-start)*3/4))
		case "mime":
			v, _ := s.text("mime", enexFieldBytes)
			a.ContentType = strings.TrimSpace(v)
		case "file-name":
			v, _ := s.text("file-name", enexFieldBytes)
			a.Name = strings.TrimSpace(v)
		}
	}
}

// text reads an element's text up to "</name>": character data with its
// entities decoded, CDATA sections as written (one opened inside another
// closed by its own "]]>"), markup inside the element kept as written (ENML
// that an exporter did not wrap in CDATA). A "]]>" followed by the end tag
// ends the element however many sections are open. Past limit bytes the text
// is read on but not kept, and over is true.
func (s *enexScan) text(name string, limit int) (text string, over bool) {
	var b []byte
	end := "/" + name + ">"
	put := func(p ...byte) {
		if len(b)+len(p) > limit {
			over = true
			return
		}
		b = append(b, p...)
	}
	depth := 0
	for {
		c, ok := s.byte()
		if !ok {
			return string(b), over
		}
		switch {
		case c == ']' && s.endsSection(end):
			return string(b), over
		case c == ']' && depth > 0 && s.ahead("]>"):
			depth--
		case c == '<' && s.ahead("![CDATA["):
			depth++
		case c == '<' && depth == 0 && s.ahead(end):
			return string(b), over
		case c == '&' && depth == 0:
			put(s.entity()...)
		default:
			put(c)
		}
	}
}

// endsSection reports whether "]>", spaces and the end tag follow (after a
// ']'), consuming them if so.
func (s *enexScan) endsSection(end string) bool {
	b, _ := s.R.Peek(2 + 64 + 1 + len(end))
	if len(b) < 2 || b[0] != ']' || b[1] != '>' {
		return false
	}
	i := 2
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	if i < len(b) && b[i] == '<' && bytes.HasPrefix(b[i+1:], []byte(end)) {
		n, _ := s.R.Discard(i + 1 + len(end))
		s.off += int64(n)
		return true
	}
	return false
}

// entity reads an entity reference after '&': a character reference, one of
// XML's five or an HTML entity; anything else is kept as written. Entities a
// DOCTYPE declares are never expanded.
func (s *enexScan) entity() []byte {
	b, _ := s.R.Peek(32)
	i := bytes.IndexByte(b, ';')
	if i <= 0 {
		return []byte{'&'}
	}
	ref := string(b[:i])
	var r string
	switch {
	case ref[0] == '#':
		var v uint64
		var err error
		if len(ref) > 1 && (ref[1] == 'x' || ref[1] == 'X') {
			v, err = strconv.ParseUint(ref[2:], 16, 32)
		} else {
			v, err = strconv.ParseUint(ref[1:], 10, 32)
		}
		if err != nil || !utf8.ValidRune(rune(v)) || v == 0 {
			return []byte{'&'}
		}
		r = string(rune(v))
	default:
		switch ref {
		case "lt":
			r = "<"
		case "gt":
			r = ">"
		case "amp":
			r = "&"
		case "quot":
			r = "\""
		case "apos":
			r = "'"
		default:
			v, ok := xml.HTMLEntity[ref]
			if !ok {
				return []byte{'&'}
			}
			r = v
		}
	}
	n, _ := s.R.Discard(i + 1)
	s.off += int64(n)
	return []byte(r)
}

// warnings says what a note lacks that the source fills in.
func (n *enexNote) warnings() []string {
	if n.created.IsZero() && n.updated.IsZero() {
		return []string{"no created or updated time: dated at ingest"}
	}
	return nil
}

// parseEnexTime reads Evernote's "20130730T205204Z".
func parseEnexTime(s string) (time.Time, bool) {
	t, err := time.Parse("20060102T150405Z", s)
	if err != nil || t.Year() < 1980 {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// enmlReplacer makes ENML read as note text through HTMLToText: a note's quotes
// are its own words (HTMLToText drops mail's quoted history), to-do boxes show.
var enmlReplacer = strings.NewReplacer("<blockquote", "<div", "</blockquote", "</div",
	`<en-todo checked="true"/>`, "[x] ", `<en-todo checked="true" />`, "[x] ", `<en-todo checked="false"/>`, "[ ] ",
	`<en-todo checked="false" />`, "[ ] ", "<en-todo/>", "[ ] ", "<en-todo />", "[ ] ")

// enexSource makes one document of a note: "doc:<file>#<n>", its ref
// "<rel>#<n>".
func enexSource(n *enexNote, in readkit.Input, num int) (*memtree.SourceInput, error) {
	text := strings.TrimSpace(readkit.HTMLToText(enmlReplacer.Replace(n.Content)))
	if text == "" && n.Title == "" {
		return nil, readkit.ErrEmpty
	}
	ts := n.created
	if ts.IsZero() {
		ts = n.updated
	}
	if ts.IsZero() {
		ts = time.Now().UTC()
	}
	title := n.Title
	if title == "" {
		title = fmt.Sprintf("%s note %d", strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path)), num)
	}
	ref := fmt.Sprintf("%s#%d", in.Rel, num)
	return &memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: fmt.Sprintf("%s#%d", DocSourceID(in.Path), num), Title: title, Provider: "evernote", Tags: n.tags,
		Messages: []memtree.MessageInput{{Ref: ref, Author: n.Author, Subject: title, TimestampMS: ts.UnixMilli(), Text: text + "\n", Attachments: n.atts}},
	}, nil
}
