package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindDiscord forces the DiscordChatExporter reader.
const KindDiscord = "discord"

// DiscordReader reads a channel exported by DiscordChatExporter as JSON
// ({"guild", "channel", "messages"}), CSV (discordcsv.go) or HTML (discordhtml.go). A channel becomes one source per month
// (ChatSources) under "discord:<guild id>/<channel id>".
type DiscordReader struct{}

func (DiscordReader) Kind() string { return "discord" }

func (DiscordReader) Detect(p string, dir bool, head []byte) bool {
	if !dir && strings.EqualFold(filepath.Ext(p), ".csv") {
		return dcCSVHeader(head)
	}
	if !dir && dcHTMLDetect(p, head) {
		return true
	}
	if dir || !strings.EqualFold(filepath.Ext(p), ".json") {
		return false
	}
	h := readkit.ScanTopKeys(head)
	if !h.Object {
		return false
	}
	for _, k := range []string{"guild", "channel", "messages"} {
		if _, ok := h.Keys[k]; !ok {
			return false
		}
	}
	return true
}

type dcExportJSON struct {
	Guild struct {
		ID   json.RawMessage `json:"id"`
		Name json.RawMessage `json:"name"`
	} `json:"guild"`
	Channel struct {
		ID       json.RawMessage `json:"id"`
		Name     json.RawMessage `json:"name"`
		Category json.RawMessage `json:"category"`
		Type     json.RawMessage `json:"type"`
	} `json:"channel"`
	Messages []json.RawMessage `json:"messages"`
}

type dcMsgJSON struct {
	ID        json.RawMessage `json:"id"`
	Type      json.RawMessage `json:"type"`
	Timestamp json.RawMessage `json:"timestamp"`
	Content   json.RawMessage `json:"content"`
	Author    json.RawMessage `json:"author"`
	// the rest are decoded one by one, so a wrong shape costs only that part
	Attachments json.RawMessage `json:"attachments"`
	Embeds      json.RawMessage `json:"embeds"`
	Stickers    json.RawMessage `json:"stickers"`
	Reference   json.RawMessage `json:"reference"`
}

type dcAuthorJSON struct {
	ID            json.RawMessage `json:"id"`
	Name          json.RawMessage `json:"name"`
	Discriminator json.RawMessage `json:"discriminator"`
	Nickname      json.RawMessage `json:"nickname"`
}

type dcMsg struct {
	id, author, addr, replyTo string
	ms                        int64
	content                   string
	atts                      []abi.Attachment
}

