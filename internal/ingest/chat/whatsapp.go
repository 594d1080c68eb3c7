package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// KindWhatsApp forces the WhatsApp "Export chat" reader.
const KindWhatsApp = "whatsapp"

// WhatsAppReader reads the .txt file of WhatsApp's "Export chat" in any locale and
// app version — Android ("31/12/2019, 23:59 - Name: text"), iOS ("[31/12/2019,
// 23:59:59] Name: text"), iOS of 2016 ("7/1/16, 5:13:36 PM: Name: text") and
// the others waParse reads — and the text exports of apps that copy it
// (KakaoTalk). Each file's layout (date order, AM/PM words, eras) is inferred
// from all its headers (waResolve). A line that does not start with a timestamp
// continues the message before it; a line that does is never glued to it. The
// export carries no zone: times are read as local wall times. Lines without an
// author (group events, WhatsApp's notices) are counted and named in a warning.
type WhatsAppReader struct{}

func (WhatsAppReader) Kind() string { return "whatsapp" }

func (WhatsAppReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".txt") {
		return false
	}
	head = readkit.TrimUTF8BOM(head)
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		// saved as UTF-16 (read decodes it)
		if tf, err := readkit.DecodeTextFile(head[:len(head)&^1]); err == nil {
			head = []byte(tf.Text)
		}
	}
	lines := bytes.SplitN(head, []byte{'\n'}, 6)
	if len(lines) > 5 {
		lines = lines[:5]
	}
	var buf waBuf
	for _, l := range lines {
		if waDetectLine(waTrimMarks(strings.TrimRight(string(l), "\r")), &buf) {
			return true
		}
	}
	for _, l := range bytes.Split(head, []byte{'\n'}) {
		s := strings.TrimSpace(waTrimMarks(strings.TrimRight(string(l), "\r")))
		if s == "" {
			continue
		}
		return waDetectLine(s, &buf)
	}
	return false
}

// waDetectLine reports whether a line is a header: one waParse reads, or a date
// and time followed by a space and "Name: " (the layout without a separator).
func waDetectLine(l string, buf *waBuf) bool {
	st, ok, stamped := waParse(l, buf)
	return ok || stamped && st.hasSpace && strings.Contains(l[st.spaceAt:], ": ")
}

// waTitlePrefixes start the file names WhatsApp gives exports, in several languages.
var waTitlePrefixes = []string{
	"WhatsApp Chat with ", "WhatsApp Chat - ", "WhatsApp Chat mit ", "WhatsApp-Chat mit ",
	"Chat de WhatsApp con ", "Chat WhatsApp con ", "Chat di WhatsApp con ", "Discussion WhatsApp avec ",
	"Conversa do WhatsApp com ", "Conversa com ", "WhatsApp-chat met ", "WhatsApp Chat met ",
	"WhatsApp-chatt med ", "WhatsApp-chat med ", "Czat WhatsApp z ", "Чат WhatsApp с ",
	"Chat WhatsApp dengan ", "WhatsApp Sohbeti - ", "WhatsApp Chat avec ",
}

var waCopySuffix = lazyre.New(` \(\d+\)$`)

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
	conv = readkit.CleanText(conv)
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
	waOmittedIOS = lazyre.New(`(?i)^(?:image|video|audio|sticker|gif|document|contact card|photo|bild|imagen|vídeo|documento|vidéo|immagine|foto)\s+(?:omitted|weggelassen|omitida|omitido|absente|absent|omessa|omesso|weggelaten)$`)
	waAttached   = lazyre.New(`(?i)^<\s*(?:attached|angehängt|adjunto|anexo|allegato|pièce jointe|bijlage|załącznik|вложение)\s*:\s*([^>]+)>\s*(.*)$`)
	waFileAttach = lazyre.New(`(?i)^(\S.*?\.[A-Za-z0-9]{1,5}) \((?:file attached|datei angehängt|archivo adjunto|fichier joint|file allegato|arquivo anexado|bestand bijgevoegd)\)\s*(.*)$`)
)

// waBody returns a message's first-line text as stored — as the export writes it,
// without its invisible marks — and, for a media placeholder, whether it is one
// ("<Media omitted>", "image omitted", "<attached: name>", "name (file
// attached)") and the named file as an attachment. Placeholders stay in the
// export's own words: they are what a person sees in the file.
func waBody(text string) (body string, media bool, atts []abi.Attachment) {
	t := strings.TrimSpace(strings.ReplaceAll(text, "\u200e", ""))
	if t == "" {
		return t, false, nil
	}
	// placeholders are short or start with '<' or hold " (": most texts are none,
	// and skip the patterns
	short := len(t) <= 64
	if short && (waOmitted[strings.ToLower(t)] || waOmittedIOS.MatchString(t)) {
		return t, true, nil
	}
	if !short && t[0] != '<' && !strings.Contains(t, " (") && !strings.HasSuffix(t, "omitted") {
		return t, false, nil
	}
	if strings.HasSuffix(strings.ToLower(t), "document omitted") {
		return t, true, nil
	}
	for _, re := range []*lazyre.Regexp{waAttached, waFileAttach} {
		if re == waAttached && !strings.HasPrefix(t, "<") || re == waFileAttach && !strings.Contains(t, " (") {
			continue
		}
		if m := re.FindStringSubmatch(t); m != nil {
			name := strings.TrimSpace(m[1])
			return t, true, []abi.Attachment{readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0)}
		}
	}
	return t, false, nil
}

