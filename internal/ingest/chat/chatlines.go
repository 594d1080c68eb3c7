package chat

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindChatLines forces the reader of chat lines of an inferred shape.
const KindChatLines = "chatlines"

// ChatLinesReader reads a text file of chat lines in a layout no app reader
// knows, once the file itself shows the layout: most of its lines start with a
// date and time (any order of the date's numbers, month names and AM/PM words
// of the locales WhatsApp writes: waParse), in brackets or not, then maybe a
// separator ("|", "-", "—", tab), then the author and one delimiter the file
// uses throughout ("Name: text", "<Name> text", "Name | text", "Name - text",
// "Name<TAB>text", "Name > text"). Which delimiter is inferred from all the
// lines: the one that leaves short names that repeat. The date order and the
// AM/PM words are inferred from the file's times as for WhatsApp (waResolve).
// A line without a timestamp continues the message before it; a stamped line
// without an author (an event) is counted. Lines "Name, [05.01.26 10:00]" each
// followed by their text (Telegram Desktop's copied messages) are the other
// layout read. Application logs ("INFO: ...")
// are not chats: a file whose authors are log levels is left to the document
// reader. Times are local wall times.
type ChatLinesReader struct{}

func (ChatLinesReader) Kind() string { return KindChatLines }

// chatLinesDelims are the author delimiters a file may use, the most specific
// first (a tie goes to the earlier).
var chatLinesDelims = []string{"<>", "\t", " | ", " : ", ": ", " > ", " - ", " — ", " – "}

// Bounds of the inference: an author is at most chatLinesNameRunes runes of at
// most chatLinesNameWords words; a file's layout needs chatLinesMinLines lines,
// and its delimiter must split chatLinesShare of its stamped lines.
const (
	chatLinesNameRunes = 48
	chatLinesNameWords = 5
	chatLinesMinLines  = 3
	chatLinesShare     = 0.6
)

// chatLineStamp reads the timestamp at the start of l and returns what follows
// it (the separator after the time dropped), ok false when l starts with none.
func chatLineStamp(l string, buf *waBuf) (st waStamp, rest string, ok bool) {
	t := waTrimMarks(l)
	// tabs read as spaces (one byte each: offsets stay); rest is cut from t
	st, isHead, stamped := waParse(strings.ReplaceAll(t, "\t", " "), buf)
	// words after the time that are no AM/PM word ran on into the author
	runOn := st.post && st.mark != "" && !waKnownMark(st.mark)
	switch {
	case isHead && !(runOn && st.hasSpace):
		// "]", " - ", ": " or ", " after the time
		rest = t[len(t)-len(st.rest):]
	case stamped && st.hasSpace:
		rest = t[st.spaceAt:]
		if st.post {
			// the words read after the time ran on into the author ("AM
			// Micah Stubbs"): an AM/PM word is the first of them, if any
			st.mark, st.post = "", false
			w, _, _ := strings.Cut(strings.Replace(rest, "\t", " ", 1), " ")
			if n := strings.ToLower(strings.ReplaceAll(w, ".", "")); waKnownMark(n) {
				st.mark, st.post = n, true
				rest = rest[len(w)+1:]
			}
		}
	default:
		return waStamp{}, "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	for _, sep := range []string{"| ", "- ", "— ", "– ", "» ", ">> ", "> "} {
		if strings.HasPrefix(rest, sep) {
			rest = strings.TrimLeft(rest[len(sep):], " ")
			break
		}
	}
	if st.post && st.mark != "" && !waKnownMark(st.mark) {
		// a word after the time that is no AM/PM word is the author's
		return waStamp{}, "", false
	}
	return st, rest, true
}

// chatLineSplit splits what follows a timestamp at delim into author and text.
func chatLineSplit(rest, delim string) (author, text string, ok bool) {
	if delim == "<>" {
		if !strings.HasPrefix(rest, "<") {
			return "", "", false
		}
		i := strings.Index(rest, ">")
		if i < 2 {
			return "", "", false
		}
		author, text = rest[1:i], strings.TrimPrefix(rest[i+1:], " ")
		author = strings.TrimLeft(author, "@+%~& ")
	} else {
		i := strings.Index(rest, delim)
		if i < 1 {
			return "", "", false
		}
		author, text = rest[:i], rest[i+len(delim):]
	}
	author = strings.TrimSpace(author)
	if !chatLineName(author) {
		return "", "", false
	}
	return author, text, true
}

