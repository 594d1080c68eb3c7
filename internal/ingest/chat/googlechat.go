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

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindGoogleChat reads Google Chat from Google Takeout (messages.json).
const KindGoogleChat = "googlechat"

// GoogleChatReader reads Google Chat as Google Takeout exports it: one folder per
// conversation under "Google Chat/Groups" ("Space …", "DM …") holding
// messages.json ({"messages": [{"creator": {name, email}, "created_date":
// "Wednesday, March 16, 2022 at 2:56:01 PM UTC", "text", "attached_files",
// "topic_id", ...}]}) and group_info.json (the space's name and members), which
// names the conversation. group_info.json and the Users/ folders' user_info.json
// are read as part of it. A conversation is one source per month (ChatSources)
// under "googlechat:<folder>".
type GoogleChatReader struct{}

func (GoogleChatReader) Kind() string { return "googlechat" }

func (GoogleChatReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	if !h.Object {
		return false
	}
	base := strings.ToLower(filepath.Base(p))
	if _, ok := h.Keys["messages"]; ok {
		return bytes.Contains(head, []byte(`"created_date"`)) && bytes.Contains(head, []byte(`"creator"`)) ||
			base == "messages.json" && len(bytes.TrimSpace(head)) < 64 && bytes.Contains(head, []byte(`[]`))
	}
	// the conversation's and the user's metadata, read with messages.json
	_, members := h.Keys["members"]
	_, membership := h.Keys["membership_info"]
	return base == "group_info.json" && members || base == "user_info.json" && membership
}

type gcMsgJSON struct {
	Creator struct {
		Name  json.RawMessage `json:"name"`
		Email json.RawMessage `json:"email"`
	} `json:"creator"`
	CreatedDate   json.RawMessage   `json:"created_date"`
	Text          json.RawMessage   `json:"text"`
	MessageID     json.RawMessage   `json:"message_id"`
	TopicID       json.RawMessage   `json:"topic_id"`
	MessageState  json.RawMessage   `json:"message_state"`
	AttachedFiles []json.RawMessage `json:"attached_files"`
	Annotations   json.RawMessage   `json:"annotations"`
	Deletion      json.RawMessage   `json:"deletion_metadata"`
}

// gcDateLayouts are the created_date layouts of Takeout's Google Chat export (its
// narrow no-break space before AM/PM is read as a space).
var gcDateLayouts = []string{
	"Monday, January 2, 2006 at 3:04:05 PM MST",
	"Monday, January 2, 2006 at 3:04:05 PM",
	"Monday, January 2, 2006 3:04:05 PM MST",
	"January 2, 2006 at 3:04:05 PM MST",
	time.RFC3339Nano,
}

var gcZoneOffset = lazyre.New(`\s(?:UTC|GMT)([+-]\d{1,2})(?::?(\d{2}))?$`)

// gcTime reads a created_date. The zone is UTC in the exports seen; an offset
// ("GMT+05:30") is applied, another zone name is read as UTC (warned).
func gcTime(s string) (ms int64, zoneGuessed bool, err error) {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == 0x202F || r == 0xA0 }), " ")
	if s == "" || strings.EqualFold(s, "Unknown Date") {
		return 0, false, fmt.Errorf("created_date %q is not a date", s)
	}
	off := 0
	if m := gcZoneOffset.FindStringSubmatch(s); m != nil {
		var h, mi int
		fmt.Sscanf(m[1], "%d", &h)
		if m[2] != "" {
			fmt.Sscanf(m[2], "%d", &mi)
		}
		if h < 0 {
			mi = -mi
		}
		off = h*3600 + mi*60
		s = s[:len(s)-len(m[0])]
	}
	for _, l := range gcDateLayouts {
		t, perr := time.Parse(l, s)
		if perr != nil {
			continue
		}
		name, zoff := t.Zone()
		if strings.HasSuffix(l, "MST") && zoff == 0 && name != "UTC" && name != "GMT" && name != "" {
			zoneGuessed = true
		}
		return t.Add(-time.Duration(off) * time.Second).UnixMilli(), zoneGuessed, nil
	}
	return 0, false, fmt.Errorf("created_date %q is not a date this reader knows", s)
}