// waSplit splits "Name: text" into author and text; ok is false for a system line.
func waSplit(rest string) (author, text string, ok bool) {
	i := strings.Index(rest, ": ")
	if i < 0 {
		if strings.HasSuffix(rest, ":") && len([]rune(rest)) <= 80 {
			return waAuthor(strings.TrimSuffix(rest, ":")), "", true
		}
		return "", "", false
	}
	author = waAuthor(rest[:i])
	if author == "" || len([]rune(author)) > 80 || strings.ContainsAny(author, "“”\"«»„") {
		return "", "", false
	}
	return author, rest[i+2:], true
}

// waAuthor cleans a header's name: no invisible marks or spaces around it, and no
// "~ " that newer exports put before a name not in the address book.
func waAuthor(s string) string {
	trim := func(r rune) bool { return waInvisible(r) || unicode.IsSpace(r) || r == 0x202F || r == 0xA0 }
	s = strings.TrimFunc(s, trim)
	if strings.HasPrefix(s, "~") {
		s = strings.TrimFunc(s[1:], trim)
	}
	return s
}

type waMsg struct {
	line   int // 1-based line of the header
	ms     int64
	timed  bool // ms was read from the message's own header
	author string
	lines  []string
}

// waHead is a line that starts with a timestamp: a header (ok) or a line with a
// date and time the reader could not read as one.
type waHead struct {
	st   waStamp
	ok   bool
	line int32 // index into the file's lines
}

