package notes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Kinds of the note apps' exports.
const (
	KindKeep   = "keep"
	KindDayOne = "dayone"
	KindRoam   = "roam"
)

// KeepReader reads Google Keep notes from Google Takeout (Keep/<note>.json,
// one note a file): title, text or checklist ("[x] item"), labels as tags,
// web-link annotations, attachments named, created (else edited) time. A note
// in the trash is named as skipped; archived and pinned notes are read.
type KeepReader struct{}

func (KeepReader) Kind() string { return KindKeep }

func (KeepReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	_, text := h.Keys["textContent"]
	_, list := h.Keys["listContent"]
	_, edited := h.Keys["userEditedTimestampUsec"]
	_, created := h.Keys["createdTimestampUsec"]
	return h.Object && (text || list) && (edited || created)
}

// ReasonKeepTrash is the skip reason of a Keep note in the trash.
const ReasonKeepTrash = "Google Keep note in the trash: not read"

func (KeepReader) Read(_ context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	var n struct {
		Title       json.RawMessage `json:"title"`
		Text        json.RawMessage `json:"textContent"`
		IsTrashed   bool            `json:"isTrashed"`
		Created     json.RawMessage `json:"createdTimestampUsec"`
		Edited      json.RawMessage `json:"userEditedTimestampUsec"`
		ListContent []struct {
			Text      json.RawMessage `json:"text"`
			IsChecked bool            `json:"isChecked"`
		} `json:"listContent"`
		Labels []struct {
			Name json.RawMessage `json:"name"`
		} `json:"labels"`
		Annotations []struct {
			Title json.RawMessage `json:"title"`
			URL   json.RawMessage `json:"url"`
		} `json:"annotations"`
		Attachments []struct {
			FilePath json.RawMessage `json:"filePath"`
			MimeType json.RawMessage `json:"mimetype"`
		} `json:"attachments"`
	}
	if !readkit.DecodeJSONExport(in.Path, rep, &n) {
		return
	}
	if n.IsTrashed {
		rep.Skip(in.Path, ReasonKeepTrash)
		return
	}
	var lines []string
	if t := strings.TrimSpace(readkit.RawString(n.Text)); t != "" {
		lines = append(lines, t)
	}
	for _, item := range n.ListContent {
		box := "[ ] "
		if item.IsChecked {
			box = "[x] "
		}
		lines = append(lines, box+strings.TrimSpace(readkit.RawString(item.Text)))
	}
	for _, a := range n.Annotations {
		if u := strings.TrimSpace(readkit.RawString(a.URL)); u != "" {
			lines = append(lines, strings.TrimSpace(readkit.RawString(a.Title)+" "+u))
		}
	}
	var atts []abi.Attachment
	for _, a := range n.Attachments {
		if name := readkit.ExportFileName(readkit.RawString(a.FilePath)); name != "" {
			atts = append(atts, readkit.AttachmentOf(name, readkit.MimeType(name, readkit.RawString(a.MimeType)), 0))
		}
	}
	var tags []string
	for _, l := range n.Labels {
		if t := strings.TrimSpace(readkit.RawString(l.Name)); t != "" {
			tags = append(tags, t)
		}
	}
	title := readkit.CleanText(readkit.RawString(n.Title))
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	if text == "" && title == "" && len(atts) == 0 {
		rep.Warn(in.Path, "", "empty note: nothing to ingest")
		return
	}
	if title == "" {
		title = strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path))
	}
	usec := func(raw json.RawMessage) int64 {
		v, err := strconv.ParseInt(strings.TrimSpace(readkit.RawString(raw)), 10, 64)
		if err != nil {
			return 0
		}
		return v / 1000
	}
	ms := usec(n.Created)
	if !readkit.ChatTimeOK(ms) {
		ms = usec(n.Edited)
	}
	if !readkit.ChatTimeOK(ms) {
		mt, _ := docFileTime(in.Path, time.Now())
		ms = mt.UnixMilli()
		rep.Warn(in.Path, "", "no created or edited time: dated by the file")
	}
	for _, a := range atts {
		text += "\n[attachment " + a.Name + "]"
	}
	out.Source(memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: DocSourceID(in.Path), Title: title, Provider: "keep", Tags: tags, Origin: in.Path,
		Messages: []memtree.MessageInput{{Ref: in.Rel, Subject: title, TimestampMS: ms, Text: strings.TrimSpace(text) + "\n", Attachments: atts}},
	})
}

