package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TeamsGraphReader reads Microsoft Teams (work or school) chats and channels
// as the Microsoft Graph API returns their messages, which backup tools and
// scripts save as they come: a page {"@odata.context", "value": [chatMessage,
// …], "@odata.nextLink"}, or the pages' messages as one array. A chatMessage
// is {"id", "replyToId", "messageType", "createdDateTime", "deletedDateTime",
// "subject", "chatId", "channelIdentity", "from": {"user"|"application":
// {"displayName"}}, "body": {"contentType": "html"|"text", "content"},
// "attachments": [{"contentType", "name", "contentUrl"}]}. Messages keep their
// author, UTC time, text (HTML turned to text), subject, thread (a channel
// reply's parent) and attachments (named; a quoted message is not one); system
// events and deleted messages are counted. Its kind is Teams': --kind teams
// forces the personal-export reader, detection finds this one.
type TeamsGraphReader struct{}

func (TeamsGraphReader) Kind() string { return KindTeams }

func (TeamsGraphReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := bytes.TrimLeft(readkit.TrimUTF8BOM(head), " \t\r\n")
	if !bytes.Contains(h, []byte(`"messageType"`)) || !bytes.Contains(h, []byte(`"createdDateTime"`)) {
		return false
	}
	if len(h) > 0 && h[0] == '[' {
		return bytes.Contains(h, []byte(`"body"`))
	}
	sh := readkit.ScanTopKeys(h)
	_, ctx := sh.Keys["@odata.context"]
	_, value := sh.Keys["value"]
	return sh.Object && value && (ctx || bytes.Contains(h, []byte(`"@odata.type"`)))
}

// graphMessage is the part of a Graph chatMessage read.
type graphMessage struct {
	ID              string          `json:"id"`
	ReplyToID       string          `json:"replyToId"`
	MessageType     string          `json:"messageType"`
	Created         string          `json:"createdDateTime"`
	Deleted         json.RawMessage `json:"deletedDateTime"`
	Subject         string          `json:"subject"`
	ChatID          string          `json:"chatId"`
	ChannelIdentity *struct {
		TeamID    string `json:"teamId"`
		ChannelID string `json:"channelId"`
	} `json:"channelIdentity"`
	From *struct {
		User, Application, Device *struct {
			DisplayName string `json:"displayName"`
			ID          string `json:"id"`
		}
	} `json:"from"`
	Body struct {
		ContentType string `json:"contentType"`
		Content     string `json:"content"`
	} `json:"body"`
	Attachments []struct {
		ContentType string `json:"contentType"`
		Name        string `json:"name"`
		ContentURL  string `json:"contentUrl"`
	} `json:"attachments"`
}

func (TeamsGraphReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	b, ok := readkit.ReadJSONExport(path, rep)
	if !ok {
		return
	}
	var raw []json.RawMessage
	if bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("[")) {
		if err := json.Unmarshal(b, &raw); err != nil {
			rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("Microsoft Graph messages: %w", err)})
			return
		}
	} else {
		var page struct {
			Value []json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("Microsoft Graph page: %w", err)})
			return
		}
		raw = page.Value
	}
	title := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	byConv := map[string][]memtree.MessageInput{}
	var convs []string
	events, deleted, undated, bad := 0, 0, 0, 0
	for i, r := range raw {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		var m graphMessage
		if err := json.Unmarshal(r, &m); err != nil {
			bad++
			continue
		}
		if m.MessageType != "message" {
			events++
			continue
		}
		if d := strings.TrimSpace(string(m.Deleted)); d != "" && d != "null" {
			deleted++
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, m.Created)
		if err != nil || !readkit.ChatTimeOK(t.UnixMilli()) {
			undated++
			continue
		}
		msg := memtree.MessageInput{Ref: "teams:" + m.ID, TimestampMS: t.UnixMilli(), Subject: strings.TrimSpace(m.Subject)}
		if m.From != nil {
			for _, who := range []*struct {
				DisplayName string `json:"displayName"`
				ID          string `json:"id"`
			}{m.From.User, m.From.Application, m.From.Device} {
				if who != nil && strings.TrimSpace(who.DisplayName) != "" {
					msg.Author = strings.TrimSpace(who.DisplayName)
					break
				}
			}
		}
		text := m.Body.Content
		if !strings.EqualFold(m.Body.ContentType, "text") {
			text = readkit.HTMLToText(text)
		}
		text = strings.TrimSpace(text)
		if msg.Subject != "" {
			text = strings.TrimSpace(msg.Subject + "\n\n" + text)
		}
		for _, a := range m.Attachments {
			if a.ContentType == "messageReference" {
				continue // the message this one quotes
			}
			name := strings.TrimSpace(a.Name)
			if name == "" {
				name = strings.TrimSpace(a.ContentURL)
			}
			if name == "" {
				name = a.ContentType
			}
			if name == "" {
				continue
			}
			msg.Attachments = append(msg.Attachments, abi.Attachment{Name: name, ContentType: a.ContentType})
			if !strings.Contains(text, name) {
				text = strings.TrimSpace(text + "\n[attachment: " + name + "]")
			}
		}
		if text == "" {
			events++ // nothing said (a card without text, an empty edit)
			continue
		}
		msg.Text = text
		conv := m.ChatID
		if m.ChannelIdentity != nil && m.ChannelIdentity.ChannelID != "" {
			conv = m.ChannelIdentity.ChannelID
			if m.ReplyToID != "" {
				msg.ReplyTo = "teams:" + m.ReplyToID
			}
		}
		if conv == "" {
			conv = title
		}
		if _, seen := byConv[conv]; !seen {
			convs = append(convs, conv)
		}
		byConv[conv] = append(byConv[conv], msg)
	}
	rep.WarnCount(path, events, "%d system event(s) (members added, calls, renames) or messages without text not stored")
	rep.WarnCount(path, deleted, "%d deleted message(s) not stored")
	rep.WarnCount(path, bad, "%d item(s) of \"value\" not chat messages: not stored")
	if undated > 0 {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("%d message(s) without a createdDateTime in RFC 3339, or before 1980: not ingested", undated)})
	}
	for _, conv := range convs {
		msgs := byConv[conv]
		// Graph lists newest first; a conversation reads oldest first
		sortMessagesByTime(msgs)
		name := title
		if len(convs) > 1 {
			name = title + " " + conv
		}
		readkit.WriteChat(out, path, "teams", conv, name, msgs)
	}
}

// sortMessagesByTime orders messages oldest first, keeping the order of those
// sent at one time.
func sortMessagesByTime(msgs []memtree.MessageInput) {
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
}