func (WhatsAppReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	text, ok := readkit.ReadText(path, rep)
	if !ok {
		return
	}
	lines := strings.Split(text, "\n")
	headOf := make([]int32, len(lines)) // 1 + index into heads; 0 for other lines
	var heads []waHead
	var buf waBuf
	for i, l := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		st, ok, stamped := waParse(waTrimMarks(l), &buf)
		if !stamped {
			continue
		}
		heads = append(heads, waHead{st: st, ok: ok, line: int32(i)})
		headOf[i] = int32(len(heads))
	}
	if waSpaceLayout(heads) {
		for k := range heads {
			if h := &heads[k]; h.st.hasSpace {
				h.st.rest, h.ok = waTrimMarks(lines[h.line])[h.st.spaceAt:], true
				if h.st.post {
					h.st.mark, h.st.post = "", false
				}
			}
		}
	}
	var first *waStamp
	for k := range heads {
		if heads[k].ok {
			first = &heads[k].st
			break
		}
	}
	if first == nil {
		rep.Fail(readkit.FileError{Path: path, Err: errors.New("no line starts with a WhatsApp timestamp (\"31/12/2019, 23:59 - Name: text\", \"[31/12/2019, 23:59:59] Name: text\" or another locale's layout): not a WhatsApp chat export, nothing ingested")})
		return
	}
	lay := waResolve(heads)
	if lay.guessed != "" {
		rep.Warn(path, "", "no date shows whether the day or the month comes first: guessed "+lay.guessed)
	}
	if lay.conflict {
		rep.Warn(path, "", fmt.Sprintf("some dates are impossible in every day/month order: read as %s; those headers are kept as messages at the time of the message before them", waOrders[waOrderIndex(lay)].name))
	}
	rep.Warn(path, "", "times read as local time of this machine ("+tgLocalZone()+"): WhatsApp exports carry no zone")
	if len(lay.unknownMarks) > 0 {
		rep.Warn(path, "", fmt.Sprintf("word(s) %q next to the times are no known AM/PM words and the file's times do not tell what they mean: times read as a 24-hour clock", lay.unknownMarks))
	}
	if _, cal := waYear(first, lay.year); cal == "hijri" {
		rep.Warn(path, "", "dates in the Islamic calendar converted with its arithmetic (tabular) form: the phone's calendar may differ by a day")
	}

	conv, title := waNames(path)
	// iOS writes a group's events under the group's name, their text after U+200E
	// ("[…] Trip: ‎Alice added Bob"): a name that signs WhatsApp's notices, or only
	// such lines, is the group's, whatever the file is called
	groupish := map[string]bool{title: true}
	{
		all, marked := map[string]int{}, map[string]int{}
		for k := range heads {
			h := &heads[k]
			if !h.ok {
				continue
			}
			author, text, isMsg := waSplit(h.st.rest)
			if !isMsg {
				continue
			}
			all[author]++
			if strings.HasPrefix(text, "\u200e") {
				t := waTrimMarks(text)
				if waIsNotice(t) {
					groupish[author] = true
				}
				if !waIsMedia(t) {
					marked[author]++
				}
			}
		}
		for a, n := range all {
			if marked[a] == n && n > 1 {
				groupish[a] = true
			}
		}
	}
	var msgs []*waMsg
	var pre *waMsg // lines before the first header
	var cur *waMsg
	var events []int
	for i, l := range lines {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		if k := headOf[i]; k > 0 {
			h := &heads[k-1]
			if !h.ok {
				rep.Warn(path, fmt.Sprintf("line %d", i+1), "starts with a date and time but not in this file's header layout: kept as its own message without author at the time of the message before it")
				cur = &waMsg{line: i + 1, lines: []string{strings.ReplaceAll(waTrimMarks(l), "\u200e", "")}}
				msgs = append(msgs, cur)
				continue
			}
			ms, terr := waTime(&h.st, &lay)
			author, text, isMsg := waSplit(h.st.rest)
			if !isMsg {
				events = append(events, i+1) // "X added Y", "X left", a subject change
				cur = nil
				continue
			}
			lrm := strings.HasPrefix(text, "\u200e")
			text = waTrimMarks(text)
			if waIsNotice(text) || lrm && groupish[author] && !waIsMedia(text) {
				events = append(events, i+1)
				cur = nil
				continue
			}
			if terr != nil {
				rep.Warn(path, fmt.Sprintf("line %d", i+1), "timestamp not valid ("+terr.Error()+"): kept as its own message at the time of the message before it")
			}
			cur = &waMsg{line: i + 1, ms: ms, timed: terr == nil, author: author, lines: []string{text}}
			msgs = append(msgs, cur)
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, strings.ReplaceAll(l, "\u200e", ""))
			continue
		}
		if len(msgs) == 0 && len(events) == 0 {
			if strings.TrimSpace(waTrimMarks(l)) == "" {
				continue
			}
			if pre == nil {
				pre = &waMsg{line: i + 1}
				rep.Warn(path, fmt.Sprintf("line %d", i+1), "text before the first timestamped message: kept as a message without author at the first message's time")
			}
			pre.lines = append(pre.lines, strings.ReplaceAll(l, "\u200e", ""))
		}
		// a continuation of a skipped event line belongs to nobody
	}
	if len(events) > 0 {
		rep.Warn(path, "", fmt.Sprintf("%d line(s) without an author (group events: joined, left, added, subject or security code changed, encryption notices) not stored as messages: %s", len(events), waLineList(events)))
	}
	if pre != nil {
		msgs = append([]*waMsg{pre}, msgs...)
	}
	// a message whose own time could not be read takes the time of the one before it
	// (or, at the start, of the first that has one)
	var last int64
	have := false
	for _, m := range msgs {
		if m.timed {
			last, have = m.ms, true
			break
		}
	}
	if !have {
		if len(msgs) > 0 {
			rep.Fail(readkit.FileError{Path: path, Err: errors.New("no header holds a valid date and time: nothing ingested")})
		}
		return
	}
	for _, m := range msgs {
		if m.timed {
			last = m.ms
		} else {
			m.ms = last
		}
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
			first, _, atts = waBody(first)
		}
		text := readkit.CleanText(strings.Join(append([]string{first}, rest...), "\n"))
		minute := m.ms / 60000
		if m.ms < 0 && m.ms%60000 != 0 {
			minute--
		}
		n := perMinute[minute]
		perMinute[minute]++
		res = append(res, memtree.MessageInput{
			Ref:         fmt.Sprintf("whatsapp:%s:%d:%d", conv, m.ms, n),
			Author:      readkit.CleanText(m.author),
			TimestampMS: m.ms,
			Text:        text,
			Attachments: atts,
		})
	}
	if len(res) == 0 {
		return
	}
	readkit.WriteChat(out, path, "whatsapp", conv, title, res)
}

// waLineList names up to ten line numbers ("3, 7, 12 and 40 more").
func waLineList(ls []int) string {
	var b strings.Builder
	for i, l := range ls {
		if i == 10 {
			fmt.Fprintf(&b, " and %d more (lines %d to %d)", len(ls)-10, ls[10], ls[len(ls)-1])
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "line %d", l)
	}
	return b.String()
}

// waOrderIndex finds the waOrders entry of a layout.
func waOrderIndex(lay waLayout) int {
	for i, o := range waOrders {
		if o.day == lay.day && o.mon == lay.mon && o.year == lay.year {
			return i
		}
	}
	return 0
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
	_, media, _ := waBody(text)
	return media
}
