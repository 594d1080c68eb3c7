package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// whatsappReader reads the .txt file of WhatsApp's "Export chat", Android style
// ("31/12/2019, 23:59 - Name: text") and iOS style ("[31/12/2019, 23:59:59] Name:
// text"). A line that does not start with a timestamp continues the message before
// it. The export carries no zone: times are read as local wall times. System lines
// (encryption notice, "X added Y") are skipped.
type whatsappReader struct{}

func (whatsappReader) kind() string { return "whatsapp" }

// waDateTime matches a date and time as WhatsApp writes them in any locale: day,
// month and year in either order with "/", "." or "-", an optional comma, hours and
// minutes, optional seconds, and an optional AM/PM marker (also "a. m.", also after
// a narrow no-break space).
const waDateTime = `(\d{1,4})[./-](\d{1,2})[./-](\d{2,4}),?[ \x{00A0}\x{202F}]+(\d{1,2})[:.](\d{2})(?:[:.](\d{2}))?(?:[ \x{00A0}\x{202F}]*([AaPp])\.?[ \x{00A0}\x{202F}]?[Mm]\.?)?`

var (
	waAndroidHeader = lazyRE(`^` + waDateTime + `[ \x{00A0}\x{202F}]+[-–][ \x{00A0}\x{202F}]+(.*)$`)
	waIOSHeader     = lazyRE(`^\[` + waDateTime + `\][ \x{00A0}\x{202F}]*(.*)$`)
)

// waHeader is one header line as matched, before the date order is known.
type waHeader struct {
	a, b, y, h, mi, s int
	aLen              int    // digits of the first number (4: year first)
	ampm              byte   // 'a', 'p' or 0 for a 24-hour clock
	rest              string // "Name: text" or a system line
}

// waTrimMarks drops the invisible marks WhatsApp puts before lines and texts
// (U+200E left-to-right mark, U+200F, U+FEFF).
func waTrimMarks(s string) string {
	return strings.TrimLeft(s, "\u200e\u200f\ufeff")
}

// waMatch reads a header line; ok is false for any other line.
func waMatch(line string) (waHeader, bool) {
	line = waTrimMarks(line)
	if len(line) < 10 || line[0] != '[' && (line[0] < '0' || line[0] > '9') {
		return waHeader{}, false
	}
	m := waIOSHeader.FindStringSubmatch(line)
	if m == nil {
		m = waAndroidHeader.FindStringSubmatch(line)
	}
	if m == nil {
		return waHeader{}, false
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	h := waHeader{a: atoi(m[1]), b: atoi(m[2]), y: atoi(m[3]), h: atoi(m[4]), mi: atoi(m[5]), aLen: len(m[1]), rest: m[8]}
	if m[6] != "" {
		h.s = atoi(m[6])
	}
	if m[7] != "" {
		h.ampm = m[7][0] | 0x20
	}
	switch {
	case h.aLen <= 2 && (len(m[3]) == 2 || len(m[3]) == 4):
	case h.aLen == 4 && len(m[3]) <= 2:
		// "2019-12-31": the year first, then month and day
		h.a, h.b, h.y = atoi(m[3]), atoi(m[2]), atoi(m[1])
	default:
		return waHeader{}, false
	}
	return h, true
}

// waTime turns a header into epoch ms; dm says the date is day first.
func waTime(h waHeader, dm bool) (int64, error) {
	day, mon := h.a, h.b
	if !dm {
		day, mon = h.b, h.a
	}
	if h.aLen == 4 {
		day, mon = h.a, h.b // already day and month
	}
	y := h.y
	if y < 100 {
		y += 2000
	}
	hour := h.h
	switch h.ampm {
	case 'a', 'p':
		if hour < 1 || hour > 12 {
			return 0, fmt.Errorf("hour %d is not a 12-hour clock hour", hour)
		}
		if hour == 12 {
			hour = 0
		}
		if h.ampm == 'p' {
			hour += 12
		}
	}
	if hour > 23 || h.mi > 59 || h.s > 59 {
		return 0, fmt.Errorf("time %02d:%02d:%02d is not a time of day", h.h, h.mi, h.s)
	}
	if mon < 1 || mon > 12 || day < 1 || day > 31 {
		return 0, fmt.Errorf("day %d, month %d is not a date", day, mon)
	}
	t := time.Date(y, time.Month(mon), day, hour, h.mi, h.s, 0, time.Local)
	if t.Day() != day || int(t.Month()) != mon {
		return 0, fmt.Errorf("%04d-%02d-%02d is not a date", y, mon, day)
	}
	return t.UnixMilli(), nil
}

func (whatsappReader) detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".txt") {
		return false
	}
	head = trimUTF8BOM(head)
	lines := bytes.SplitN(head, []byte{'\n'}, 6)
	if len(lines) > 5 {
		lines = lines[:5]
	}
	for _, l := range lines {
		if _, ok := waMatch(strings.TrimRight(string(l), "\r")); ok {
			return true
		}
	}
	for _, l := range bytes.Split(head, []byte{'\n'}) {
		s := strings.TrimSpace(waTrimMarks(strings.TrimRight(string(l), "\r")))
		if s == "" {
			continue
		}
		_, ok := waMatch(s)
		return ok
	}
	return false
}

