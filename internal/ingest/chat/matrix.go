package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindMatrix forces the Matrix (Element) export reader.
const KindMatrix = "matrix"

// MatrixReader reads a room exported by Element's "Export chat" as JSON:
// {"room_name", "room_creator", "topic", "export_date", "exported_by",
// "messages": [the room's events as the server gives them]}. Each m.room.message
// (m.text, m.notice, m.emote, and media by file name) is a message; its sender
// is named by the display name the room's member events give (the Matrix id is
// its address); a reply keeps what it answers (its quoted fallback dropped), a
// thread reply its thread root; an edit replaces the text of what it edits.
// Membership, state and other events are counted in one warning. Times are UTC
// (origin_server_ts).
type MatrixReader struct{}

func (MatrixReader) Kind() string { return KindMatrix }

func (MatrixReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	_, msgs := h.Keys["messages"]
	_, room := h.Keys["room_name"]
	_, by := h.Keys["exported_by"]
	return h.Object && msgs && (room || by)
}

type mxEvent struct {
	Type     string          `json:"type"`
	Sender   string          `json:"sender"`
	TS       json.RawMessage `json:"origin_server_ts"`
	EventID  string          `json:"event_id"`
	StateKey *string         `json:"state_key"`
	Content  json.RawMessage `json:"content"`
}

type mxContent struct {
	MsgType     string          `json:"msgtype"`
	Body        json.RawMessage `json:"body"`
	FileName    json.RawMessage `json:"filename"`
	DisplayName json.RawMessage `json:"displayname"`
	Membership  string          `json:"membership"`
	Info        struct {
		MimeType string `json:"mimetype"`
		Size     int    `json:"size"`
	} `json:"info"`
	Relates struct {
		RelType   string `json:"rel_type"`
		EventID   string `json:"event_id"`
		InReplyTo struct {
			EventID string `json:"event_id"`
		} `json:"m.in_reply_to"`
	} `json:"m.relates_to"`
	NewContent *struct {
		Body json.RawMessage `json:"body"`
	} `json:"m.new_content"`
}

func (MatrixReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	var ex struct {
		RoomName json.RawMessage   `json:"room_name"`
		Messages []json.RawMessage `json:"messages"`
	}
	if !readkit.DecodeJSONExport(path, rep, &ex) {
		return
	}
	title := readkit.CleanText(readkit.RawString(ex.RoomName))
	names := map[string]string{}
	type mxMsg struct {
		mi      memtree.MessageInput
		eventID string
	}
	var msgs []mxMsg
	byID := map[string]int{}
	edits := map[string]string{}
	room := ""
	other, bad := 0, 0
	for i, raw := range ex.Messages {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		var ev mxEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("event %d", i+1), Err: readkit.DecodeErr(err)})
			continue
		}
		var c mxContent
		_ = json.Unmarshal(ev.Content, &c)
		if room == "" {
			var r struct {
				RoomID string `json:"room_id"`
			}
			if json.Unmarshal(raw, &r) == nil {
				room = r.RoomID
			}
		}
		if ev.Type == "m.room.member" {
			if n := readkit.CleanText(readkit.RawString(c.DisplayName)); n != "" && ev.StateKey != nil {
				names[*ev.StateKey] = n
			}
			other++
			continue
		}
		if ev.Type != "m.room.message" {
			other++
			continue
		}
		ms, _ := strconv.ParseInt(strings.TrimSpace(readkit.RawString(ev.TS)), 10, 64)
		where := "event " + ev.EventID
		if ev.EventID == "" {
			where = fmt.Sprintf("event %d", i+1)
		}
		if !readkit.ChatTimeOK(ms) {
			rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("origin_server_ts %s is missing or before 1980: message not ingested", string(ev.TS))})
			bad++
			continue
		}
		if c.Relates.RelType == "m.replace" && c.NewContent != nil {
			edits[c.Relates.EventID] = readkit.CleanText(readkit.RawString(c.NewContent.Body))
			continue
		}
		body := readkit.CleanText(readkit.RawString(c.Body))
		if c.Relates.InReplyTo.EventID != "" {
			body = mxStripReplyFallback(body)
		}
		var atts []abi.Attachment
		switch c.MsgType {
		case "m.emote":
			body = "* " + body
		case "m.image", "m.file", "m.video", "m.audio":
			name := readkit.FirstNonEmpty(readkit.CleanText(readkit.RawString(c.FileName)), body, "attachment")
			atts = append(atts, readkit.AttachmentOf(name, readkit.MimeType(name, c.Info.MimeType), c.Info.Size))
			body = "[" + strings.TrimPrefix(c.MsgType, "m.") + " " + name + "]"
		}
		if body == "" && len(atts) == 0 {
			other++
			continue
		}
		mi := memtree.MessageInput{Ref: "matrix:" + ev.EventID, AuthorAddr: ev.Sender, TimestampMS: ms, Text: body, Attachments: atts}
		if ev.EventID == "" {
			mi.Ref = fmt.Sprintf("matrix:%s:@%d", room, i)
		}
		switch {
		case c.Relates.InReplyTo.EventID != "":
			mi.ReplyTo = "matrix:" + c.Relates.InReplyTo.EventID
		case c.Relates.RelType == "m.thread" && c.Relates.EventID != "":
			mi.ReplyTo = "matrix:" + c.Relates.EventID
		}
		byID[ev.EventID] = len(msgs)
		msgs = append(msgs, mxMsg{mi: mi, eventID: ev.EventID})
	}
	rep.WarnCount(path, other, "%d membership, state or other non-message event(s) not stored as messages")
	if len(msgs) == 0 {
		if bad == 0 {
			rep.Warn(path, "", "no messages: nothing to ingest")
		}
		return
	}
	res := make([]memtree.MessageInput, 0, len(msgs))
	for _, m := range msgs {
		if t, ok := edits[m.eventID]; ok && t != "" {
			m.mi.Text = t
		}
		m.mi.Author = readkit.FirstNonEmpty(names[m.mi.AuthorAddr], m.mi.AuthorAddr)
		res = append(res, m.mi)
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].TimestampMS < res[j].TimestampMS })
	conv := readkit.FirstNonEmpty(room, title, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	if title == "" {
		title = conv
	}
	readkit.WriteChat(out, path, "matrix", conv, title, res)
}

// mxStripReplyFallback drops the quote a Matrix reply starts with ("> <@a:b> text"
// lines and the blank line after them).
func mxStripReplyFallback(body string) string {
	lines := strings.Split(body, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "> ") {
		i++
	}
	if i == 0 {
		return body
	}
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	return strings.Join(lines[i:], "\n")
}
