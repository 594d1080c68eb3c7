package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/mail"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// errUnknownJSON marks a JSON file that is none of the known input shapes.
var errUnknownJSON = errors.New("JSON object is not a chat batch ({platform, channel_label, messages}), an email thread ({provider, thread_subject, messages}) or a document ({title, body, modified_at})")

// readFileLimited reads a whole file, refusing files over maxFileBytes.
func readFileLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("file larger than %d MiB: not ingested; split it", maxFileBytes>>20)
	}
	return b, nil
}

// readJSONFile reads, guards and strictly decodes one JSON file into v.
func readJSONFile(path string, v any) error {
	b, err := readFileLimited(path)
	if err != nil {
		return err
	}
	b = trimUTF8BOM(b)
	if err := checkJSON(b); err != nil {
		return err
	}
	return decodeStrict(b, v)
}

func trimUTF8BOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// jsonShape names the input shape of a JSON object from its keys.
func jsonShape(b []byte) (string, error) {
	var obj map[string]json.RawMessage
	if err := decodeStrict(b, &obj); err != nil {
		var probe any
		if json.Unmarshal(b, &probe) == nil {
			if _, isArr := probe.([]any); isArr {
				return "", errors.New("byte 0: top-level JSON array: not a chat batch, email thread or document (Slack day files are read from their export folder)")
			}
		}
		return "", err
	}
	has := func(k string) bool { _, ok := obj[k]; return ok }
	switch {
	case has("thread_subject"):
		return "emailthread", nil
	case has("messages") && (has("platform") || has("channel_label")):
		return "chat", nil
	case has("messages"):
		var msgs []map[string]json.RawMessage
		if json.Unmarshal(obj["messages"], &msgs) == nil && len(msgs) > 0 {
			if _, ok := msgs[0]["sent_at"]; ok {
				return "emailthread", nil
			}
			if _, ok := msgs[0]["from"]; ok {
				return "emailthread", nil
			}
		}
		return "chat", nil
	case has("body") || (has("title") && has("modified_at")):
		return "document", nil
	}
	return "", errUnknownJSON
}

// flexTime reads a time given as epoch milliseconds (number or numeric string) or
// an RFC 3339 string. Empty or null reports ok=false with no error.
func flexTime(raw json.RawMessage) (ms int64, ok bool, err error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, false, nil
	}
	if s[0] == '"' {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return 0, false, err
		}
		str = strings.TrimSpace(str)
		if str == "" {
			return 0, false, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, str); err == nil {
			return t.UnixMilli(), true, nil
		}
		s = str
	}
	f, perr := strconv.ParseFloat(s, 64)
	if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e14 {
		return 0, false, fmt.Errorf("%s is not epoch milliseconds or an RFC 3339 time", string(raw))
	}
	return int64(f), true, nil
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

// parseChatBatch turns a chat batch file into one source:
// SourceID "<platform>:<channel_label>/<YYYY-MM-DD of the first message>".
func parseChatBatch(b []byte) (*memtree.SourceInput, error) {
	var cb chatBatchJSON
	if err := decodeStrict(b, &cb); err != nil {
		return nil, err
	}
	if strings.TrimSpace(cb.Platform) == "" {
		return nil, errors.New(`field "platform" is missing or empty: wrong schema for a chat batch, nothing ingested`)
	}
	if strings.TrimSpace(cb.ChannelLabel) == "" {
		return nil, errors.New(`field "channel_label" is missing or empty: wrong schema for a chat batch, nothing ingested`)
	}
	if len(cb.Messages) == 0 {
		return nil, errEmpty
	}
	msgs := make([]memtree.MessageInput, 0, len(cb.Messages))
	for i, m := range cb.Messages {
		ts, ok, err := flexTime(m.Timestamp)
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
		}
		msgs = append(msgs, memtree.MessageInput{
			Ref: ref, Author: strings.TrimSpace(m.Author), TimestampMS: ts,
			Text: stripControls(strings.TrimSpace(m.Text)),
		})
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
	day := time.UnixMilli(msgs[0].TimestampMS).UTC().Format("2006-01-02")
	return &memtree.SourceInput{
		Kind:     memtree.KindChat,
		SourceID: cb.Platform + ":" + cb.ChannelLabel + "/" + day,
		Title:    cb.ChannelLabel + " (" + cb.Platform + ")",
		Provider: cb.Platform,
		Messages: msgs,
	}, nil
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
	if err := decodeStrict(b, &et); err != nil {
		return nil, err
	}
	if len(et.Messages) == 0 {
		return nil, errEmpty
	}
	prov := strings.TrimSpace(et.Provider)
	if prov == "" {
		prov = "unknown"
	}
	msgs := make([]memtree.MessageInput, 0, len(et.Messages))
	for i, m := range et.Messages {
		ts, ok, err := flexTime(m.SentAt)
		if err != nil || !ok {
			why := "is missing"
			if err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("message %d: field \"sent_at\" %s: wrong schema for an email thread, nothing ingested", i+1, why)
		}
		mi := memtree.MessageInput{
			To: m.To, Cc: m.Cc, Subject: strings.TrimSpace(m.Subject), TimestampMS: ts,
			Text: cleanMailBody(stripControls(string(normalizeNewlines([]byte(m.Body))))),
			Ref:  strings.Trim(strings.TrimSpace(m.SourceRef), "<>"),
		}
		if a, err := mail.ParseAddress(m.From); err == nil {
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
	title := threadTitle(et.ThreadSubject)
	if title == "" {
		title = threadTitle(msgs[0].Subject)
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
	if err := decodeStrict(b, &d); err != nil {
		return nil, err
	}
	if strings.TrimSpace(d.Title) == "" && strings.TrimSpace(d.Body) == "" {
		return nil, errEmpty
	}
	ts, ok, err := flexTime(d.ModifiedAt)
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
	body := stripControls(strings.TrimSpace(string(normalizeNewlines([]byte(d.Body))))) + "\n"
	title := strings.TrimSpace(d.Title)
	if title == "" {
		title = firstHeading(body)
	}
	if title == "" {
		title = ref
	}
	return &memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: "doc:" + ref, Title: title, Provider: prov,
		Messages: []memtree.MessageInput{{Ref: ref, Subject: title, TimestampMS: ts, Text: body}},
	}, nil
}

// attachmentOf builds an attachment note.
func attachmentOf(name, ctype string, size int) abi.Attachment {
	return abi.Attachment{Name: name, ContentType: ctype, Size: size}
}
