package chat

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindIMessage forces the iMessage (imessage-exporter text) reader.
const KindIMessage = "imessage"

// IMessageReader reads the text files imessage-exporter writes, one a
// conversation (named after the contact, number, address or group): each
// message is a timestamp line ("Jan 05, 2026  9:00:00 AM", maybe followed by
// "(Read by you after 1 minute)"), a sender line ("Me", a name, a number or an
// address), then its lines: text, attachment file paths (named as attachments),
// "Reactions:" and the reactions under it (dropped), and the thread's replies,
// indented by four spaces (kept as replies to it). Times are local wall times.
type IMessageReader struct{}

func (IMessageReader) Kind() string { return KindIMessage }

var reIMStamp = lazyre.New(`^([A-Z][a-z]{2} \d{2}, \d{4} +\d{1,2}:\d{2}:\d{2} [AP]M)(?: \(Read by .+ after .+\))?$`)

// reIMReaction is a reaction line under "Reactions:" ("Loved by Me").
var reIMReaction = lazyre.New(`^(?:Loved|Liked|Disliked|Laughed|Emphasized|Questioned|Emoji\(.*\)|Sticker from|Custom\(.*\)|[A-Z][a-z]+) by |^Sticker from `)

// imAttachmentExts are the file types a message's attachment line ends with.
var imAttachmentExts = map[string]bool{".heic": true, ".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".mov": true, ".mp4": true,
	".pdf": true, ".caf": true, ".m4a": true, ".mp3": true, ".vcf": true, ".webp": true, ".tiff": true, ".zip": true, ".docx": true,
	".xlsx": true, ".pptx": true, ".pluginpayloadattachment": true, ".txt": true, ".aac": true, ".amr": true}

func (IMessageReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".txt") {
		return false
	}
	lines := strings.SplitN(string(readkit.TrimUTF8BOM(head)), "\n", 4)
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		return reIMStamp.MatchString(strings.TrimRight(l, "\r")) && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != ""
	}
	return false
}

func (IMessageReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	text, ok := readkit.ReadText(path, rep)
	if !ok {
		return
	}
	conv := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	type imMsg struct {
		mi        memtree.MessageInput
		indent    int
		reactions bool
	}
	var msgs []*imMsg
	var top, cur *imMsg
	wantSender := false
	perSecond := map[int64]int{}
	lines := strings.Split(text, "\n")
	for i, raw := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		l := strings.TrimRight(raw, "\r ")
		trimmed := strings.TrimLeft(l, " ")
		indent := len(l) - len(trimmed)
		if m := reIMStamp.FindStringSubmatch(trimmed); m != nil {
			stamp := strings.Join(strings.Fields(m[1]), " ")
			t, err := time.ParseInLocation("Jan 02, 2006 3:04:05 PM", stamp, time.Local)
			if err != nil || !readkit.ChatTimeOK(t.UnixMilli()) {
				rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", i+1), Err: fmt.Errorf("timestamp %q is not a date after 1980: message not ingested", m[1])})
				cur, wantSender = nil, false
				continue
			}
			ms := t.UnixMilli()
			k := perSecond[ms/1000]
			perSecond[ms/1000]++
			cur = &imMsg{indent: indent, mi: memtree.MessageInput{Ref: fmt.Sprintf("imessage:%s:%d:%d", conv, ms, k), TimestampMS: ms}}
			if indent > 0 && top != nil {
				cur.mi.ReplyTo = top.mi.Ref
			} else {
				top = cur
			}
			msgs = append(msgs, cur)
			wantSender = true
			continue
		}
		if cur == nil {
			continue
		}
		if wantSender {
			cur.mi.Author = strings.TrimSpace(trimmed)
			if strings.Contains(cur.mi.Author, "@") || strings.HasPrefix(cur.mi.Author, "+") {
				cur.mi.AuthorAddr = cur.mi.Author
			}
			wantSender = false
			continue
		}
		body := strings.TrimPrefix(l, strings.Repeat(" ", cur.indent))
		switch {
		case trimmed == "This message responded to an earlier message.":
			continue
		case trimmed == "Reactions:":
			cur.reactions = true
			continue
		case cur.reactions && reIMReaction.MatchString(trimmed):
			continue
		}
		cur.reactions = false
		if ext := strings.ToLower(filepath.Ext(trimmed)); imAttachmentExts[ext] && (strings.Contains(trimmed, "/") || !strings.Contains(trimmed, " ")) {
			name := readkit.ExportFileName(trimmed)
			cur.mi.Attachments = append(cur.mi.Attachments, readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0))
			body = "[attachment " + name + "]"
		}
		if cur.mi.Text == "" && strings.TrimSpace(body) == "" {
			continue
		}
		if cur.mi.Text != "" {
			cur.mi.Text += "\n"
		}
		cur.mi.Text += body
	}
	var res []memtree.MessageInput
	empty := 0
	for _, m := range msgs {
		m.mi.Text = strings.TrimSpace(m.mi.Text)
		if m.mi.Text == "" && len(m.mi.Attachments) == 0 {
			empty++
			continue
		}
		res = append(res, m.mi)
	}
	rep.WarnCount(path, empty, "%d message(s) with no text and no attachment not kept")
	rep.Warn(path, "", "times read as local time of this machine ("+tgLocalZone()+"): imessage-exporter writes no zone")
	if len(res) == 0 {
		return
	}
	readkit.WriteChat(out, path, "imessage", conv, conv, res)
}
