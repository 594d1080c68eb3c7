package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindTeams forces the Microsoft Teams / Skype export reader.
const KindTeams = "teams"

// TeamsReader reads the messages.json of Microsoft's personal data export for
// Teams (free) and Skype, which share one shape: {"userId", "exportDate",
// "conversations": [{"id", "displayName", "MessageList": [{"id",
// "displayName", "originalarrivaltime", "messagetype", "content", "from"}]}]}.
// Text and rich-text messages are kept (their HTML turned to text, quotes of
// earlier messages dropped), files and images named from their URI objects;
// calls, membership and topic events are counted. Times are UTC.
type TeamsReader struct{}

func (TeamsReader) Kind() string { return KindTeams }

func (TeamsReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	_, conv := h.Keys["conversations"]
	_, user := h.Keys["userId"]
	_, date := h.Keys["exportDate"]
	return h.Object && conv && (user || date)
}

func (TeamsReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	var ex struct {
		Conversations []json.RawMessage `json:"conversations"`
	}
	if !readkit.DecodeJSONExport(path, rep, &ex) {
		return
	}
	other := 0
	for ci, raw := range ex.Conversations {
		if ctx.Err() != nil {
			return
		}
		var c struct {
			ID          string `json:"id"`
			DisplayName string `json:"displayName"`
			MessageList []struct {
				ID          string `json:"id"`
				DisplayName string `json:"displayName"`
				Arrival     string `json:"originalarrivaltime"`
				Type        string `json:"messagetype"`
				Content     string `json:"content"`
				From        string `json:"from"`
			} `json:"MessageList"`
		}
		where := fmt.Sprintf("conversation %d", ci+1)
		if err := json.Unmarshal(raw, &c); err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: where, Err: readkit.DecodeErr(err)})
			continue
		}
		names := map[string]string{}
		for _, m := range c.MessageList {
			if m.DisplayName != "" {
				names[m.From] = m.DisplayName
			}
		}
		var msgs []memtree.MessageInput
		for _, m := range c.MessageList {
			t, err := time.Parse(time.RFC3339Nano, m.Arrival)
			if err != nil || !readkit.ChatTimeOK(t.UnixMilli()) {
				rep.Fail(readkit.FileError{Path: path, Where: where + ", message " + m.ID, Err: fmt.Errorf("originalarrivaltime %q is not an RFC 3339 time after 1980: message not ingested", m.Arrival)})
				continue
			}
			var text string
			var atts []abi.Attachment
			switch {
			case m.Type == "Text":
				text = html.UnescapeString(m.Content)
			case m.Type == "RichText" || m.Type == "RichText/Html":
				text = readkit.HTMLToText(m.Content)
			case strings.HasPrefix(m.Type, "RichText/UriObject") || strings.HasPrefix(m.Type, "RichText/Media"):
				name := teamsURIObjectName(m.Content)
				atts = append(atts, readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0))
				text = "[attachment " + name + "]"
			default:
				other++ // Event/Call, ThreadActivity/*, Control/*, Notice
				continue
			}
			text = strings.TrimSpace(text)
			if text == "" {
				continue
			}
			author := readkit.FirstNonEmpty(m.DisplayName, names[m.From], strings.TrimPrefix(m.From, "8:"))
			msgs = append(msgs, memtree.MessageInput{Ref: "teams:" + c.ID + ":" + m.ID, Author: author, AuthorAddr: m.From, TimestampMS: t.UnixMilli(), Text: text, Attachments: atts})
		}
		if len(msgs) == 0 {
			continue
		}
		sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
		id := readkit.FirstNonEmpty(c.ID, c.DisplayName, where)
		readkit.WriteChat(out, path+" "+where, "teams", id, readkit.FirstNonEmpty(c.DisplayName, id), msgs)
	}
	rep.WarnCount(path, other, "%d call, membership, topic or control event(s) not stored as messages")
}

// teamsURIObjectName reads a file's name from a URIObject message's content
// (<URIObject ...><OriginalName v="report.pdf"/>...</URIObject>).
func teamsURIObjectName(content string) string {
	for _, tag := range []string{`<OriginalName v="`, `<originalname v="`, `<FileName v="`} {
		if i := strings.Index(content, tag); i >= 0 {
			rest := content[i+len(tag):]
			if j := strings.IndexByte(rest, '"'); j > 0 {
				return html.UnescapeString(rest[:j])
			}
		}
	}
	return "file"
}
