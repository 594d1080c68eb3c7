package chat

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindIRC forces the IRC log reader.
const KindIRC = "irc"

// IRCReader reads the channel and query logs IRC clients write, each layout
// recognised by its lines:
//   - irssi: "--- Log opened Mon Jan 05 10:00:00 2026", "10:00 <@nick> text",
//     "10:01  * nick waves", "10:02 -!- nick [u@h] has joined #chan",
//     "--- Day changed Tue Jan 06 2026" (the time alone on a line; the day from
//     the last "Log opened" or "Day changed");
//   - WeeChat: "2026-01-05 10:00:00<TAB>@nick<TAB>text", " *" actions and
//     "-->", "<--", "--" events in the nick column;
//   - ZNC's log module: "[10:00:00] <nick> text", "[10:00:01] * nick waves",
//     "[10:00:02] *** Joins: nick (u@h)", the day from the file name
//     ("2026-01-05.log", "net_#chan_20260105.log");
//   - HexChat: "**** BEGIN LOGGING AT Mon Jan  5 10:00:00 2026" and
//     "Jan 05 10:00:00 <nick>\ttext".
//
// A message keeps its nick as author (mode prefixes @ + % ~ & dropped); an
// action ("/me") is kept as "* nick text"; joins, parts, quits, nick and mode
// changes are counted and named in one warning. Times carry no zone: they are
// read as local wall times. The conversation is the file name without its date.
type IRCReader struct{}

func (IRCReader) Kind() string { return KindIRC }

var (
	reIrssiMsg    = lazyre.New(`^(\d{1,2}):(\d{2})(?::(\d{2}))? <[ @+%~&!]?([^>\s]+)> ?(.*)$`)
	reIrssiAction = lazyre.New(`^(\d{1,2}):(\d{2})(?::(\d{2}))?\s{1,2}\* (\S+) (.*)$`)
	reIrssiEvent  = lazyre.New(`^(\d{1,2}):(\d{2})(?::(\d{2}))? -!- `)
	reIrssiDay    = lazyre.New(`^--- (?:Log opened|Day changed) (?:\w{3} )?(\w{3}) +(\d{1,2})(?: (\d{2}):(\d{2}):(\d{2}))? (\d{4})`)
	reZNCMsg      = lazyre.New(`^\[(\d{2}):(\d{2}):(\d{2})\] <([^>\s]+)> ?(.*)$`)
	reZNCAction   = lazyre.New(`^\[(\d{2}):(\d{2}):(\d{2})\] \* (\S+) (.*)$`)
	reZNCEvent    = lazyre.New(`^\[(\d{2}):(\d{2}):(\d{2})\] \*\*\* `)
	reWeechat     = lazyre.New(`^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\t([^\t]*)\t(.*)$`)
	reHexBegin    = lazyre.New(`^\*\*\*\* (?:BEGIN|ENDING) LOGGING AT \w{3} (\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})`)
	reHexMsg      = lazyre.New(`^(\w{3}) (\d{2}) (\d{2}):(\d{2}):(\d{2}) <([^>\s]+)>\t?(.*)$`)
	reHexAction   = lazyre.New(`^(\w{3}) (\d{2}) (\d{2}):(\d{2}):(\d{2}) \*\t(\S+) (.*)$`)
	reHexEvent    = lazyre.New(`^(\w{3}) (\d{2}) (\d{2}):(\d{2}):(\d{2}) (?:\*|-->|<--|---)\t`)
	reIRCNameDate = lazyre.New(`(\d{4})-?(\d{2})-?(\d{2})`)
)