// waTitlePrefixes start the file names WhatsApp gives exports, in several languages.
var waTitlePrefixes = []string{
	"WhatsApp Chat with ", "WhatsApp Chat - ", "WhatsApp Chat mit ", "WhatsApp-Chat mit ",
	"Chat de WhatsApp con ", "Chat WhatsApp con ", "Chat di WhatsApp con ", "Discussion WhatsApp avec ",
	"Conversa do WhatsApp com ", "Conversa com ", "WhatsApp-chat met ", "WhatsApp Chat met ",
	"WhatsApp-chatt med ", "WhatsApp-chat med ", "Czat WhatsApp z ", "Чат WhatsApp с ",
	"Chat WhatsApp dengan ", "WhatsApp Sohbeti - ", "WhatsApp Chat avec ",
}

var waCopySuffix = lazyRE(` \(\d+\)$`)

// waNames derives the conversation id and title from the file name: the base name
// without extension (a download copy's " (1)" removed), or for an iOS "_chat.txt"
// the folder it was unzipped into; the title drops the "WhatsApp Chat with " prefix.
func waNames(p string) (conv, title string) {
	base := filepath.Base(p)
	conv = strings.TrimSuffix(base, filepath.Ext(base))
	if strings.EqualFold(conv, "_chat") {
		if d := filepath.Base(filepath.Dir(p)); d != "." && d != string(filepath.Separator) && d != "" {
			conv = d
		}
	}
	conv = strings.TrimSpace(waCopySuffix.ReplaceAllString(conv, ""))
	conv = tgClean(conv)
	title = conv
	for _, pre := range waTitlePrefixes {
		if len(conv) > len(pre) && strings.EqualFold(conv[:len(pre)], pre) {
			title = strings.TrimSpace(conv[len(pre):])
			break
		}
	}
	return conv, title
}

// waNotices begin WhatsApp's own notices, which some exports attribute to the chat.
var waNotices = []string{
	"Messages and calls are end-to-end encrypted", "Messages to this group are now secured",
	"Messages you send to this group are now secured", "Messages you send to this chat and calls are now secured",
	"Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt", "Los mensajes y las llamadas están cifrados de extremo a extremo",
	"Les messages et les appels sont chiffrés de bout en bout", "As mensagens e as chamadas são protegidas com a criptografia de ponta a ponta",
	"I messaggi e le chiamate sono crittografati end-to-end", "Berichten en oproepen zijn end-to-end versleuteld",
}

