package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindSignal forces the Signal (signal-export) reader.
const KindSignal = "signal"

// SignalReader reads the chats signal-export writes, a folder per chat named
// after it: chat.md, one message a "[2026-01-05 10:00:00] Sender: text" line
// (older versions without seconds) whose text runs on to the next such line, a
// quoted message as "> " lines before it, reactions as "(- Name: emoji -)",
// attachments as "![name](./media/name)"; and data.json, one JSON object a
// message ({"date", "sender", "body", "quote", "attachments": [{"name",
// "path"}], "deleted"}). "Me" is the exporter. Times are local wall times.
type SignalReader struct{}

func (SignalReader) Kind() string { return KindSignal }

var (
	reSignalLine     = lazyre.New(`^\[(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2})(?::(\d{2}))?\] ([^:\n]{1,120}?): ?(.*)$`)
	reSignalReaction = lazyre.New(`^\(- .* -\)$`)
	reSignalAttach   = lazyre.New(`!?\[([^\]]*)\]\(\.{1,2}/[^)]*\)\s*`)
)

func (SignalReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	h := bytes.TrimLeft(readkit.TrimUTF8BOM(head), " \r\n")
	first, _, _ := bytes.Cut(h, []byte{'\n'})
	switch strings.ToLower(filepath.Ext(p)) {
	case ".md":
		return reSignalLine.Match(bytes.TrimRight(first, "\r"))
	case ".json", ".jsonl":
		var m map[string]json.RawMessage
		if json.Unmarshal(first, &m) != nil {
			return false
		}
		_, d := m["date"]
		_, s := m["sender"]
		_, b := m["body"]
		_, q := m["quote"]
		return d && s && b && q
	}
	return false
}

func (SignalReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	conv := filepath.Base(filepath.Dir(path))
	if conv == "." || conv == string(filepath.Separator) {
		conv = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	var msgs []memtree.MessageInput
	perSecond := map[int64]int{}
	add := func(ms int64, sender, text string, atts []abi.Attachment) {
		text = strings.TrimSpace(text)
		if text == "" && len(atts) == 0 {
			return
		}
		k := perSecond[ms/1000]
		perSecond[ms/1000]++
		mi := memtree.MessageInput{Ref: fmt.Sprintf("signal:%s:%d:%d", conv, ms, k), Author: sender, TimestampMS: ms, Text: text, Attachments: atts}
		if strings.HasPrefix(sender, "+") {
			mi.AuthorAddr = sender
		}
		msgs = append(msgs, mi)
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".json" || ext == ".jsonl" {
		f, ok := readkit.OpenInput(path, rep)
		if !ok {
			return
		}
		defer f.Close()
		sc := readkit.NewLineScanner(f)
		for n := 1; sc.Scan(); n++ {
			if n%1024 == 0 && ctx.Err() != nil {
				return
			}
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var m struct {
				Date        string `json:"date"`
				Sender      string `json:"sender"`
				Body        string `json:"body"`
				Quote       string `json:"quote"`
				Deleted     bool   `json:"deleted"`
				Attachments []struct {
					Name string `json:"name"`
				} `json:"attachments"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", n), Err: readkit.DecodeErr(err)})
				continue
			}
			t, err := time.ParseInLocation("2006-01-02T15:04:05", m.Date, time.Local)
			if err != nil {
				t, err = time.Parse(time.RFC3339Nano, m.Date)
			}
			if err != nil || !readkit.ChatTimeOK(t.UnixMilli()) {
				rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", n), Err: fmt.Errorf("date %q is not a time after 1980: message not ingested", m.Date)})
				continue
			}
			if m.Deleted {
				continue
			}
			var atts []abi.Attachment
			text := strings.TrimSpace(m.Body)
			for _, a := range m.Attachments {
				if a.Name != "" {
					atts = append(atts, readkit.AttachmentOf(a.Name, readkit.MimeType(a.Name, ""), 0))
					text = strings.TrimSpace(text + "\n[attachment " + a.Name + "]")
				}
			}
			add(t.UnixMilli(), strings.TrimSpace(m.Sender), text, atts)
		}
		if err := sc.Err(); err != nil {
			rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("%w; the lines after it are not read", err)})
		}
	} else {
		content, ok := readkit.ReadText(path, rep)
		if !ok {
			return
		}
		type cur struct {
			ms     int64
			sender string
			lines  []string
		}
		var c *cur
		flush := func() {
			if c == nil {
				return
			}
			var keep []string
			var atts []abi.Attachment
			for _, l := range c.lines {
				l = strings.TrimRight(l, " ")
				switch {
				case strings.HasPrefix(l, "> ") || l == ">":
					continue // the quoted message
				case reSignalReaction.MatchString(l):
					continue
				}
				for _, m := range reSignalAttach.FindAllStringSubmatch(l, -1) {
					atts = append(atts, readkit.AttachmentOf(m[1], readkit.MimeType(m[1], ""), 0))
				}
				l = reSignalAttach.ReplaceAllString(l, "")
				if s := strings.TrimSpace(l); s == "(( sticker ))" || strings.HasPrefix(s, "((") && strings.HasSuffix(s, "))") {
					l = "[sticker " + strings.TrimSpace(strings.Trim(s, "()")) + "]"
				}
				keep = append(keep, l)
			}
			text := strings.TrimSpace(strings.Join(keep, "\n"))
			for _, a := range atts {
				text = strings.TrimSpace(text + "\n[attachment " + a.Name + "]")
			}
			if text != "(This message was deleted)" {
				add(c.ms, c.sender, text, atts)
			}
			c = nil
		}
		for n, l := range strings.Split(content, "\n") {
			if n%1024 == 0 && ctx.Err() != nil {
				return
			}
			if m := reSignalLine.FindStringSubmatch(l); m != nil {
				flush()
				t := time.Date(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]), atoi(m[4]), atoi(m[5]), atoi(m[6]), 0, time.Local)
				if !readkit.ChatTimeOK(t.UnixMilli()) {
					rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("line %d", n+1), Err: fmt.Errorf("date before 1980 (a message without a timestamp): not ingested")})
					continue
				}
				c = &cur{ms: t.UnixMilli(), sender: strings.TrimSpace(m[7]), lines: []string{m[8]}}
				continue
			}
			if c != nil {
				c.lines = append(c.lines, l)
			}
		}
		flush()
	}
	rep.Warn(path, "", "times read as local time of this machine ("+tgLocalZone()+"): signal-export writes no zone")
	if len(msgs) == 0 {
		return
	}
	readkit.WriteChat(out, path, "signal", conv, conv, msgs)
}