// ircLayout names a log's layout, told by its first lines ("" when none).
func ircLayout(lines []string) string {
	votes := map[string]int{}
	for _, l := range lines {
		switch {
		case reIrssiDay.MatchString(l) || reIrssiMsg.MatchString(l) || reIrssiEvent.MatchString(l):
			votes["irssi"]++
		case reWeechat.MatchString(l):
			votes["weechat"]++
		case reZNCMsg.MatchString(l) || reZNCEvent.MatchString(l) || reZNCAction.MatchString(l):
			votes["znc"]++
		case reHexBegin.MatchString(l) || reHexMsg.MatchString(l) || reHexEvent.MatchString(l):
			votes["hexchat"]++
		}
	}
	best, n := "", 0
	for k, v := range votes {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	if n < 2 || n*2 < len(lines) {
		return ""
	}
	return best
}

func (IRCReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".log", ".txt", ".weechatlog":
	default:
		return false
	}
	var lines []string
	for _, l := range strings.Split(string(readkit.TrimUTF8BOM(head)), "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" && len(lines) < 20 {
			lines = append(lines, l)
		}
	}
	if len(lines) > 1 && len(head) == readkit.HeadBytes {
		lines = lines[:len(lines)-1] // the last may be cut
	}
	return ircLayout(lines) != ""
}

