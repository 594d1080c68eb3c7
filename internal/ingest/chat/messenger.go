package chat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindMessenger reads Facebook and Instagram "Download your information" JSON.
const KindMessenger = "messenger"

// MessengerReader reads the message files of Facebook's and Instagram's "Download
// your information" JSON (messages/inbox/<thread>/message_1.json: "participants",
// "messages" with "sender_name", "timestamp_ms", "content", photos, shares, ...;
// newest first), and Messenger's own end-to-end encrypted chat export
// ("participants" as names, "threadName", messages with "senderName",
// "timestamp", "text", "media"). The platforms write UTF-8 text as if each byte
// were a Latin-1 character ("CafÃ©"): it is repaired. A thread's files add up into
// one conversation ("messenger:<thread path>" or "instagram:<thread path>"), one
// source per month (ChatSources).
type MessengerReader struct{}

func (MessengerReader) Kind() string { return "messenger" }

func (MessengerReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	if jh := readkit.ScanJSONHead(head); jh.Array && jh.Keys["participants"] && jh.Keys["conversation"] {
		return true // Instagram's messages.json before 2020
	}
	h := readkit.ScanTopKeys(head)
	if !h.Object {
		return false
	}
	_, parts := h.Keys["participants"]
	_, msgs := h.Keys["messages"]
	if !parts || !msgs {
		return false
	}
	return bytes.Contains(head, []byte(`"sender_name"`)) || bytes.Contains(head, []byte(`"senderName"`)) ||
		bytes.Contains(head, []byte(`"timestamp_ms"`)) || bytes.Contains(head, []byte(`"thread_path"`)) ||
		bytes.Contains(head, []byte(`"threadName"`))
}

type fbThreadJSON struct {
	Participants []json.RawMessage `json:"participants"`
	Messages     []json.RawMessage `json:"messages"`
	Title        json.RawMessage   `json:"title"`
	ThreadName   json.RawMessage   `json:"threadName"`
	ThreadPath   json.RawMessage   `json:"thread_path"`
}

type fbMsgJSON struct {
	SenderName   json.RawMessage `json:"sender_name"`
	SenderName2  json.RawMessage `json:"senderName"`
	TimestampMS  json.RawMessage `json:"timestamp_ms"`
	Timestamp    json.RawMessage `json:"timestamp"`
	Content      json.RawMessage `json:"content"`
	Text         json.RawMessage `json:"text"`
	Type         json.RawMessage `json:"type"`
	IsUnsent     json.RawMessage `json:"is_unsent"`
	IsUnsent2    json.RawMessage `json:"isUnsent"`
	CallDuration json.RawMessage `json:"call_duration"`
	Photos       json.RawMessage `json:"photos"`
	Videos       json.RawMessage `json:"videos"`
	AudioFiles   json.RawMessage `json:"audio_files"`
	Gifs         json.RawMessage `json:"gifs"`
	Files        json.RawMessage `json:"files"`
	Media        json.RawMessage `json:"media"`
	Sticker      json.RawMessage `json:"sticker"`
	Share        json.RawMessage `json:"share"`
}

// fbFixText repairs text that Facebook's export wrote as UTF-8 bytes read as
// Latin-1 ("CafÃ©" for "Café", "ð\u009f\u0098\u0086" for an emoji): a string
// whose every rune is below U+0100 and whose bytes so taken are valid UTF-8 with
// at least one multi-byte sequence is decoded again. Correct text (any rune over
// U+00FF, or Latin-1 bytes that are not UTF-8) is left as it is.
func fbFixText(s string) string {
	multi := false
	for _, r := range s {
		if r > 0xFF {
			return s
		}
		if r >= 0x80 {
			multi = true
		}
	}
	if !multi {
		return s
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	if !utf8.Valid(b) {
		return s
	}
	return string(b)
}

// fbString reads a raw JSON scalar as repaired, clean text.
func fbString(raw json.RawMessage) string {
	return readkit.CleanText(fbFixText(readkit.RawString(raw)))
}

// fbMedia notes a message's photos, videos, audio, GIFs, files and sticker:
// "[photo: name]" lines and attachments.
func fbMedia(m *fbMsgJSON, atts *[]abi.Attachment) []string {
	var lines []string
	for _, g := range []struct {
		raw  json.RawMessage
		what string
	}{{m.Photos, "photo"}, {m.Videos, "video"}, {m.AudioFiles, "audio"}, {m.Gifs, "GIF"}, {m.Files, "file"}, {m.Media, "media"}} {
		var items []json.RawMessage
		if len(g.raw) == 0 || json.Unmarshal(g.raw, &items) != nil {
			continue
		}
		for _, it := range items {
			var f struct {
				URI json.RawMessage `json:"uri"`
			}
			name := ""
			if json.Unmarshal(it, &f) == nil {
				name = readkit.ExportFileName(fbFixText(readkit.RawString(f.URI)))
			}
			if name == "" {
				lines = append(lines, "["+g.what+"]")
				*atts = append(*atts, readkit.AttachmentOf(g.what, "", 0))
				continue
			}
			lines = append(lines, "["+g.what+": "+name+"]")
			*atts = append(*atts, readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0))
		}
	}
	if len(m.Sticker) > 0 && !readkit.IsNull(m.Sticker) {
		lines = append(lines, "[sticker]")
	}
	var sh struct {
		Link      json.RawMessage `json:"link"`
		ShareText json.RawMessage `json:"share_text"`
	}
	if len(m.Share) > 0 && json.Unmarshal(m.Share, &sh) == nil {
		s := "[shared"
		if link := fbString(sh.Link); link != "" {
			s += ": " + link
		}
		s += "]"
		if t := fbString(sh.ShareText); t != "" {
			s += " " + t
		}
		lines = append(lines, s)
	}
	return lines
}

