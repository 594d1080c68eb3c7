package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindEnex forces the Evernote export reader.
const KindEnex = "enex"

// enexReader reads Evernote exports (.enex): an <en-export> of <note> elements,
// each with a title, its ENML content (XHTML in a CDATA section), created and
// updated times ("20130730T205204Z"), tags, attributes (author) and resources
// (base64 attachments, not read). Each note becomes one document, its ENML turned
// to text. The file is streamed: a resource is skipped, never held whole beyond
// the XML decoder's token.
type enexReader struct{}

func (enexReader) kind() string { return KindEnex }

func (enexReader) detect(p string, dir bool, head []byte) bool {
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
	title, content, author string
	created, updated       time.Time
	tags                   []string
}

func (enexReader) read(ctx context.Context, in input, out output, rep *report) {
	f, err := vOpen(in.path)
	if err != nil {
		rep.fail(FileError{Path: in.path, Err: err})
		return
	}
	defer f.Close()
	d := xml.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	num, sawExport := 0, false
	for {
		if ctx.Err() != nil {
			return
		}
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rep.fail(FileError{Path: in.path, Where: fmt.Sprintf("byte %d", d.InputOffset()), Err: fmt.Errorf("Evernote export: %w; the notes after it are not read", err)})
			return
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "en-export":
			sawExport = true
			continue
		case "note":
		default:
			continue
		}
		num++
		where := fmt.Sprintf("note %d (byte %d)", num, d.InputOffset())
		n, err := readEnexNote(d)
		if err != nil {
			rep.fail(FileError{Path: in.path, Where: where, Err: fmt.Errorf("Evernote note: %w; the notes after it are not read", err)})
			return
		}
		src, err := enexSource(n, in, num)
		if errors.Is(err, errEmpty) {
			rep.warn(in.path, where, "empty note: nothing to ingest")
			continue
		}
		for _, w := range n.warnings() {
			rep.warn(in.path, where, w)
		}
		src.Origin = in.path + " " + where
		out.source(*src)
	}
	if !sawExport {
		rep.fail(FileError{Path: in.path, Err: errors.New("not an Evernote export: no <en-export> element")})
	} else if num == 0 {
		rep.warn(in.path, "", "Evernote export without notes: nothing to ingest")
	}
}

// readEnexNote reads the elements of one <note> up to its end.
func readEnexNote(d *xml.Decoder) (*enexNote, error) {
	n := &enexNote{}
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			if t.Name.Local == "note" {
				return n, nil
			}
		case xml.StartElement:
			var s string
			switch t.Name.Local {
			case "title", "content", "created", "updated", "tag", "author":
				if err := d.DecodeElement(&s, &t); err != nil {
					return nil, err
				}
			case "resource":
				if err := d.Skip(); err != nil {
					return nil, err
				}
				continue
			default:
				continue // note-attributes holds author: descend into it
			}
			s = strings.TrimSpace(s)
			switch t.Name.Local {
			case "title":
				n.title = s
			case "content":
				n.content = s
			case "created":
				n.created, _ = parseEnexTime(s)
			case "updated":
				n.updated, _ = parseEnexTime(s)
			case "tag":
				if s != "" {
					n.tags = append(n.tags, s)
				}
			case "author":
				n.author = s
			}
		}
	}
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

// enmlReplacer makes ENML read as note text through htmlToText: a note's quotes
// are its own words (htmlToText drops mail's quoted history), to-do boxes show.
var enmlReplacer = strings.NewReplacer("<blockquote", "<div", "</blockquote", "</div",
	`<en-todo checked="true"/>`, "[x] ", `<en-todo checked="true" />`, "[x] ", `<en-todo checked="false"/>`, "[ ] ",
	`<en-todo checked="false" />`, "[ ] ", "<en-todo/>", "[ ] ", "<en-todo />", "[ ] ")

// enexSource makes one document of a note: "doc:<file>#<n>", its ref
// "<rel>#<n>".
func enexSource(n *enexNote, in input, num int) (*memtree.SourceInput, error) {
	text := strings.TrimSpace(htmlToText(enmlReplacer.Replace(n.content)))
	if text == "" && n.title == "" {
		return nil, errEmpty
	}
	ts := n.created
	if ts.IsZero() {
		ts = n.updated
	}
	if ts.IsZero() {
		ts = time.Now().UTC()
	}
	title := n.title
	if title == "" {
		title = fmt.Sprintf("%s note %d", strings.TrimSuffix(filepath.Base(in.path), filepath.Ext(in.path)), num)
	}
	ref := fmt.Sprintf("%s#%d", in.rel, num)
	return &memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: fmt.Sprintf("%s#%d", docSourceID(in.path), num), Title: title, Provider: "evernote", Tags: n.tags,
		Messages: []memtree.MessageInput{{Ref: ref, Author: n.author, Subject: title, TimestampMS: ts.UnixMilli(), Text: text + "\n"}},
	}, nil
}