var (
	waOmitted = map[string]bool{
		"<media omitted>": true, "<medien ausgeschlossen>": true, "<multimedia omitido>": true, "<archivo omitido>": true,
		"<médias omis>": true, "<média omis>": true, "<media weggelaten>": true, "<mídia oculta>": true,
		"<arquivo de mídia oculto>": true, "<media omessi>": true, "<без медиафайлов>": true, "<medya dahil edilmedi>": true,
		"<media dihilangkan>": true, "<pominięto multimedia>": true,
	}
	waOmittedIOS = lazyRE(`(?i)^(?:image|video|audio|sticker|gif|document|contact card|photo|bild|imagen|vídeo|documento|vidéo|immagine|foto)\s+(?:omitted|weggelassen|omitida|omitido|absente|absent|omessa|omesso|weggelaten)$`)
	waAttached   = lazyRE(`(?i)^<(?:attached|angehängt|adjunto|anexo|allegato|pièce jointe|bijlage|załącznik|вложение)\s*:\s*([^>]+)>\s*(.*)$`)
	waFileAttach = lazyRE(`(?i)^(\S.*?\.[A-Za-z0-9]{1,5}) \((?:file attached|datei angehängt|archivo adjunto|fichier joint|file allegato|arquivo anexado|bestand bijgevoegd)\)\s*(.*)$`)
)

// waBody turns a message's first-line text into what is stored: media placeholders
// become "[media omitted]" or "[attached: name]" (with the file as an attachment).
func waBody(text string) (string, []abi.Attachment) {
	t := strings.TrimSpace(strings.ReplaceAll(text, "\u200e", ""))
	if waOmitted[strings.ToLower(t)] || waOmittedIOS.MatchString(t) {
		return "[media omitted]", nil
	}
	lower := strings.ToLower(t)
	if strings.HasSuffix(lower, "document omitted") {
		name := strings.TrimSpace(t[:len(t)-len("document omitted")])
		name = strings.TrimSpace(strings.TrimRight(name, "•· "))
		return strings.TrimSpace("[media omitted] " + name), nil
	}
	for _, re := range []*lazyRegexp{waAttached, waFileAttach} {
		if m := re.FindStringSubmatch(t); m != nil {
			name := strings.TrimSpace(m[1])
			s := "[attached: " + name + "]"
			if rest := strings.TrimSpace(m[2]); rest != "" {
				s += " " + rest
			}
			return s, []abi.Attachment{attachmentOf(name, tgMime(name, ""), 0)}
		}
	}
	return t, nil
}

// waSplit splits "Name: text" into author and text; ok is false for a system line.
func waSplit(rest string) (author, text string, ok bool) {
	i := strings.Index(rest, ": ")
	if i < 0 {
		if strings.HasSuffix(rest, ":") && len([]rune(rest)) <= 80 {
			return strings.TrimSpace(strings.TrimSuffix(rest, ":")), "", true
		}
		return "", "", false
	}
	author = strings.TrimSpace(waTrimMarks(rest[:i]))
	if author == "" || len([]rune(author)) > 80 || strings.ContainsAny(author, "“”") {
		return "", "", false
	}
	return author, rest[i+2:], true
}

type waMsg struct {
	line   int // 1-based line of the header
	ms     int64
	author string
	lines  []string
}