func (MessengerReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	b, ok := readkit.ReadJSONExport(path, rep)
	if !ok {
		return
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		igOldRead(ctx, path, b, out, rep)
		return
	}
	var th fbThreadJSON
	if err := readkit.DecodeStrict(b, &th); err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: err})
		return
	}
	platform := "messenger"
	low := strings.ToLower(filepath.ToSlash(path))
	if strings.Contains(low, "instagram") {
		platform = "instagram"
	}
	var names []string
	for _, p := range th.Participants {
		n := fbString(p)
		if n == "" {
			var o struct {
				Name json.RawMessage `json:"name"`
			}
			if json.Unmarshal(p, &o) == nil {
				n = fbString(o.Name)
			}
		}
		if n != "" {
			names = append(names, n)
		}
	}
	conv := strings.Trim(fbString(th.ThreadPath), "/")
	if conv == "" {
		// messages/inbox/<thread>/message_1.json: the thread's folder
		conv = filepath.Base(filepath.Dir(path))
		if d := filepath.Base(filepath.Dir(filepath.Dir(path))); d == "inbox" || d == "archived_threads" || d == "filtered_threads" || d == "message_requests" || d == "e2ee_cutover" {
			conv = d + "/" + conv
		}
		if conv == "." || conv == "" {
			conv = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
	}
	title := readkit.FirstNonEmpty(fbString(th.Title), fbString(th.ThreadName))
	if title == "" {
		title = strings.Join(names, ", ")
	}
	if title == "" {
		title = conv
	}
	var msgs []memtree.MessageInput
	unsent, empty := 0, 0
	for i, raw := range th.Messages {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		var m fbMsgJSON
		if err := json.Unmarshal(raw, &m); err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message %d", i+1), Err: readkit.DecodeErr(err)})
			continue
		}
		ms, ok, err := readkit.FlexTime(firstRaw(m.TimestampMS, m.Timestamp))
		if err == nil && ok && ms > 0 && ms < 1e11 {
			ms *= 1000 // seconds
		}
		if err != nil || !ok || !readkit.ChatTimeOK(ms) {
			why := "has no timestamp_ms"
			if err != nil {
				why = err.Error()
			} else if ok {
				why = fmt.Sprintf("timestamp %d is before 1980 or after 2200", ms)
			}
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message %d", i+1), Err: fmt.Errorf("%s: message not ingested", why)})
			continue
		}
		if readkit.RawString(m.IsUnsent) == "true" || readkit.RawString(m.IsUnsent2) == "true" {
			unsent++
			continue
		}
		author := readkit.FirstNonEmpty(fbString(m.SenderName), fbString(m.SenderName2))
		var atts []abi.Attachment
		parts := []string{}
		if t := readkit.FirstNonEmpty(fbString(m.Content), fbString(m.Text)); t != "" {
			parts = append(parts, t)
		}
		parts = append(parts, fbMedia(&m, &atts)...)
		if d := readkit.RawInt(m.CallDuration); d > 0 || readkit.RawString(m.Type) == "Call" {
			parts = append(parts, fmt.Sprintf("[call, %d:%02d]", d/60, d%60))
		}
		text := strings.Join(parts, "\n")
		if text == "" {
			empty++
			continue
		}
		msgs = append(msgs, memtree.MessageInput{Author: author, TimestampMS: ms, Text: text, Attachments: atts})
	}
	rep.WarnCount(path, unsent, "%d unsent message(s) not kept")
	rep.WarnCount(path, empty, "%d message(s) with no text and no media not kept")
	if len(msgs) == 0 {
		return
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
	chatRefs(platform, conv, msgs)
	readkit.WriteChat(out, path, platform, conv, title, msgs)
}

