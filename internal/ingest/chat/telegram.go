package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindTelegram forces the Telegram Desktop export reader.
const KindTelegram = "telegram"

// TelegramReader reads the machine-readable JSON export of Telegram Desktop
// ("Export chat history" gives one chat, "Export Telegram data" the whole account
// with chats.list and left_chats.list). Each chat becomes one source per month
// (ChatSources); service messages (joins, pins, calls) are skipped unless they
// carry text. HTML exports are not read.
type TelegramReader struct{}

func (TelegramReader) Kind() string { return "telegram" }

// telegramChatTypes are the values of a chat's "type" in Telegram Desktop exports.
var telegramChatTypes = map[string]bool{
	"personal_chat": true, "bot_chat": true, "private_group": true, "private_supergroup": true,
	"public_supergroup": true, "private_channel": true, "public_channel": true,
	"saved_messages": true, "replies": true, "verification_codes": true,
}

func (TelegramReader) Detect(p string, dir bool, head []byte) bool {
	if !dir && tgHTMLDetect(p, head) {
		return true
	}
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	if !h.Object {
		return false
	}
	if _, ok := h.Keys["messages"]; ok && (telegramChatTypes[h.Keys["type"]] || tgLooksLikeMessages(head)) {
		return true
	}
	if _, ok := h.Keys["personal_information"]; ok {
		return true
	}
	return h.Sub["chats"]["list"] || h.Sub["left_chats"]["list"]
}

// tgLooksLikeMessages reports whether a JSON head holds field names only Telegram
// Desktop writes in messages: a single chat's export whose "type", "id" or "name"
// is missing (hand-trimmed, or from another tool) is still read.
// The least a message has is a "date" (Telegram's: Messenger, Instagram, Google
// Chat and Discord name theirs otherwise) and a "text" or a "from".
func tgLooksLikeMessages(head []byte) bool {
	return bytes.Contains(head, []byte(`"date_unixtime"`)) || bytes.Contains(head, []byte(`"text_entities"`)) ||
		bytes.Contains(head, []byte(`"date"`)) && (bytes.Contains(head, []byte(`"from_id"`)) ||
			bytes.Contains(head, []byte(`"from"`)) || bytes.Contains(head, []byte(`"text"`)))
}

// tgFileChatName names a chat that has neither an id nor a name after its file:
// the base name without extension, or for Telegram's "result.json" the folder it
// was exported into ("ChatExport_2022-03-21").
func tgFileChatName(p string) string {
	base := filepath.Base(p)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	if strings.EqualFold(name, "result") {
		if d := filepath.Base(filepath.Dir(p)); d != "." && d != string(filepath.Separator) && d != "" {
			name = d
		}
	}
	return readkit.CleanText(name)
}

// tgChatJSON is one chat. Fields are decoded leniently (raw) so that one odd value
// costs at most that value.
type tgChatJSON struct {
	Name     json.RawMessage   `json:"name"`
	Type     json.RawMessage   `json:"type"`
	ID       json.RawMessage   `json:"id"`
	Messages []json.RawMessage `json:"messages"`
}

type tgMsgJSON struct {
	ID            json.RawMessage `json:"id"`
	Type          json.RawMessage `json:"type"`
	Date          json.RawMessage `json:"date"`
	DateUnix      json.RawMessage `json:"date_unixtime"`
	From          json.RawMessage `json:"from"`
	FromID        json.RawMessage `json:"from_id"`
	Actor         json.RawMessage `json:"actor"`
	ActorID       json.RawMessage `json:"actor_id"`
	Text          json.RawMessage `json:"text"`
	TextEntities  json.RawMessage `json:"text_entities"`
	ReplyTo       json.RawMessage `json:"reply_to_message_id"`
	ForwardedFrom json.RawMessage `json:"forwarded_from"`
	Photo         json.RawMessage `json:"photo"`
	PhotoSize     json.RawMessage `json:"photo_file_size"`
	File          json.RawMessage `json:"file"`
	FileName      json.RawMessage `json:"file_name"`
	FileSize      json.RawMessage `json:"file_size"`
	MimeType      json.RawMessage `json:"mime_type"`
	MediaType     json.RawMessage `json:"media_type"`
	StickerEmoji  json.RawMessage `json:"sticker_emoji"`
	Poll          json.RawMessage `json:"poll"`
	Location      json.RawMessage `json:"location_information"`
	Contact       json.RawMessage `json:"contact_information"`
	PlaceName     json.RawMessage `json:"place_name"`
	Address       json.RawMessage `json:"address"`
}

