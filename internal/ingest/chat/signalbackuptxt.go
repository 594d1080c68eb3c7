package chat

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// SignalBackupTxtReader reads the plain-text chats signalbackup-tools writes
// (--exporttxt DIR): one file a conversation, "<Name> (_id<N>).txt", one line
// a message, "[Jan 05, 2026 10:00:00] <Micah Stubbs> text" (strftime's
// "%b %d, %Y %H:%M:%S" in local time), whose text runs on to the next such
// line; reactions follow the text in parentheses, "(Dana: 👍; Lee: ❤)";
// "[…] *** <Micah Stubbs> sent file "photo.jpg"" names an attachment (kept as
// the author's message with the file named), "[…] *** text" is a status line
// (a call, a group change: counted), and a poll is "<name> Poll: question"
// with its options on the indented lines after it. Its kind is Signal's:
// --kind signal forces signal-export's reader, detection finds this one.
type SignalBackupTxtReader struct{}

func (SignalBackupTxtReader) Kind() string { return KindSignal }

var (
	reSBLine = lazyre.New(`^\[(\p{L}{3,4})\.? (\d{1,2}), (\d{4}) (\d{2}):(\d{2}):(\d{2})\] (.*)$`)
	reSBMsg  = lazyre.New(`^<([^<>]+)> ?(.*)$`)
	reSBFile = lazyre.New(`^\*\*\* <([^<>]+)> sent file(?: "(.*)"| of type (\S+))?(?: \(.*\))?$`)
	// " (Dana: 👍; Lee: ❤)" after a text: names, then one short emoji each
	reSBReactions = lazyre.New(` \(([^():;]{1,80}: [^\s():;]{1,16})(?:; [^():;]{1,80}: [^\s():;]{1,16})*\)$`)
	reSBFileName  = lazyre.New(` \(_id\d+\)$`)
)

func (SignalBackupTxtReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".txt") {
		return false
	}
	n, of := 0, 0
	for _, l := range bytes.Split(readkit.TrimUTF8BOM(head), []byte("\n")) {
		l = bytes.TrimRight(l, "\r")
		if len(bytes.TrimSpace(l)) == 0 || l[0] == ' ' {
			continue
		}
		if of++; of > 20 {
			break
		}
		if m := reSBLine.FindSubmatch(l); m != nil && ircMonths[string(m[1])] != 0 {
			n++
		}
	}
	named := reSBFileName.MatchString(strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)))
	return n >= 1 && (named && n*2 >= of || n >= 3 && n*4 >= of*3)
}

func (SignalBackupTxtReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	text, ok := readkit.ReadText(path, rep)
	if !ok {
		return
	}
	conv := reSBFileName.ReplaceAllString(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), "")
	var msgs []memtree.MessageInput
	cur := -1
	status, undated, other, reactions := 0, 0, 0, 0
	perSecond := map[int64]int{}
	// finish drops the reactions after a finished message's text.
	finish := func() {
		if cur >= 0 {
			if loc := reSBReactions.FindStringIndex(msgs[cur].Text); loc != nil && sbReactionsOnly(msgs[cur].Text[loc[0]:]) {
				msgs[cur].Text = msgs[cur].Text[:loc[0]]
				reactions++
			}
		}
		cur = -1
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		m := reSBLine.FindStringSubmatch(l)
		var mon time.Month
		if m != nil {
			mon = ircMonths[m[1]]
		}
		if m == nil || mon == 0 {
			switch {
			case cur >= 0:
				msgs[cur].Text += "\n" + l
			case strings.TrimSpace(l) != "":
				other++
			}
			continue
		}
		finish()
		ms := time.Date(atoi(m[3]), mon, atoi(m[2]), atoi(m[4]), atoi(m[5]), atoi(m[6]), 0, time.Local).UnixMilli()
		rest := m[7]
		var author, text string
		var att []abi.Attachment
		switch {
		case strings.HasPrefix(rest, "*** "):
			f := reSBFile.FindStringSubmatch(rest)
			if f == nil {
				status++
				continue
			}
			author = f[1]
			name := f[2]
			if name == "" {
				name = "attachment"
				if f[3] != "" {
					name += " (" + f[3] + ")"
				}
			}
			att = []abi.Attachment{{Name: name, ContentType: f[3]}}
			text = "[attachment: " + name + "]"
		default:
			g := reSBMsg.FindStringSubmatch(rest)
			if g == nil {
				other++
				continue
			}
			author, text = g[1], g[2]
		}
		if !readkit.ChatTimeOK(ms) {
			undated++
			continue
		}
		k := perSecond[ms/1000]
		perSecond[ms/1000]++
		msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("signal:%s:%d:%d", conv, ms, k), Author: strings.TrimSpace(author),
			TimestampMS: ms, Text: text, Attachments: att})
		cur = len(msgs) - 1
	}
	finish()
	for i := range msgs {
		msgs[i].Text = strings.TrimRight(msgs[i].Text, "\n ")
	}
	rep.WarnCount(path, status, "%d status line(s) (calls, group and safety-number changes) not stored as messages")
	rep.WarnCount(path, reactions, "the reactions after %d message(s) not stored as text")
	rep.WarnCount(path, other, "%d line(s) before the first message or in no signalbackup-tools layout: not stored")
	if undated > 0 {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("%d message(s) dated before 1980 or after the present: not ingested", undated)})
	}
	rep.Warn(path, "", "times read as local time of this machine ("+tgLocalZone()+"): signalbackup-tools writes local times without a zone")
	if len(msgs) == 0 {
		return
	}
	readkit.WriteChat(out, path, "signal", conv, conv, msgs)
}

// sbReactionsOnly reports whether " (Dana: 👍; Lee: ❤)" holds emoji only after
// each name (no letters or digits): a text that ends in a parenthesis of
// words is the text.
func sbReactionsOnly(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(s, " ("), ")")
	for _, part := range strings.Split(s, "; ") {
		_, emoji, ok := strings.Cut(part, ": ")
		if !ok {
			return false
		}
		for _, r := range emoji {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return false
			}
		}
	}
	return true
}
