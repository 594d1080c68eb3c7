package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	netmail "net/mail"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/mail"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// jsonReader reads the reference's JSON input shapes, one file each: a chat batch
// ({platform, channel_label, messages[{author, timestamp, text, source_ref}]}), an
// email thread ({provider, thread_subject, messages[{from, to, cc, subject, sent_at,
// body, source_ref}]}) and a document ({provider, title, body, modified_at,
// source_ref}). It claims a .json file whose start shows one of the shapes (never a
// Telegram or Discord export, which their readers own), and also a .json file that
// looks meant as such input but is wrongly made (a top-level array of such objects,
// nesting too deep), to report why it is not read.
type jsonReader struct{}

func (jsonReader) Kind() string { return KindReference }

func (jsonReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanJSONHead(head)
	return h.Claimed()
}

func (jsonReader) Read(_ context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	readReferenceJSON(in, out, rep, "")
}

// chatBatchReader reads a JSON file as a chat batch (--kind chat forces it): any
// other shape fails with the field that is wrong.
type chatBatchReader struct{}

func (chatBatchReader) Kind() string { return KindChat }

func (chatBatchReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanJSONHead(head)
	return h.Shape() == "chat"
}

func (chatBatchReader) Read(_ context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	readReferenceJSON(in, out, rep, "chat")
}

// reasonNoJSONShape is the skip reason of a JSON file of no known shape.
const reasonNoJSONShape = "JSON of no known export shape"

// readReferenceJSON reads one JSON input file of the given shape ("" to tell it from
// the file's keys). A file of no known shape is skipped, unless --kind forced the
// reader: then it fails, as does a file of the wrong schema for its shape.
func readReferenceJSON(in readkit.Input, out readkit.Output, rep *readkit.Report, shape string) {
	b, ok := readkit.ReadJSONExport(in.Path, rep)
	if !ok {
		return
	}
	var err error
	if shape == "" {
		shape, err = jsonShape(b)
		if err != nil {
			if errors.Is(err, errUnknownJSON) && !in.Forced {
				rep.Skip(in.Path, reasonNoJSONShape)
				return
			}
			rep.Fail(FileError{Path: in.Path, Err: err})
			return
		}
	}
	var srcs []memtree.SourceInput
	switch shape {
	case "chat":
		srcs, err = parseChatBatch(b)
	case "emailthread":
		var src *memtree.SourceInput
		if src, err = parseEmailThread(b); src != nil {
			srcs = append(srcs, *src)
		}
	default:
		var src *memtree.SourceInput
		if src, err = parseDocumentInput(b, in.Rel, readkit.ModTime(in.Path)); src != nil {
			srcs = append(srcs, *src)
		}
	}
	if errors.Is(err, readkit.ErrEmpty) {
		rep.Warn(in.Path, "", "no messages: nothing to ingest")
		return
	}
	if err != nil {
		rep.Fail(FileError{Path: in.Path, Err: err})
		return
	}
	for _, src := range srcs {
		src.Origin = in.Path
		out.Source(src)
	}
}

// errUnknownJSON marks a JSON file that is none of the known input shapes.
var errUnknownJSON = errors.New("JSON object is not a chat batch ({platform, channel_label, messages}), an email thread ({provider, thread_subject, messages}) or a document ({title, body, modified_at})")