func (DiscordReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		dcReadCSV(ctx, in, out, rep)
		return
	case ".html", ".htm":
		dcReadHTML(ctx, in, out, rep)
		return
	}
	var ex dcExportJSON
	if !readkit.DecodeJSONExport(path, rep, &ex) {
		return
	}
	guildID, chanID := readkit.RawString(ex.Guild.ID), readkit.RawString(ex.Channel.ID)
	if chanID == "" {
		rep.Fail(readkit.FileError{Path: path, Err: errors.New(`field "channel".id is missing: not a DiscordChatExporter export, nothing ingested`)})
		return
	}
	if guildID == "" {
		guildID = "0"
	}
	title := strings.TrimSpace(readkit.CleanText(readkit.RawString(ex.Guild.Name)) + " #" + readkit.CleanText(readkit.RawString(ex.Channel.Name)))
	var msgs []dcMsg
	empty := 0
	for i, rm := range ex.Messages {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		var jm dcMsgJSON
		if err := json.Unmarshal(rm, &jm); err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("message %d", i+1), Err: readkit.DecodeErr(err)})
			continue
		}
		id := readkit.RawString(jm.ID)
		where := "message id " + id
		if id == "" {
			where = fmt.Sprintf("message %d (no id)", i+1)
		}
		ts := strings.TrimSpace(readkit.RawString(jm.Timestamp))
		if ts == "" {
			rep.Fail(readkit.FileError{Path: path, Where: where, Err: errors.New("message has no timestamp: not ingested")})
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("timestamp %q is not an RFC 3339 time: message not ingested", ts)})
			continue
		}
		m := dcMsg{id: id, ms: t.UnixMilli()}
		var a dcAuthorJSON
		if json.Unmarshal(jm.Author, &a) == nil {
			name := readkit.CleanText(readkit.RawString(a.Name))
			m.author = readkit.FirstNonEmpty(readkit.CleanText(readkit.RawString(a.Nickname)), name, readkit.RawString(a.ID))
			m.addr = name
			if d := strings.TrimSpace(readkit.RawString(a.Discriminator)); name != "" && d != "" && strings.Trim(d, "0") != "" {
				m.addr = name + "#" + d
			}
		}
		var ref struct {
			MessageID json.RawMessage `json:"messageId"`
			ChannelID json.RawMessage `json:"channelId"`
		}
		if json.Unmarshal(jm.Reference, &ref) == nil {
			if c := readkit.RawString(ref.ChannelID); c == "" || c == chanID {
				m.replyTo = readkit.RawString(ref.MessageID)
			}
		}
		var lines []string
		content := readkit.CleanText(readkit.RawString(jm.Content))
		if content != "" {
			lines = append(lines, content)
		}
		lines = append(lines, dcEmbeds(jm.Embeds)...)
		var atts []struct {
			URL      json.RawMessage `json:"url"`
			FileName json.RawMessage `json:"fileName"`
			Size     json.RawMessage `json:"fileSizeBytes"`
		}
		if json.Unmarshal(jm.Attachments, &atts) == nil {
			for _, at := range atts {
				name := readkit.CleanText(readkit.RawString(at.FileName))
				if name == "" {
					name = readkit.ExportFileName(dcURLBase(readkit.RawString(at.URL)))
				}
				if name == "" {
					name = "attachment"
				}
				m.atts = append(m.atts, readkit.AttachmentOf(name, readkit.MimeType(name, ""), readkit.RawInt(at.Size)))
				if content == "" {
					lines = append(lines, "[attachment "+name+"]")
				}
			}
		}
		var stickers []struct {
			Name json.RawMessage `json:"name"`
		}
		if content == "" && json.Unmarshal(jm.Stickers, &stickers) == nil {
			for _, s := range stickers {
				lines = append(lines, strings.TrimSpace("[sticker "+readkit.CleanText(readkit.RawString(s.Name)))+"]")
			}
		}
		m.content = strings.Join(lines, "\n")
		if m.content == "" && len(m.atts) == 0 {
			empty++
			continue
		}
		msgs = append(msgs, m)
	}
	rep.WarnCount(path, empty, "%d message(s) with no content, embed or attachment not kept")
	if len(msgs) == 0 {
		return
	}
	authorOf := map[string]string{}
	for _, m := range msgs {
		if m.id != "" {
			if _, dup := authorOf[m.id]; !dup {
				authorOf[m.id] = m.author
			}
		}
	}
	seen := map[string]int{}
	res := make([]memtree.MessageInput, 0, len(msgs))
	for i, m := range msgs {
		text := m.content
		if a := authorOf[m.replyTo]; m.replyTo != "" && a != "" {
			text = "(reply to " + a + ") " + text
		}
		ref := "discord:" + chanID + ":" + m.id
		if m.id == "" {
			ref = fmt.Sprintf("discord:%s:@%d", chanID, i)
		} else if n := seen[m.id]; n > 0 {
			ref = fmt.Sprintf("%s#%d", ref, n+1)
		}
		seen[m.id]++
		mi := memtree.MessageInput{
			Ref: ref, Author: m.author, AuthorAddr: m.addr, TimestampMS: m.ms, Text: text, Attachments: m.atts,
		}
		if m.replyTo != "" {
			mi.ReplyTo = "discord:" + chanID + ":" + m.replyTo
		}
		res = append(res, mi)
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].TimestampMS < res[j].TimestampMS })
	readkit.WriteChat(out, path, "discord", guildID+"/"+chanID, title, res)
}

// dcEmbeds renders embeds as lines: title, description, then "name: value" per field.
func dcEmbeds(raw json.RawMessage) []string {
	var embeds []struct {
		Title       json.RawMessage `json:"title"`
		Description json.RawMessage `json:"description"`
		Fields      []struct {
			Name  json.RawMessage `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"fields"`
	}
	if json.Unmarshal(raw, &embeds) != nil {
		return nil
	}
	var lines []string
	for _, e := range embeds {
		if t := readkit.CleanText(readkit.RawString(e.Title)); t != "" {
			lines = append(lines, t)
		}
		if d := readkit.CleanText(readkit.RawString(e.Description)); d != "" {
			lines = append(lines, d)
		}
		for _, f := range e.Fields {
			n, v := readkit.CleanText(readkit.RawString(f.Name)), readkit.CleanText(readkit.RawString(f.Value))
			switch {
			case n != "" && v != "":
				lines = append(lines, n+": "+v)
			case n != "" || v != "":
				lines = append(lines, n+v)
			}
		}
	}
	return lines
}

// dcURLBase is the last path segment of a URL, without its query.
func dcURLBase(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return u
}