// tgMsg is one message as read, before replies are resolved.
type tgMsg struct {
	id, author, addr string
	ms               int64
	replyTo          string
	text             string
	atts             []abi.Attachment
}

func (TelegramReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	if ext := strings.ToLower(filepath.Ext(in.Path)); ext == ".html" || ext == ".htm" {
		tgReadHTML(ctx, in, out, rep)
		return
	}
	b, ok := readkit.ReadJSONExport(in.Path, rep)
	if !ok {
		return
	}
	var top map[string]json.RawMessage
	if err := readkit.DecodeStrict(b, &top); err != nil {
		rep.Fail(readkit.FileError{Path: in.Path, Err: err})
		return
	}
	tr := &tgRead{in: in, out: out, rep: rep}
	if pi, ok := top["personal_information"]; ok {
		var p struct {
			UserID    json.RawMessage `json:"user_id"`
			FirstName json.RawMessage `json:"first_name"`
			LastName  json.RawMessage `json:"last_name"`
		}
		if json.Unmarshal(pi, &p) == nil {
			tr.selfID = readkit.RawString(p.UserID)
			tr.selfName = strings.TrimSpace(readkit.RawString(p.FirstName) + " " + readkit.RawString(p.LastName))
		}
	}
	var chats []json.RawMessage
	var where []string
	if _, ok := top["messages"]; ok {
		chats = append(chats, b)
		where = append(where, "")
	}
	for _, key := range []string{"chats", "left_chats"} {
		raw, ok := top[key]
		if !ok || readkit.IsNull(raw) {
			continue
		}
		var l struct {
			List []json.RawMessage `json:"list"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			rep.Fail(readkit.FileError{Path: in.Path, Where: key, Err: readkit.DecodeErr(err)})
			continue
		}
		for i, c := range l.List {
			chats = append(chats, c)
			where = append(where, fmt.Sprintf("%s.list[%d]", key, i))
		}
	}
	if len(chats) == 0 {
		rep.Fail(readkit.FileError{Path: in.Path, Err: errors.New("JSON object has neither \"messages\" nor \"chats\".list: not a Telegram Desktop export, nothing ingested")})
		return
	}
	for i, c := range chats {
		if ctx.Err() != nil {
			return
		}
		tr.chat(ctx, c, where[i])
	}
}

// tgRead holds what one file's chats share.
type tgRead struct {
	in               readkit.Input
	out              readkit.Output
	rep              *readkit.Report
	selfID, selfName string
	warnedLocal      bool
}

func (tr *tgRead) chat(ctx context.Context, raw json.RawMessage, where string) {
	path := tr.in.Path
	var c tgChatJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		tr.rep.Fail(readkit.FileError{Path: path, Where: strings.TrimSpace("chat " + where), Err: readkit.DecodeErr(err)})
		return
	}
	name := readkit.CleanText(readkit.RawString(c.Name))
	typ := readkit.RawString(c.Type)
	chatID := readkit.RawString(c.ID)
	if chatID == "" {
		chatID = name
	}
	if chatID == "" && where == "" {
		// a single chat's export: the file names the chat
		chatID = tgFileChatName(path)
		name = chatID
		if len(c.Messages) > 0 {
			tr.rep.Warn(path, "", "chat has neither an id nor a name: named after its file ("+chatID+")")
		}
	}
	if chatID == "" {
		if len(c.Messages) > 0 {
			tr.rep.Fail(readkit.FileError{Path: path, Where: strings.TrimSpace("chat " + where),
				Err: fmt.Errorf("chat has neither an id nor a name: its %d message(s) are not ingested", len(c.Messages))})
		}
		return
	}
	if len(c.Messages) == 0 {
		return
	}
	chatWhere := "chat " + chatID
	var msgs []tgMsg
	idCount := map[string]int{}
	empty := 0
	for i, rm := range c.Messages {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		var jm tgMsgJSON
		if err := json.Unmarshal(rm, &jm); err != nil {
			tr.rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("%s, message %d", chatWhere, i+1), Err: readkit.DecodeErr(err)})
			continue
		}
		id := readkit.RawString(jm.ID)
		msgWhere := fmt.Sprintf("%s, message id %s", chatWhere, id)
		if id == "" {
			msgWhere = fmt.Sprintf("%s, message %d (no id)", chatWhere, i+1)
		}
		mtype := readkit.RawString(jm.Type)
		text := tgText(jm.Text)
		if text == "" {
			text = tgText(jm.TextEntities)
		}
		if mtype == "service" && text == "" {
			continue
		}
		ms, local, err := tgTime(jm)
		if err == nil && !readkit.ChatTimeOK(ms) {
			err = fmt.Errorf("date %q is before 1980 or after 2200: message not ingested", readkit.RawString(jm.Date))
		}
		if err != nil {
			tr.rep.Fail(readkit.FileError{Path: path, Where: msgWhere, Err: err})
			continue
		}
		if local && !tr.warnedLocal {
			tr.warnedLocal = true
			tr.rep.Warn(path, msgWhere, "message dates read as local time of this machine ("+tgLocalZone()+"): the export has no date_unixtime and its dates carry no zone")
		}
		m := tgMsg{id: id, ms: ms, replyTo: readkit.RawString(jm.ReplyTo)}
		if mtype == "service" {
			m.author = readkit.CleanText(readkit.FirstNonEmpty(readkit.RawString(jm.Actor), readkit.RawString(jm.ActorID)))
			m.addr = readkit.CleanText(readkit.RawString(jm.ActorID))
		} else {
			m.author = readkit.CleanText(readkit.FirstNonEmpty(readkit.RawString(jm.From), readkit.RawString(jm.FromID)))
			m.addr = readkit.CleanText(readkit.RawString(jm.FromID))
		}
		media := tgMedia(jm, &m.atts)
		if text == "" {
			text = media
		}
		if fw := readkit.CleanText(readkit.RawString(jm.ForwardedFrom)); fw != "" && text != "" {
			text = "(forwarded from " + fw + ") " + text
		}
		m.text = text
		if text == "" && len(m.atts) == 0 {
			empty++
			continue
		}
		if id != "" {
			idCount[id]++
		}
		msgs = append(msgs, m)
	}
	if empty > 0 {
		tr.rep.Warn(path, chatWhere, fmt.Sprintf("%d message(s) with no text and no media not kept", empty))
	}
	if len(msgs) == 0 {
		return
	}
	title := tr.title(typ, name, chatID, msgs)
	authorOf := map[string]string{}
	for _, m := range msgs {
		if m.id != "" && idCount[m.id] == 1 {
			authorOf[m.id] = m.author
		}
	}
	dups := 0
	seen := map[string]int{}
	out := make([]memtree.MessageInput, 0, len(msgs))
	for i, m := range msgs {
		text := m.text
		if m.replyTo != "" {
			if a, ok := authorOf[m.replyTo]; ok && a != "" {
				text = "(reply to " + a + ") " + text
			}
		}
		ref := "telegram:" + chatID + ":" + m.id
		if m.id == "" {
			ref = fmt.Sprintf("telegram:%s:@%d", chatID, i)
		} else if n := seen[m.id]; n > 0 {
			dups++
			ref = fmt.Sprintf("%s#%d", ref, n+1)
		}
		seen[m.id]++
		mi := memtree.MessageInput{
			Ref: ref, Author: m.author, AuthorAddr: m.addr, TimestampMS: m.ms, Text: text, Attachments: m.atts,
		}
		if m.replyTo != "" {
			mi.ReplyTo = "telegram:" + chatID + ":" + m.replyTo
		}
		out = append(out, mi)
	}
	if dups > 0 {
		tr.rep.Warn(path, chatWhere, fmt.Sprintf("%d message(s) repeat an id used earlier in the chat: their refs get a #n suffix and replies to those ids are not resolved", dups))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimestampMS < out[j].TimestampMS })
	readkit.WriteChat(tr.out, path, "telegram", chatID, title, out)
}

// title names a chat: its name, "Saved Messages", or for a personal chat without a
// name the other participant.
func (tr *tgRead) title(typ, name, chatID string, msgs []tgMsg) string {
	switch {
	case typ == "saved_messages":
		return "Saved Messages"
	case name != "":
		return name
	case typ == "replies":
		return "Replies"
	case typ == "personal_chat":
		for _, m := range msgs {
			if m.addr == "user"+chatID && m.author != "" {
				return m.author
			}
		}
		for _, m := range msgs {
			if m.author != "" && m.addr != "user"+tr.selfID && m.author != tr.selfName {
				return m.author
			}
		}
	}
	return "Telegram chat " + chatID
}

// tgLocalZone names the machine's time zone for warnings: "Europe/Berlin, CET,
// UTC+01:00", or "CET, UTC+01:00" when the zone has no name.
func tgLocalZone() string {
	abbr, off := time.Now().Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	z := fmt.Sprintf("%s, UTC%c%02d:%02d", abbr, sign, off/3600, off%3600/60)
	if name := time.Local.String(); name != "" && name != "Local" {
		return name + ", " + z
	}
	return z
}

// tgTime reads a message's time: date_unixtime when it is there (and not zero, as
// in anonymised exports), else "date" as local wall time (local=true).
func tgTime(jm tgMsgJSON) (ms int64, local bool, err error) {
	if s := readkit.RawString(jm.DateUnix); s != "" {
		if n, perr := strconv.ParseInt(s, 10, 64); perr == nil && n > 0 && n < 1e11 {
			return n * 1000, false, nil
		}
	}
	d := strings.TrimSpace(readkit.RawString(jm.Date))
	if d == "" {
		return 0, false, errors.New("message has no date: not ingested")
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04"} {
		if t, perr := time.ParseInLocation(layout, d, time.Local); perr == nil {
			return t.UnixMilli(), true, nil
		}
	}
	if t, perr := time.Parse(time.RFC3339Nano, d); perr == nil {
		return t.UnixMilli(), false, nil
	}
	return 0, false, fmt.Errorf("date %q is not a date: message not ingested", d)
}

// tgText flattens a Telegram text value: a string, or an array of strings and
// entities {"type", "text", "href"}. A text_link keeps "label (url)" when the label
// is not the URL itself.
func tgText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || readkit.IsNull(raw) {
		return ""
	}
	if raw[0] == '"' {
		return readkit.CleanText(readkit.RawString(raw))
	}
	if raw[0] != '[' {
		return ""
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range parts {
		p = bytes.TrimSpace(p)
		if len(p) == 0 {
			continue
		}
		if p[0] == '"' {
			sb.WriteString(readkit.RawString(p))
			continue
		}
		var e struct {
			Type json.RawMessage `json:"type"`
			Text json.RawMessage `json:"text"`
			Href json.RawMessage `json:"href"`
		}
		if json.Unmarshal(p, &e) != nil {
			continue
		}
		t, href := readkit.RawString(e.Text), strings.TrimSpace(readkit.RawString(e.Href))
		if href != "" && href != strings.TrimSpace(t) && strings.TrimSpace(t) != "" {
			sb.WriteString(t + " (" + href + ")")
		} else if t == "" {
			sb.WriteString(href)
		} else {
			sb.WriteString(t)
		}
	}
	return readkit.CleanText(sb.String())
}

// tgMedia describes a message's media as text ("[photo]", "[sticker 😀]", "[file
// a.pdf]", a poll, a location, a contact) and adds its files to atts.
func tgMedia(jm tgMsgJSON, atts *[]abi.Attachment) string {
	var parts []string
	if photo := readkit.RawString(jm.Photo); photo != "" {
		name := readkit.ExportFileName(photo)
		*atts = append(*atts, readkit.AttachmentOf(readkit.FirstNonEmpty(name, "photo"), readkit.MimeType(name, ""), readkit.RawInt(jm.PhotoSize)))
		parts = append(parts, "[photo]")
	}
	file := readkit.RawString(jm.File)
	mtype := readkit.RawString(jm.MediaType)
	if file != "" || mtype != "" {
		name := readkit.CleanText(readkit.FirstNonEmpty(readkit.RawString(jm.FileName), readkit.ExportFileName(file)))
		ctype := readkit.RawString(jm.MimeType)
		label := ""
		switch mtype {
		case "sticker":
			label = strings.TrimSpace("sticker " + readkit.CleanText(readkit.RawString(jm.StickerEmoji)))
		case "voice_message":
			label = "voice message"
		case "video_message":
			label = "video message"
		case "animation":
			label = "animation"
		case "video_file":
			label = strings.TrimSpace("video " + name)
		case "audio_file":
			label = strings.TrimSpace("audio " + name)
		case "":
			label = strings.TrimSpace("file " + name)
		default:
			label = strings.TrimSpace(strings.ReplaceAll(mtype, "_", " ") + " " + name)
		}
		parts = append(parts, "["+label+"]")
		if file != "" || name != "" {
			attName := name
			if attName == "" {
				attName = readkit.FirstNonEmpty(strings.ReplaceAll(mtype, "_", " "), "file")
			}
			*atts = append(*atts, readkit.AttachmentOf(attName, readkit.MimeType(name, ctype), readkit.RawInt(jm.FileSize)))
		}
	}
	if !readkit.IsNull(jm.Poll) && len(jm.Poll) > 0 {
		var p struct {
			Question json.RawMessage `json:"question"`
			Answers  []struct {
				Text json.RawMessage `json:"text"`
			} `json:"answers"`
		}
		if json.Unmarshal(jm.Poll, &p) == nil {
			s := "[poll] " + tgText(p.Question)
			for _, a := range p.Answers {
				if t := tgText(a.Text); t != "" {
					s += "\n- " + t
				}
			}
			parts = append(parts, strings.TrimSpace(s))
		}
	}
	if !readkit.IsNull(jm.Location) && len(jm.Location) > 0 {
		var l struct {
			Lat json.RawMessage `json:"latitude"`
			Lon json.RawMessage `json:"longitude"`
		}
		if json.Unmarshal(jm.Location, &l) == nil {
			s := "[location " + readkit.RawString(l.Lat) + ", " + readkit.RawString(l.Lon)
			if place := readkit.CleanText(strings.TrimSpace(readkit.RawString(jm.PlaceName) + " " + readkit.RawString(jm.Address))); place != "" {
				s += ": " + place
			}
			parts = append(parts, s+"]")
		}
	}
	if !readkit.IsNull(jm.Contact) && len(jm.Contact) > 0 {
		var c struct {
			First json.RawMessage `json:"first_name"`
			Last  json.RawMessage `json:"last_name"`
			Phone json.RawMessage `json:"phone_number"`
		}
		if json.Unmarshal(jm.Contact, &c) == nil {
			s := readkit.CleanText(strings.Join(strings.Fields(readkit.RawString(c.First)+" "+readkit.RawString(c.Last)+" "+readkit.RawString(c.Phone)), " "))
			parts = append(parts, strings.TrimSpace("[contact "+s)+"]")
		}
	}
	return strings.Join(parts, "\n")
}