// jsonShape names the input shape of a whole JSON file ("chat", "emailthread",
// "document"), or fails: errUnknownJSON for an object of no known shape (or one of
// a Telegram or Discord export, which their readers own).
func jsonShape(b []byte) (string, error) {
	var obj map[string]json.RawMessage
	if err := readkit.DecodeStrict(b, &obj); err != nil {
		var probe any
		if json.Unmarshal(b, &probe) == nil {
			if _, isArr := probe.([]any); isArr {
				return "", errors.New("byte 0: top-level JSON array: not a chat batch, email thread or document (Slack day files are read from their export folder)")
			}
		}
		return "", err
	}
	h := readkit.JSONHead{Object: true, Keys: map[string]bool{}, First: map[string]bool{}}
	for k := range obj {
		h.Keys[k] = true
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(obj["messages"], &msgs) == nil && len(msgs) > 0 {
		for k, v := range msgs[0] {
			h.First[k] = true
			if k == "author" {
				h.AuthorString = len(v) > 0 && v[0] == '"'
			}
		}
	}
	if shape := h.Shape(); shape != "" {
		return shape, nil
	}
	return "", errUnknownJSON
}

type chatBatchJSON struct {
	Platform     string `json:"platform"`
	ChannelLabel string `json:"channel_label"`
	Messages     []struct {
		Author    string          `json:"author"`
		Timestamp json.RawMessage `json:"timestamp"`
		Text      string          `json:"text"`
		SourceRef string          `json:"source_ref"`
	} `json:"messages"`
}

// parseChatBatch turns a chat batch file into its conversation's sources, one per
// calendar month with Merge set (ChatSources): "<platform>:<channel_label>/<YYYY-MM>",
// so batch files of one channel add up however their messages fall. A message
// without a source_ref is named "<platform>:<label>:<epoch ms>", or, when other
// messages of the file share its time, that and a hash of its author and text, so
// that none replaces another.
func parseChatBatch(b []byte) ([]memtree.SourceInput, error) {
	var cb chatBatchJSON
	if err := readkit.DecodeStrict(b, &cb); err != nil {
		return nil, err
	}
	if strings.TrimSpace(cb.Platform) == "" {
		return nil, errors.New(`field "platform" is missing or empty: wrong schema for a chat batch, nothing ingested`)
	}
	if strings.TrimSpace(cb.ChannelLabel) == "" {
		return nil, errors.New(`field "channel_label" is missing or empty: wrong schema for a chat batch, nothing ingested`)
	}
	if len(cb.Messages) == 0 {
		return nil, readkit.ErrEmpty
	}
	msgs := make([]memtree.MessageInput, 0, len(cb.Messages))
	atTS := map[int64]int{} // messages without a source_ref per time
	for _, m := range cb.Messages {
		if strings.TrimSpace(m.SourceRef) == "" {
			if ts, ok, err := readkit.FlexTime(m.Timestamp); err == nil && ok {
				atTS[ts]++
			}
		}
	}
	for i, m := range cb.Messages {
		ts, ok, err := readkit.FlexTime(m.Timestamp)
		if err != nil || !ok {
			why := "is missing"
			if err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("message %d: field \"timestamp\" %s: wrong schema for a chat batch, nothing ingested", i+1, why)
		}
		ref := strings.TrimSpace(m.SourceRef)
		if ref == "" {
			ref = fmt.Sprintf("%s:%s:%d", cb.Platform, strings.TrimPrefix(cb.ChannelLabel, "#"), ts)
			if atTS[ts] > 1 {
				sum := sha256.Sum256([]byte(strings.TrimSpace(m.Author) + "\x00" + strings.TrimSpace(m.Text)))
				ref += ":" + hex.EncodeToString(sum[:4])
			}
		}
		msgs = append(msgs, memtree.MessageInput{
			Ref: ref, Author: strings.TrimSpace(m.Author), TimestampMS: ts,
			Text: readkit.StripControls(strings.TrimSpace(m.Text)),
		})
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
	platform, label := strings.TrimSpace(cb.Platform), strings.TrimSpace(cb.ChannelLabel)
	return readkit.ChatSources(platform, label, label+" ("+platform+")", msgs), nil
}

type emailThreadJSON struct {
	Provider      string `json:"provider"`
	ThreadSubject string `json:"thread_subject"`
	Messages      []struct {
		From            string          `json:"from"`
		To              []string        `json:"to"`
		Cc              []string        `json:"cc"`
		Subject         string          `json:"subject"`
		SentAt          json.RawMessage `json:"sent_at"`
		Body            string          `json:"body"`
		SourceRef       string          `json:"source_ref"`
		ListUnsubscribe string          `json:"list_unsubscribe"`
	} `json:"messages"`
}

// parseEmailThread turns the reference's EmailThread shape into one email source.
func parseEmailThread(b []byte) (*memtree.SourceInput, error) {
	var et emailThreadJSON
	if err := readkit.DecodeStrict(b, &et); err != nil {
		return nil, err
	}
	if len(et.Messages) == 0 {
		return nil, readkit.ErrEmpty
	}
	prov := strings.TrimSpace(et.Provider)
	if prov == "" {
		prov = "unknown"
	}
	msgs := make([]memtree.MessageInput, 0, len(et.Messages))
	for i, m := range et.Messages {
		ts, ok, err := readkit.FlexTime(m.SentAt)
		if err != nil || !ok {
			why := "is missing"
			if err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("message %d: field \"sent_at\" %s: wrong schema for an email thread, nothing ingested", i+1, why)
		}
		mi := memtree.MessageInput{
			To: m.To, Cc: m.Cc, Subject: strings.TrimSpace(m.Subject), TimestampMS: ts,
			Text: mail.CleanMailBody(readkit.StripControls(string(readkit.NormalizeNewlines([]byte(m.Body))))),
			Ref:  strings.Trim(strings.TrimSpace(m.SourceRef), "<>"),
		}
		if a, err := netmail.ParseAddress(m.From); err == nil {
			mi.Author, mi.AuthorAddr = a.Name, strings.ToLower(a.Address)
			if mi.Author == "" {
				mi.Author = mi.AuthorAddr
			}
		} else {
			mi.Author = strings.TrimSpace(m.From)
		}
		if mi.Ref == "" {
			sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%s", prov, m.From, ts, m.Body)))
			mi.Ref = "msg-" + hex.EncodeToString(sum[:12])
		}
		msgs = append(msgs, mi)
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
	title := mail.ThreadTitle(et.ThreadSubject)
	if title == "" {
		title = mail.ThreadTitle(msgs[0].Subject)
	}
	return &memtree.SourceInput{
		Kind: memtree.KindEmail, SourceID: "email:" + msgs[0].Ref, Title: title, Provider: prov, Messages: msgs,
	}, nil
}

type documentJSON struct {
	Provider   string          `json:"provider"`
	Title      string          `json:"title"`
	Body       string          `json:"body"`
	ModifiedAt json.RawMessage `json:"modified_at"`
	SourceRef  string          `json:"source_ref"`
}

// parseDocumentInput turns the reference's DocumentInput shape into a document
// source. relPath names the file when the input has no source_ref; mtime is used
// when modified_at is missing.
func parseDocumentInput(b []byte, relPath string, mtime time.Time) (*memtree.SourceInput, error) {
	var d documentJSON
	if err := readkit.DecodeStrict(b, &d); err != nil {
		return nil, err
	}
	if strings.TrimSpace(d.Title) == "" && strings.TrimSpace(d.Body) == "" {
		return nil, readkit.ErrEmpty
	}
	ts, ok, err := readkit.FlexTime(d.ModifiedAt)
	if err != nil {
		return nil, fmt.Errorf("field \"modified_at\" %v: wrong schema for a document, nothing ingested", err)
	}
	if !ok {
		ts = mtime.UnixMilli()
	}
	prov := strings.TrimSpace(d.Provider)
	if prov == "" {
		prov = "unknown"
	}
	ref := strings.TrimSpace(d.SourceRef)
	if ref == "" {
		ref = relPath
	}
	body := readkit.StripControls(strings.TrimSpace(string(readkit.NormalizeNewlines([]byte(d.Body))))) + "\n"
	title := strings.TrimSpace(d.Title)
	if title == "" {
		title = notes.FirstHeading(body)
	}
	if title == "" {
		title = ref
	}
	return &memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: "doc:" + ref, Title: title, Provider: prov,
		Messages: []memtree.MessageInput{{Ref: ref, Subject: title, TimestampMS: ts, Text: body}},
	}, nil
}