// ircMonths reads English month abbreviations (the clients write them so).
var ircMonths = map[string]time.Month{"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return n
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// ircNick drops a nick's mode prefix.
func ircNick(s string) string {
	return strings.TrimLeft(strings.TrimSpace(s), "@+%~&!")
}

func (IRCReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	text, ok := readkit.ReadText(path, rep)
	if !ok {
		return
	}
	var all []string
	sc := readkit.NewLineScanner(strings.NewReader(text))
	for sc.Scan() {
		all = append(all, strings.TrimRight(sc.Text(), "\r"))
	}
	var first []string
	for _, l := range all {
		if strings.TrimSpace(l) != "" {
			first = append(first, l)
			if len(first) == 20 {
				break
			}
		}
	}
	layout := ircLayout(first)
	if layout == "" {
		rep.Fail(readkit.FileError{Path: path, Err: errors.New("no line in the layout of an irssi, WeeChat, ZNC or HexChat log: not an IRC log, nothing ingested")})
		return
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	// the day of a log without dates on its lines: from the file name
	var day time.Time
	if m := reIRCNameDate.FindStringSubmatch(base); m != nil {
		day = time.Date(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]), 0, 0, 0, 0, time.Local)
	}
	conv := strings.Trim(reIRCNameDate.ReplaceAllString(base, ""), "_-. ")
	if conv == "" {
		conv = filepath.Base(filepath.Dir(path)) // ZNC: <network>/<#chan>/<date>.log
	}
	year := 0 // HexChat lines carry no year: from the last BEGIN LOGGING
	var msgs []memtree.MessageInput
	var cur *memtree.MessageInput
	events, undated, other := 0, 0, 0
	perSecond := map[int64]int{}
	add := func(ms int64, nick, text string) {
		if !readkit.ChatTimeOK(ms) {
			undated++
			cur = nil
			return
		}
		k := perSecond[ms/1000]
		perSecond[ms/1000]++
		msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("irc:%s:%d:%d", conv, ms, k), Author: nick, AuthorAddr: nick, TimestampMS: ms, Text: text})
		cur = &msgs[len(msgs)-1]
	}
	at := func(h, mi, s string) int64 {
		if day.IsZero() {
			return 0
		}
		return time.Date(day.Year(), day.Month(), day.Day(), atoi(h), atoi(mi), atoi(s), 0, time.Local).UnixMilli()
	}
	for i, l := range all {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		switch layout {
		case "irssi":
			if m := reIrssiDay.FindStringSubmatch(l); m != nil {
				if mon, ok := ircMonths[m[1]]; ok {
					day = time.Date(atoi(m[6]), mon, atoi(m[2]), 0, 0, 0, 0, time.Local)
				}
				cur = nil
				continue
			}
			if strings.HasPrefix(l, "--- Log closed") {
				cur = nil
				continue
			}
			if m := reIrssiMsg.FindStringSubmatch(l); m != nil {
				add(at(m[1], m[2], m[3]), ircNick(m[4]), m[5])
				continue
			}
			if m := reIrssiAction.FindStringSubmatch(l); m != nil {
				add(at(m[1], m[2], m[3]), ircNick(m[4]), "* "+m[4]+" "+m[5])
				continue
			}
			if reIrssiEvent.MatchString(l) {
				events++
				cur = nil
				continue
			}
		case "znc":
			if m := reZNCMsg.FindStringSubmatch(l); m != nil {
				add(at(m[1], m[2], m[3]), ircNick(m[4]), m[5])
				continue
			}
			if m := reZNCAction.FindStringSubmatch(l); m != nil {
				add(at(m[1], m[2], m[3]), ircNick(m[4]), "* "+m[4]+" "+m[5])
				continue
			}
			if reZNCEvent.MatchString(l) {
				events++
				cur = nil
				continue
			}
		case "weechat":
			if m := reWeechat.FindStringSubmatch(l); m != nil {
				nick := strings.TrimSpace(m[7])
				switch {
				case nick == "-->" || nick == "<--" || nick == "--" || nick == "=!=" || nick == "":
					events++
					cur = nil
				case nick == "*" || nick == " *":
					actor, text, _ := strings.Cut(m[8], " ")
					ms := time.Date(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]), atoi(m[4]), atoi(m[5]), atoi(m[6]), 0, time.Local).UnixMilli()
					add(ms, ircNick(actor), "* "+ircNick(actor)+" "+text)
				default:
					ms := time.Date(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]), atoi(m[4]), atoi(m[5]), atoi(m[6]), 0, time.Local).UnixMilli()
					add(ms, ircNick(nick), m[8])
				}
				continue
			}
		case "hexchat":
			if m := reHexBegin.FindStringSubmatch(l); m != nil {
				year = atoi(m[6])
				cur = nil
				continue
			}
			hexAt := func(mon, d, h, mi, s string) int64 {
				mo, ok := ircMonths[mon]
				if !ok || year == 0 {
					return 0
				}
				return time.Date(year, mo, atoi(d), atoi(h), atoi(mi), atoi(s), 0, time.Local).UnixMilli()
			}
			if m := reHexMsg.FindStringSubmatch(l); m != nil {
				add(hexAt(m[1], m[2], m[3], m[4], m[5]), ircNick(m[6]), m[7])
				continue
			}
			if m := reHexAction.FindStringSubmatch(l); m != nil && !ircEventText(m[7]) {
				add(hexAt(m[1], m[2], m[3], m[4], m[5]), ircNick(m[6]), "* "+m[6]+" "+m[7])
				continue
			}
			if reHexEvent.MatchString(l) {
				events++
				cur = nil
				continue
			}
		}
		// a line in no layout: the text of a message that broke over lines, or noise
		if cur != nil {
			cur.Text += "\n" + l
		} else {
			other++
		}
	}
	rep.WarnCount(path, events, "%d join, part, quit, nick, mode or topic line(s) not stored as messages")
	if undated > 0 {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("%d message(s) without a day (no \"Log opened\" or \"Day changed\" line before them, no date in the file name, or a year before 1980): not ingested", undated)})
	}
	if other > 0 {
		rep.Warn(path, "", fmt.Sprintf("%d line(s) in no %s log layout and after no message: not stored", other, layout))
	}
	rep.Warn(path, "", "times read as local time of this machine ("+tgLocalZone()+"): IRC logs carry no zone")
	if len(msgs) == 0 {
		return
	}
	readkit.WriteChat(out, path, "irc", conv, conv, msgs)
}

// ircEventPhrases are how HexChat (which writes joins and actions alike, after
// "*") words its events.
var ircEventPhrases = []string{" has joined ", " has left ", " has quit ", " is now known as ", " sets mode ", " has changed the topic", " has kicked ", " sets ban on ", " gives channel operator status", " removes channel operator status", " now talking in "}

// ircEventText reports whether an action's text is a client's event line.
func ircEventText(s string) bool {
	s = " " + s + " "
	for _, p := range ircEventPhrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return strings.HasPrefix(s, " has joined") || strings.HasPrefix(s, " has left") || strings.HasPrefix(s, " has quit")
}