// DayOneReader reads a Day One journal exported as JSON ({"metadata",
// "entries": [...]}): each entry a document with its title (the first line),
// text (Day One's Markdown escapes and photo links removed), creation time,
// tags, place and attachments (photos, audio, video, PDFs) named.
type DayOneReader struct{}

func (DayOneReader) Kind() string { return KindDayOne }

func (DayOneReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	_, meta := h.Keys["metadata"]
	_, entries := h.Keys["entries"]
	return h.Object && meta && entries && (bytes.Contains(head, []byte(`"creationDate"`)) || bytes.Contains(head, []byte(`"uuid"`)))
}

var (
	reDayOneMoment = lazyre.New(`!\[[^\]]*\]\(dayone-moment:/+[^)]*\)`)
	reDayOneEscape = lazyre.New(`\\([\\.\-!#*+()\[\]_{}>|` + "`" + `])`)
)

func (DayOneReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	var ex struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if !readkit.DecodeJSONExport(in.Path, rep, &ex) {
		return
	}
	journal := strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path))
	for i, raw := range ex.Entries {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		where := fmt.Sprintf("entry %d", i+1)
		var e struct {
			UUID     string   `json:"uuid"`
			Created  string   `json:"creationDate"`
			Text     string   `json:"text"`
			Tags     []string `json:"tags"`
			Location struct {
				PlaceName string `json:"placeName"`
				Locality  string `json:"localityName"`
				Country   string `json:"country"`
			} `json:"location"`
			Photos []dayOneMedia `json:"photos"`
			Audios []dayOneMedia `json:"audios"`
			Videos []dayOneMedia `json:"videos"`
			PDFs   []dayOneMedia `json:"pdfAttachments"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			rep.Fail(readkit.FileError{Path: in.Path, Where: where, Err: readkit.DecodeErr(err)})
			continue
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(e.Created))
		if err != nil || !readkit.ChatTimeOK(t.UnixMilli()) {
			rep.Fail(readkit.FileError{Path: in.Path, Where: where, Err: fmt.Errorf("creationDate %q is not an RFC 3339 time after 1980: entry not ingested", e.Created)})
			continue
		}
		text := reDayOneMoment.ReplaceAllString(e.Text, "")
		text = strings.TrimSpace(reDayOneEscape.ReplaceAllString(text, "$1"))
		var atts []abi.Attachment
		for _, group := range [][]dayOneMedia{e.Photos, e.Audios, e.Videos, e.PDFs} {
			for _, m := range group {
				if a, ok := m.attachment(); ok {
					atts = append(atts, a)
				}
			}
		}
		if text == "" && len(atts) == 0 {
			rep.Warn(in.Path, where, "empty entry: nothing to ingest")
			continue
		}
		first, _, _ := strings.Cut(text, "\n")
		title := strings.TrimSpace(strings.TrimLeft(first, "# "))
		if title == "" {
			title = journal + " " + t.Format("2006-01-02")
		}
		if place := strings.Join(nonEmpty(e.Location.PlaceName, e.Location.Locality, e.Location.Country), ", "); place != "" {
			text += "\n\nPlace: " + place
		}
		for _, a := range atts {
			text += "\n[attachment " + a.Name + "]"
		}
		id := e.UUID
		if id == "" {
			id = fmt.Sprintf("%s#%d", in.Rel, i+1)
		}
		out.Source(memtree.SourceInput{
			Kind: memtree.KindDocument, SourceID: "dayone:" + id, Title: title, Provider: "dayone", Tags: e.Tags, Origin: in.Path + " " + where,
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("%s#%d", in.Rel, i+1), Subject: title, TimestampMS: t.UnixMilli(), Text: text + "\n", Attachments: atts}},
		})
	}
}

// dayOneMedia is one photo, recording, video or PDF of an entry.
type dayOneMedia struct {
	MD5      string `json:"md5"`
	Type     string `json:"type"`
	FileName string `json:"filename"`
}

// attachment names a medium as the export's folder holds it ("<md5>.<type>").
func (m dayOneMedia) attachment() (abi.Attachment, bool) {
	name := m.FileName
	if name == "" && m.MD5 != "" {
		name = m.MD5 + "." + readkit.FirstNonEmpty(m.Type, "bin")
	}
	if name == "" {
		return abi.Attachment{}, false
	}
	return readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0), true
}

// nonEmpty returns the non-blank strings of ss.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// RoamReader reads a Roam Research graph exported as JSON: an array of pages,
// each {"title", "children": blocks, "create-time", "edit-time"}, a block
// {"string", "uid", "children", "heading", "create-time", "edit-time"}. Each page
// is a document: its blocks as an indented outline, its time the page's
// creation (a daily note's title date, else its earliest block's), its editor
// as author when the export names one.
type RoamReader struct{}

func (RoamReader) Kind() string { return KindRoam }

func (RoamReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := bytes.TrimLeft(readkit.TrimUTF8BOM(head), " \t\r\n")
	return len(h) > 0 && h[0] == '[' && bytes.Contains(h, []byte(`"title"`)) &&
		(bytes.Contains(h, []byte(`"children"`)) || bytes.Contains(h, []byte(`"edit-time"`))) &&
		(bytes.Contains(h, []byte(`"string"`)) || bytes.Contains(h, []byte(`"create-time"`)) || bytes.Contains(h, []byte(`"edit-time"`)))
}

type roamBlock struct {
	String   string      `json:"string"`
	Title    string      `json:"title"`
	Heading  int         `json:"heading"`
	Created  int64       `json:"create-time"`
	Edited   int64       `json:"edit-time"`
	Email    string      `json:"edit-email"`
	Children []roamBlock `json:"children"`
}

// reRoamDaily reads a daily note's title ("January 5th, 2026").
var reRoamDaily = lazyre.New(`^([A-Z][a-z]+) (\d{1,2})(?:st|nd|rd|th), (\d{4})$`)

func (RoamReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	var pages []json.RawMessage
	if !readkit.DecodeJSONExport(in.Path, rep, &pages) {
		return
	}
	for i, raw := range pages {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		where := fmt.Sprintf("page %d", i+1)
		var pg roamBlock
		if err := json.Unmarshal(raw, &pg); err != nil {
			rep.Fail(readkit.FileError{Path: in.Path, Where: where, Err: readkit.DecodeErr(err)})
			continue
		}
		title := strings.TrimSpace(pg.Title)
		var body strings.Builder
		earliest, author := int64(0), ""
		var walk func(bs []roamBlock, depth int)
		walk = func(bs []roamBlock, depth int) {
			for _, bl := range bs {
				if readkit.ChatTimeOK(bl.Created) && (earliest == 0 || bl.Created < earliest) {
					earliest = bl.Created
				}
				if author == "" {
					author = bl.Email
				}
				if s := strings.TrimRight(bl.String, " \t\n"); s != "" {
					prefix := strings.Repeat("  ", depth) + "- "
					if bl.Heading > 0 {
						prefix = strings.Repeat("  ", depth) + strings.Repeat("#", bl.Heading) + " "
					}
					body.WriteString(prefix + strings.ReplaceAll(s, "\n", "\n"+strings.Repeat("  ", depth+1)) + "\n")
				}
				walk(bl.Children, depth+1)
			}
		}
		walk(pg.Children, 0)
		text := strings.TrimSpace(body.String())
		if text == "" {
			continue // a page only linked to, never written: Roam lists every one
		}
		if title == "" {
			title = fmt.Sprintf("%s page %d", strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path)), i+1)
		}
		ms := pg.Created
		if m := reRoamDaily.FindStringSubmatch(title); m != nil && !readkit.ChatTimeOK(ms) {
			if t, err := time.Parse("January 2 2006", m[1]+" "+m[2]+" "+m[3]); err == nil {
				ms = t.UnixMilli()
			}
		}
		if !readkit.ChatTimeOK(ms) {
			ms = earliest
		}
		if !readkit.ChatTimeOK(ms) && readkit.ChatTimeOK(pg.Edited) {
			ms = pg.Edited
		}
		if !readkit.ChatTimeOK(ms) {
			mt, _ := docFileTime(in.Path, time.Now())
			ms = mt.UnixMilli()
			rep.Warn(in.Path, where, "page without a time: dated by the file")
		}
		out.Source(memtree.SourceInput{
			Kind: memtree.KindDocument, SourceID: "roam:" + strings.TrimPrefix(DocSourceID(in.Path), "doc:") + "#" + title, Title: title, Provider: "roam", Origin: in.Path + " " + where,
			Messages: []memtree.MessageInput{{Ref: in.Rel + "#" + title, Author: readkit.FirstNonEmpty(pg.Email, author), Subject: title, TimestampMS: ms, Text: text + "\n"}},
		})
	}
}