func (whatsappReader) read(ctx context.Context, in input, out output, rep *report) {
	path := in.path
	b, err := readFileLimited(path)
	if err != nil {
		rep.fail(FileError{Path: path, Err: err})
		return
	}
	tf, err := decodeTextFile(b)
	if errors.Is(err, errEmpty) {
		rep.warn(path, "", "empty file: nothing to ingest")
		return
	}
	if err != nil {
		rep.fail(FileError{Path: path, Err: err})
		return
	}
	for _, n := range tf.notes {
		rep.warn(path, "", n)
	}
	lines := strings.Split(tf.text, "\n")
	heads := make([]*waHeader, len(lines))
	dmSeen, mdSeen, twelve := false, false, false
	nHeads := 0
	for i, l := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		h, ok := waMatch(l)
		if !ok {
			continue
		}
		heads[i] = &h
		nHeads++
		if h.aLen != 4 {
			if h.a > 12 {
				dmSeen = true
			}
			if h.b > 12 {
				mdSeen = true
			}
		}
		if h.ampm != 0 {
			twelve = true
		}
	}
	if nHeads == 0 {
		rep.fail(FileError{Path: path, Err: errors.New("no line starts with a WhatsApp timestamp (\"31/12/2019, 23:59 - Name: text\" or \"[31/12/2019, 23:59:59] Name: text\"): not a WhatsApp chat export, nothing ingested")})
		return
	}
	dm := true
	switch {
	case dmSeen && mdSeen:
		rep.warn(path, "", "dates have both a first and a second number over 12: read as day/month; headers that are not valid so are kept as text of the message before them")
	case dmSeen:
	case mdSeen:
		dm = false
	default:
		dm = !twelve
		order := "day/month"
		if !dm {
			order = "month/day (12-hour clock)"
		}
		rep.warn(path, "", "no date shows whether the day or the month comes first: guessed "+order)
	}
	rep.warn(path, "", "times read as local time of this machine ("+tgLocalZone()+"): WhatsApp exports carry no zone")

	conv, title := waNames(path)
	var msgs []*waMsg
	var pre *waMsg // lines before the first header
	var cur *waMsg
	var firstMS int64
	haveFirst := false
	for i, l := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		if h := heads[i]; h != nil {
			ms, err := waTime(*h, dm)
			if err == nil {
				if !haveFirst {
					firstMS, haveFirst = ms, true
				}
				author, text, ok := waSplit(h.rest)
				if !ok {
					// a system line: "X added Y", the encryption notice
					cur = nil
					continue
				}
				lrm := strings.HasPrefix(text, "\u200e")
				text = waTrimMarks(text)
				if waIsNotice(text) || lrm && author == title && !waIsMedia(text) {
					cur = nil
					continue
				}
				cur = &waMsg{line: i + 1, ms: ms, author: author, lines: []string{text}}
				msgs = append(msgs, cur)
				continue
			}
			rep.warn(path, fmt.Sprintf("line %d", i+1), "timestamp not valid ("+err.Error()+"): line kept as text of the message before it")
		}
		if cur != nil {
			cur.lines = append(cur.lines, strings.ReplaceAll(l, "\u200e", ""))
			continue
		}
		if !haveFirst {
			if strings.TrimSpace(waTrimMarks(l)) == "" {
				continue
			}
			if pre == nil {
				pre = &waMsg{line: i + 1}
				rep.warn(path, fmt.Sprintf("line %d", i+1), "text before the first timestamped message: kept as a message without author at the first message's time")
			}
			pre.lines = append(pre.lines, strings.ReplaceAll(l, "\u200e", ""))
		}
		// a continuation of a skipped system line belongs to nobody
	}
	if pre != nil && haveFirst {
		pre.ms = firstMS
		msgs = append([]*waMsg{pre}, msgs...)
	}
	perMinute := map[int64]int{}
	res := make([]memtree.MessageInput, 0, len(msgs))
	for _, m := range msgs {
		var atts []abi.Attachment
		first, rest := "", []string(nil)
		if len(m.lines) > 0 {
			first, rest = m.lines[0], m.lines[1:]
		}
		if m != pre {
			first, atts = waBody(first)
		}
		text := tgClean(strings.Join(append([]string{first}, rest...), "\n"))
		minute := m.ms / 60000
		if m.ms < 0 && m.ms%60000 != 0 {
			minute--
		}
		n := perMinute[minute]
		perMinute[minute]++
		res = append(res, memtree.MessageInput{
			Ref:         fmt.Sprintf("whatsapp:%s:%d:%d", conv, m.ms, n),
			Author:      tgClean(m.author),
			TimestampMS: m.ms,
			Text:        text,
			Attachments: atts,
		})
	}
	if len(res) == 0 {
		return
	}
	for _, src := range chatSources("whatsapp", conv, title, res) {
		src.Origin = path
		out.source(src)
	}
}

// waIsNotice reports whether text is one of WhatsApp's own notices.
func waIsNotice(text string) bool {
	t := strings.TrimSpace(text)
	for _, n := range waNotices {
		if strings.HasPrefix(t, n) {
			return true
		}
	}
	return false
}

// waIsMedia reports whether text is a media placeholder (which iOS also marks
// with U+200E).
func waIsMedia(text string) bool {
	s, atts := waBody(text)
	return len(atts) > 0 || strings.HasPrefix(s, "[media omitted]")
}