// chatLineName reports whether s can be a chat author: a short name (a few
// words, a letter in it, no sentence punctuation or markup at its end).
func chatLineName(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > chatLinesNameRunes || len(strings.Fields(s)) > chatLinesNameWords {
		return false
	}
	letter := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			letter = true
		}
		if strings.ContainsRune("[]{}()=/\\\"", r) {
			return false
		}
	}
	last, _ := utf8.DecodeLastRuneInString(s)
	// a sender not in the address book is named by the number
	return (letter || len(phoneDigitsOf(s)) >= 5 && strings.Trim(s, "+0123456789 -()") == "") && !strings.ContainsRune(".!?,;", last)
}

// reChatNameFirst is a header that names the author first and its text on the
// lines after it: "Micah Stubbs, [05.01.26 10:00]", as Telegram Desktop
// copies messages.
var reChatNameFirst = lazyre.New(`^(.{1,80}?), \[([^\[\]]{6,40})\]\s*$`)

// chatNameFirst reads a name-first header line.
func chatNameFirst(l string, buf *waBuf) (author string, st waStamp, ok bool) {
	m := reChatNameFirst.FindStringSubmatch(strings.TrimRight(waTrimMarks(l), "\r"))
	if m == nil {
		return "", waStamp{}, false
	}
	author = strings.TrimSpace(m[1])
	if !chatLineName(author) {
		return "", waStamp{}, false
	}
	st, isHead, _ := waParse("["+m[2]+"] x", buf)
	if !isHead {
		return "", waStamp{}, false
	}
	return author, st, true
}

// chatNameFirstLayout reports whether lines are name-first headers, each
// followed by its text: at least chatLinesMinLines headers, a quarter of the
// lines or more, and authors who write more than once.
func chatNameFirstLayout(lines []string) bool {
	var buf waBuf
	n, nonEmpty := 0, 0
	names := map[string]bool{}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		nonEmpty++
		if a, _, ok := chatNameFirst(l, &buf); ok {
			n++
			names[a] = true
		}
	}
	return n >= chatLinesMinLines && n*4 >= nonEmpty && len(names) < n
}

// chatLogLevels are the words application logs put where a chat has its
// author.
var chatLogLevels = map[string]bool{"info": true, "warn": true, "warning": true, "error": true, "err": true, "debug": true,
	"trace": true, "fatal": true, "notice": true, "critical": true, "crit": true, "severe": true, "fine": true, "verbose": true}

// chatLinesLayout infers a file's author delimiter from its lines' rests
// (those that follow a timestamp): "" when no delimiter splits enough of them
// into short names that repeat, or when the names are a log's levels.
func chatLinesLayout(rests []string) string {
	if len(rests) < chatLinesMinLines {
		return ""
	}
	best, bestN := "", 0
	for _, d := range chatLinesDelims {
		n := 0
		names := map[string]int{}
		levels := 0
		for _, r := range rests {
			if a, _, ok := chatLineSplit(r, d); ok {
				n++
				names[a]++
				if f := strings.Fields(a); chatLogLevels[strings.ToLower(strings.Trim(f[0], "[]<>:"))] || chatLogLevels[strings.ToLower(strings.Trim(f[len(f)-1], "[]<>:"))] {
					levels++ // "INFO", "INFO Server", "main ERROR"
				}
			}
		}
		if n < chatLinesMinLines || float64(n) < chatLinesShare*float64(len(rests)) || levels*2 > n {
			continue
		}
		// a chat's authors write several lines each; a delimiter inside the
		// text makes as many "names" as lines
		if len(names) > max(3, n*2/3) || len(names) == n {
			continue
		}
		if n > bestN {
			best, bestN = d, n
		}
	}
	return best
}

func (ChatLinesReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".txt", ".log", ".text":
	default:
		return false
	}
	lines := strings.Split(string(readkit.TrimUTF8BOM(head)), "\n")
	if len(lines) > 1 && len(head) == readkit.HeadBytes {
		lines = lines[:len(lines)-1] // the last may be cut
	}
	var buf waBuf
	var rests []string
	other := 0
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		if _, rest, ok := chatLineStamp(l, &buf); ok {
			rests = append(rests, rest)
		} else {
			other++
		}
		if len(rests)+other >= 40 {
			break
		}
	}
	// most lines stamped (continuation lines may be many, not most)
	if len(rests) < chatLinesMinLines || len(rests)*2 < other {
		return chatNameFirstLayout(lines[:min(len(lines), 80)])
	}
	delim := chatLinesLayout(rests)
	if delim == "" {
		return chatNameFirstLayout(lines[:min(len(lines), 80)])
	}
	// an IRC client's log (WeeChat's tab columns) is the IRC reader's, and
	// WhatsApp's "Name: text" (and KakaoTalk's "Name : text") WhatsApp's when it recognises the file
	var kept []string
	for _, l := range lines {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" && len(kept) < 20 {
			kept = append(kept, l)
		}
	}
	return ircLayout(kept) == "" && !((delim == ": " || delim == " : ") && (WhatsAppReader{}).Detect(p, false, head))
}