// gcInfo reads a conversation folder's group_info.json: its name and members.
func gcInfo(dir string) (name string, members []string) {
	var gi struct {
		Name    json.RawMessage `json:"name"`
		Members []struct {
			Name json.RawMessage `json:"name"`
		} `json:"members"`
	}
	if readkit.ReadJSONFile(filepath.Join(dir, "group_info.json"), &gi) != nil {
		return "", nil
	}
	for _, m := range gi.Members {
		if n := readkit.CleanText(readkit.RawString(m.Name)); n != "" {
			members = append(members, n)
		}
	}
	return readkit.CleanText(readkit.RawString(gi.Name)), members
}

func (GoogleChatReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	base := strings.ToLower(filepath.Base(path))
	if base == "group_info.json" || base == "user_info.json" {
		// metadata: group_info.json names the conversation of the messages.json
		// beside it; a conversation without one is named after its folder
		if _, err := archive.Stat(filepath.Join(filepath.Dir(path), "messages.json")); base == "group_info.json" && err != nil {
			rep.Warn(path, "", "conversation metadata without a messages.json beside it: no messages to read")
		}
		return
	}
	var top struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if !readkit.DecodeJSONExport(path, rep, &top) {
		return
	}
	dir := filepath.Dir(path)
	conv := filepath.Base(dir)
	if conv == "." || conv == "" || conv == string(filepath.Separator) {
		conv = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	name, members := gcInfo(dir)
	title := name
	if title == "" && len(members) > 0 {
		title = strings.Join(members, ", ")
	}
	if title == "" {
		title = conv
	}
	var msgs []memtree.MessageInput
	deleted, empty, guessedZone := 0, 0, false
	for i, raw := range top.Messages {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		var m gcMsgJSON
		if err := json.Unmarshal(raw, &m); err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message %d", i+1), Err: readkit.DecodeErr(err)})
			continue
		}
		if strings.EqualFold(readkit.RawString(m.MessageState), "DELETED") || len(m.Deletion) > 0 && !readkit.IsNull(m.Deletion) {
			deleted++
			continue
		}
		ms, zg, err := gcTime(readkit.RawString(m.CreatedDate))
		if err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message %d", i+1), Err: fmt.Errorf("%w: message not ingested", err)})
			continue
		}
		if !readkit.ChatTimeOK(ms) {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message %d", i+1), Err: fmt.Errorf("created_date %q is before 1980 or after 2200: message not ingested", readkit.RawString(m.CreatedDate))})
			continue
		}
		guessedZone = guessedZone || zg
		text := readkit.CleanText(readkit.RawString(m.Text))
		var atts []abi.Attachment
		for _, f := range m.AttachedFiles {
			var af struct {
				OriginalName json.RawMessage `json:"original_name"`
				ExportName   json.RawMessage `json:"export_name"`
			}
			if json.Unmarshal(f, &af) != nil {
				continue
			}
			n := readkit.CleanText(readkit.FirstNonEmpty(readkit.RawString(af.OriginalName), readkit.RawString(af.ExportName)))
			if n == "" {
				n = "file"
			}
			atts = append(atts, readkit.AttachmentOf(n, readkit.MimeType(n, ""), 0))
			text = strings.TrimSpace(text + "\n[attached: " + n + "]")
		}
		if text == "" {
			empty++
			continue
		}
		mi := memtree.MessageInput{
			Author:      readkit.CleanText(readkit.FirstNonEmpty(readkit.RawString(m.Creator.Name), readkit.RawString(m.Creator.Email))),
			AuthorAddr:  strings.ToLower(readkit.CleanText(readkit.RawString(m.Creator.Email))),
			TimestampMS: ms, Text: text, Attachments: atts,
		}
		if id := readkit.CleanText(readkit.RawString(m.MessageID)); id != "" {
			mi.Ref = "googlechat:" + conv + ":" + id
		}
		msgs = append(msgs, mi)
	}
	if guessedZone {
		rep.Warn(path, "", "created_date carries a zone name this reader cannot place: read as UTC")
	}
	rep.WarnCount(path, deleted, "%d deleted message(s) not kept")
	rep.WarnCount(path, empty, "%d message(s) with no text and no attachment not kept")
	if len(msgs) == 0 {
		return
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
	var noRef []int
	for i := range msgs {
		if msgs[i].Ref == "" {
			noRef = append(noRef, i)
		}
	}
	if len(noRef) > 0 {
		tmp := make([]memtree.MessageInput, len(noRef))
		for k, i := range noRef {
			tmp[k] = msgs[i]
		}
		chatRefs("googlechat", conv, tmp)
		for k, i := range noRef {
			msgs[i].Ref = tmp[k].Ref
		}
	}
	readkit.WriteChat(out, path, "googlechat", conv, title, msgs)
}