// chatRefs names messages that carry no id of their own:
// "<platform>:<conversation>:<epoch ms>", and when others share that time, a hash
// of author and text after it, so that the same message in a later export gets
// the same ref and none replaces another.
func chatRefs(platform, conv string, msgs []memtree.MessageInput) {
	at := map[int64]int{}
	for _, m := range msgs {
		at[m.TimestampMS]++
	}
	seen := map[string]int{}
	for i := range msgs {
		m := &msgs[i]
		ref := fmt.Sprintf("%s:%s:%d", platform, conv, m.TimestampMS)
		if at[m.TimestampMS] > 1 {
			sum := sha256.Sum256([]byte(m.Author + "\x00" + m.Text))
			ref += ":" + hex.EncodeToString(sum[:4])
		}
		if n := seen[ref]; n > 0 {
			seen[ref]++
			ref = fmt.Sprintf("%s#%d", ref, n+1)
		} else {
			seen[ref]++
		}
		m.Ref = ref
	}
}

// firstRaw returns the first raw value that is present and not null.
func firstRaw(raws ...json.RawMessage) json.RawMessage {
	for _, r := range raws {
		if len(bytes.TrimSpace(r)) > 0 && !readkit.IsNull(r) {
			return r
		}
	}
	return nil
}

// igOldRead reads Instagram's messages.json of 2018-2020: an array of
// conversations {"participants": [usernames], "conversation": [{"sender",
// "created_at" (RFC 3339), "text", "media_share_url", "media", ...}]}, each
// conversation named by its participants.
func igOldRead(ctx context.Context, path string, b []byte, out readkit.Output, rep *readkit.Report) {
	var convs []struct {
		Participants []json.RawMessage `json:"participants"`
		Conversation []json.RawMessage `json:"conversation"`
	}
	if err := readkit.DecodeStrict(b, &convs); err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: err})
		return
	}
	for ci, c := range convs {
		if ctx.Err() != nil {
			return
		}
		var names []string
		for _, p := range c.Participants {
			if n := fbString(p); n != "" {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		conv := strings.Join(names, ",")
		if conv == "" {
			conv = fmt.Sprintf("conversation %d", ci+1)
		}
		var msgs []memtree.MessageInput
		for i, raw := range c.Conversation {
			var m struct {
				Sender    json.RawMessage `json:"sender"`
				CreatedAt json.RawMessage `json:"created_at"`
				Text      json.RawMessage `json:"text"`
				MediaURL  json.RawMessage `json:"media_share_url"`
				Media     json.RawMessage `json:"media"`
				Link      json.RawMessage `json:"link"`
			}
			where := fmt.Sprintf("conversation %d, message %d", ci+1, i+1)
			if err := json.Unmarshal(raw, &m); err != nil {
				rep.Fail(readkit.FileError{Path: path, Where: where, Err: readkit.DecodeErr(err)})
				continue
			}
			ms, ok, err := readkit.FlexTime(m.CreatedAt)
			if err != nil || !ok || !readkit.ChatTimeOK(ms) {
				rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("created_at %s is not a time: message not ingested", string(m.CreatedAt))})
				continue
			}
			var parts []string
			if t := fbString(m.Text); t != "" {
				parts = append(parts, t)
			}
			for _, u := range []json.RawMessage{m.MediaURL, m.Media, m.Link} {
				if v := fbString(u); v != "" {
					parts = append(parts, "[shared: "+v+"]")
				}
			}
			if len(parts) == 0 {
				continue
			}
			msgs = append(msgs, memtree.MessageInput{Author: fbString(m.Sender), TimestampMS: ms, Text: strings.Join(parts, "\n")})
		}
		if len(msgs) == 0 {
			continue
		}
		sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].TimestampMS < msgs[j].TimestampMS })
		chatRefs("instagram", conv, msgs)
		readkit.WriteChat(out, path, "instagram", conv, strings.Join(names, ", "), msgs)
	}
}
