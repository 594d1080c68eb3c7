package chat

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindLINE forces the LINE chat history reader.
const KindLINE = "line"

// LineReader reads LINE's "Save chat history" text: a "[LINE] Chat history
// with Micah" (or "[LINE] Micahとのトーク履歴", "[LINE] 與Micah的聊天記錄",
// "[LINE] Micah님과의 대화", …) header and its "Saved on:" line, then day lines
// ("2026/01/05(Mon)", "2026/01/05（一）", "2026.01.05 Monday", "2026年1月5日
// 星期一", "2026년 1월 5일 월요일", "Mon, 01/05/2026" or, in languages that put
// the day first, "Sen, 13/01/2026": the order told by the file's days)
// and message lines "10:00<TAB>Name<TAB>text" (the time maybe "10:00 AM",
// "午後2:56"); a message of several lines is quoted ("…"), and a line that is
// neither continues the message before it. Lines without a name (calls,
// unsent messages, joins) are counted. Times are local wall times.
type LineReader struct{}

func (LineReader) Kind() string { return KindLINE }

func (LineReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".txt") {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(readkit.TrimUTF8BOM(head), " \r\n"), []byte("[LINE]"))
}

var (
	reLINEDayYMD = lazyre.New(`^(\d{4})[/.\-] ?(\d{1,2})[/.\-] ?(\d{1,2})\.?(?:\s*\(?[^\t\d]*\)?)?$`)
	reLINEDayMDY = lazyre.New(`^\p{L}+\.?,? (\d{1,2})/(\d{1,2})/(\d{4})$`)
	reLINEMsg    = lazyre.New(`^(\p{L}*) ?(\d{1,2}):(\d{2}) ?(\p{L}*)\t([^\t]*)(?:\t(.*))?$`)
	// Chinese, Japanese and Korean day lines: "2026年1月5日 星期一", "2026년 1월 5일 월요일"
	reLINEDayCJK = lazyre.New(`^(\d{4})\s*[年년]\s*(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日일]`)
	// the conversation in the header's other languages: "與Micah的聊天記錄",
	// "与Micah的聊天记录", "Micah님과의 대화", "「Team」のトーク履歴",
	// "Riwayat obrolan dengan Micah", "ประวัติการแชทกับ Micah"
	reLINETitle = lazyre.New(`^(?:(?:與|与|和)(.+?)的聊天(?:記錄|记录)|(.+?)\s*님과의 대화|「(.+)」の?トーク履歴|(?:Riwayat obrolan dengan|Riwayat chat dengan|ประวัติการแชทกับ|Historial de chat con|Histórico de conversa com|Chatverlauf mit)\s*(.+))$`)
)

func (LineReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	content, ok := readkit.ReadText(path, rep)
	if !ok {
		return
	}
	lines := strings.Split(content, "\n")
	title := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[0]), "[LINE]"))
	for _, pre := range []string{"Chat history with ", "Chat history in "} {
		title = strings.TrimPrefix(title, pre)
	}
	if m := reLINETitle.FindStringSubmatch(title); m != nil {
		title = strings.TrimSpace(readkit.FirstNonEmpty(m[1:]...))
	}
	title = strings.TrimSuffix(title, "とのトーク履歴")
	title = strings.TrimSuffix(title, "のトーク履歴")
	conv := readkit.FirstNonEmpty(title, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	var day time.Time
	var msgs []memtree.MessageInput
	cur := -1
	quoted := false
	events, undated := 0, 0
	perMinute := map[int64]int{}
	// "Mon, 01/05/2026" in English, "Sen, 13/01/2026" in other languages: the
	// order of day and month from the file's day lines (a number over 12)
	dayFirst := false
	for _, l := range lines {
		if m := reLINEDayMDY.FindStringSubmatch(strings.TrimSpace(l)); m != nil && atoi(m[1]) > 12 {
			dayFirst = true
			break
		}
	}
	for i := 1; i < len(lines); i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		l := strings.TrimRight(lines[i], "\r")
		if quoted && cur >= 0 {
			// inside a quoted message: up to the line that ends the quote
			t := l
			if strings.HasSuffix(t, "\"") {
				t, quoted = strings.TrimSuffix(t, "\""), false
			}
			msgs[cur].Text += "\n" + strings.ReplaceAll(t, "\"\"", "\"")
			continue
		}
		s := strings.TrimSpace(l)
		if s == "" || i == 1 && strings.Contains(s, ":") && !strings.Contains(l, "\t") {
			continue // blank, or the "Saved on:" line
		}
		if m := reLINEDayYMD.FindStringSubmatch(s); m != nil {
			day = time.Date(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]), 0, 0, 0, 0, time.Local)
			cur = -1
			continue
		}
		if m := reLINEDayMDY.FindStringSubmatch(s); m != nil {
			mo, d := atoi(m[1]), atoi(m[2])
			if dayFirst {
				mo, d = d, mo
			}
			day = time.Date(atoi(m[3]), time.Month(mo), d, 0, 0, 0, 0, time.Local)
			cur = -1
			continue
		}
		if m := reLINEDayCJK.FindStringSubmatch(s); m != nil {
			day = time.Date(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]), 0, 0, 0, 0, time.Local)
			cur = -1
			continue
		}
		if m := reLINEMsg.FindStringSubmatch(l); m != nil {
			if strings.Count(l, "\t") < 2 || strings.TrimSpace(m[5]) == "" {
				// "10:00<TAB>Micah left the group": no name column
				events++
				cur = -1
				continue
			}
			if day.IsZero() {
				undated++
				cur = -1
				continue
			}
			h, mi := atoi(m[2]), atoi(m[3])
			h = waHour24(h, linePeriod(m[1]+m[4]))
			ms := time.Date(day.Year(), day.Month(), day.Day(), h, mi, 0, 0, time.Local).UnixMilli()
			if !readkit.ChatTimeOK(ms) {
				undated++
				cur = -1
				continue
			}
			text := m[6]
			if strings.HasPrefix(text, "\"") && !(len(text) > 1 && strings.HasSuffix(text, "\"")) {
				text, quoted = text[1:], true
			} else if len(text) > 1 && strings.HasPrefix(text, "\"") && strings.HasSuffix(text, "\"") && strings.Count(text, "\"")%2 == 0 {
				text = text[1 : len(text)-1]
			}
			k := perMinute[ms/60000]
			perMinute[ms/60000]++
			msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("line:%s:%d:%d", conv, ms, k), Author: strings.TrimSpace(m[5]), TimestampMS: ms, Text: text})
			cur = len(msgs) - 1
			continue
		}
		if cur >= 0 {
			msgs[cur].Text += "\n" + l
		}
	}
	rep.WarnCount(path, events, "%d line(s) without a sender (calls, joins, unsent messages) not stored as messages")
	if undated > 0 {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("%d message(s) before any day line, or before 1980: not ingested", undated)})
	}
	rep.Warn(path, "", "times read as local time of this machine ("+tgLocalZone()+"): LINE writes no zone")
	if len(msgs) == 0 {
		return
	}
	readkit.WriteChat(out, path, "line", conv, conv, msgs)
}

// linePeriod reads the AM/PM word next to a LINE time ("AM", "午後", "오후").
func linePeriod(w string) byte {
	w = strings.ToLower(strings.ReplaceAll(w, ".", ""))
	switch {
	case w == "":
		return 0
	case waAMWords[w]:
		return 'a'
	case waPMWords[w]:
		return 'p'
	}
	return waPeriodWords[w]
}