func (ChatLinesReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	text, ok := readkit.ReadText(path, rep)
	if !ok {
		return
	}
	lines := strings.Split(text, "\n")
	var heads []waHead
	var rests []string
	var buf waBuf
	for i, l := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		if st, rest, ok := chatLineStamp(strings.TrimRight(l, "\r"), &buf); ok {
			heads = append(heads, waHead{st: st, ok: true, line: int32(i)})
			rests = append(rests, rest)
		}
	}
	delim := chatLinesLayout(rests)
	nameFirst := false
	if delim == "" && chatNameFirstLayout(lines) {
		// "Name, [date time]" headers with the text on the lines after them
		nameFirst = true
		heads, rests = heads[:0], rests[:0]
		for i, l := range lines {
			if a, st, ok := chatNameFirst(l, &buf); ok {
				heads = append(heads, waHead{st: st, ok: true, line: int32(i)})
				rests = append(rests, a)
			}
		}
	}
	if delim == "" && !nameFirst {
		rep.Fail(readkit.FileError{Path: path, Err: errors.New("no chat layout inferred (lines starting with a date and time, then an author and a delimiter the file keeps; or \"Name, [date time]\" lines before each text): nothing ingested")})
		return
	}
	lay := waResolve(heads)
	if lay.guessed != "" {
		rep.Warn(path, "", "no date shows whether the day or the month comes first: guessed "+lay.guessed)
	}
	if len(lay.unknownMarks) > 0 {
		rep.Warn(path, "", fmt.Sprintf("word(s) %q next to the times are no known AM/PM words and the file's times do not tell what they mean: times read as a 24-hour clock", lay.unknownMarks))
	}
	shown := "Name" + strings.ReplaceAll(delim, "\t", "<TAB>") + "text"
	switch {
	case nameFirst:
		shown = "Name, [date time]"
	case delim == "<>":
		shown = "<Name> text"
	}
	rep.Warn(path, "", fmt.Sprintf("chat lines in a layout of no known app, inferred from %d of its lines: a date and time, then %q; times read as local time of this machine (%s)", len(heads), shown, tgLocalZone()))
	conv := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var msgs []memtree.MessageInput
	cur := -1
	events, undated, other := 0, 0, 0
	perSecond := map[int64]int{}
	next := 0 // the next head
	for i, l := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		if next < len(heads) && int(heads[next].line) == i {
			h, rest := &heads[next], rests[next]
			next++
			author, text, isMsg := chatLineSplit(rest, delim)
			if nameFirst {
				author, text, isMsg = rest, "", true
			}
			if !isMsg {
				events++
				cur = -1
				continue
			}
			ms, err := waTime(&h.st, &lay)
			if err != nil || !readkit.ChatTimeOK(ms) {
				undated++
				cur = -1
				continue
			}
			k := perSecond[ms/1000]
			perSecond[ms/1000]++
			msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("chatlines:%s:%d:%d", conv, ms, k), Author: author, TimestampMS: ms, Text: text})
			cur = len(msgs) - 1
			continue
		}
		l = strings.TrimRight(l, "\r")
		switch {
		case cur >= 0 && msgs[cur].Text == "" && nameFirst:
			msgs[cur].Text = l
		case cur >= 0:
			msgs[cur].Text += "\n" + l
		case strings.TrimSpace(l) != "":
			other++
		}
	}
	kept := msgs[:0]
	for _, m := range msgs {
		if m.Text = strings.Trim(m.Text, "\n "); m.Text != "" {
			kept = append(kept, m)
		}
	}
	msgs = kept
	rep.WarnCount(path, events, "%d stamped line(s) without an author (events) not stored as messages")
	rep.WarnCount(path, other, "%d line(s) before the first message: not stored")
	if undated > 0 {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("%d message(s) whose date is no date in the file's inferred order, or before 1980: not ingested", undated)})
	}
	if len(msgs) == 0 {
		return
	}
	readkit.WriteChat(out, path, "chat", conv, conv, msgs)
}

// phoneDigitsOf is s's ASCII digits.
func phoneDigitsOf(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
