package ingest_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// Chat judging. A chat message is stored only when the store holds a message with
// its author and its time (to the millisecond), and its own text is intact when
// that message's text holds the longest line the export shows for it. Messages
// are read back from source_messages.msg_json (memtree's storedMessage: "a"
// author, "t" epoch ms, "x" text), where each chat message is kept whole.

// judgedChat reports whether the expectation judges authors and times.
func judgedChat(e *expectation) bool {
	for _, m := range e.msgs {
		if !m.at {
			return false
		}
	}
	return len(e.msgs) > 0
}

// judgeChat matches the expected chat messages with the stored ones by author and
// time, each stored message used once, and checks their own text.
func judgeChat(t *testing.T, name string, exp *expectation, dbPath string) (stored, judged, intact int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT msg_json FROM source_messages`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	byKey := map[string][]string{} // author \x00 ms -> texts, whitespace removed
	n := 0
	for rows.Next() {
		var js string
		if err := rows.Scan(&js); err != nil {
			t.Fatal(err)
		}
		var m struct {
			A string `json:"a"`
			T int64  `json:"t"`
			X string `json:"x"`
		}
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatalf("%s: stored message %q: %v", name, js, err)
		}
		k := m.A + "\x00" + fmt.Sprint(m.T)
		byKey[k] = append(byKey[k], noSpace(m.X))
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var lost, broken []string
	// messages with text first, so that a media-only message does not take the
	// stored twin (same author and time) of one with text
	order := make([]expMsg, len(exp.msgs))
	copy(order, exp.msgs)
	sort.SliceStable(order, func(i, j int) bool { return order[i].own != "" && order[j].own == "" })
	for _, m := range order {
		k := m.author + "\x00" + fmt.Sprint(m.ms)
		texts := byKey[k]
		if len(texts) == 0 {
			lost = append(lost, fmt.Sprintf("%s: %q at %s", filepath.Base(m.file), m.author, time.UnixMilli(m.ms).Format(time.RFC3339)))
			continue
		}
		stored++
		pick := 0
		if m.own != "" {
			for i, x := range texts {
				if strings.Contains(x, m.own) {
					pick = i
					break
				}
			}
			judged++
			if strings.Contains(texts[pick], m.own) {
				intact++
			} else {
				broken = append(broken, fmt.Sprintf("%s: %q at %s: %.80q", filepath.Base(m.file), m.author, time.UnixMilli(m.ms).Format(time.RFC3339), m.own))
			}
		}
		byKey[k] = append(texts[:pick:pick], texts[pick+1:]...)
	}
	if n > len(exp.msgs) {
		t.Logf("%s: the store holds %d messages, %d more than expected", name, n, n-len(exp.msgs))
	}
	logSome(t, name+": not stored with its author and time", lost)
	logSome(t, name+": own text not found", broken)
	return stored, judged, intact
}

// fixtureTruth holds, per fixture folder written by fixtureFolders, the messages
// its writer put in it.
var fixtureTruth = map[string]*expectation{}

// fixtureFolders writes exports of the chat formats ../shared/realdata holds no
// real files of (Messenger, Google Chat) and of WhatsApp layouts it lacks, into a
// temporary folder, and records what each holds: the writer knows every message's
// author, time and text, so the truth is not read back from the files.
func fixtureFolders(t *testing.T) []evalFolderSpec {
	t.Helper()
	base := t.TempDir()
	var out []evalFolderSpec
	for _, f := range []struct {
		name, kind string
		write      func(t *testing.T, dir string) *expectation
	}{
		{"fixtures/whatsapp-layouts", "fixture-whatsapp", writeWhatsAppFixtures},
		{"fixtures/messenger", "messenger", writeMessengerFixtures},
		{"fixtures/googlechat", "googlechat", writeGoogleChatFixtures},
	} {
		dir := filepath.Join(base, filepath.FromSlash(f.name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fixtureTruth[dir] = f.write(t, dir)
		out = append(out, evalFolderSpec{dir: dir, kind: f.kind, name: f.name})
	}
	return out
}

// fxMsg is one message a fixture writer puts in a file.
type fxMsg struct {
	author string
	at     time.Time
	text   string
}

// fxMessages makes n messages between start and about n hours later: authors of
// several scripts and shapes, texts with punctuation, colons and several lines.
func fxMessages(start time.Time, n int, step time.Duration) []fxMsg {
	authors := []string{"Ana María", "+1 555 0100", "Ivan Petrov", "أحمد", "김민수", "Zoë", "Dr. Who"}
	texts := []string{
		"See you at 5: bring the tickets",
		"ok",
		"First line of a longer note\nsecond line, longer than the first one by far\nthird",
		"Café? 😀 — yes",
		"2/3 of the budget is spent: we need 1,200 more",
		"Привет, как дела?",
		"- a list\n- of things",
		"<Media omitted>",
		"\u200e<attached: 00000031-PHOTO-2022-01-02-10-11-12.jpg>",
	}
	var out []fxMsg
	for i := 0; i < n; i++ {
		out = append(out, fxMsg{author: authors[(i*3)%len(authors)], at: start.Add(time.Duration(i) * step), text: fmt.Sprintf("%s (%d)", texts[i%len(texts)], i)})
	}
	return out
}

func fxTruth(e *expectation, file string, msgs []fxMsg) {
	for _, m := range msgs {
		e.add(expMsg{file: file, author: m.author, ms: m.at.UnixMilli(), at: true, own: longestLine(m.text)})
	}
}

func fxWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fxDigits(s string, zero rune) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return zero + (r - '0')
		}
		return r
	}, s)
}

// writeWhatsAppFixtures writes one export per layout that WhatsApp writes in some
// locale or app version; each header is built from the message's time here.
func writeWhatsAppFixtures(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	h12 := func(tm time.Time, zero bool) (int, bool) {
		h := tm.Hour() % 12
		if h == 0 && !zero {
			h = 12
		}
		return h, tm.Hour() >= 12
	}
	ampm := func(pm bool, am, pmw string) string {
		if pm {
			return pmw
		}
		return am
	}
	layouts := []struct {
		name    string
		seconds bool
		head    func(tm time.Time, author string) string
	}{
		{"android-de", false, func(tm time.Time, a string) string { return tm.Format("02.01.06, 15:04") + " - " + a + ": " }},
		{"ios-us", true, func(tm time.Time, a string) string {
			h, pm := h12(tm, false)
			return fmt.Sprintf("[%d/%d/%02d, %d:%02d:%02d\u202f%s] %s: ", tm.Month(), tm.Day(), tm.Year()%100, h, tm.Minute(), tm.Second(), ampm(pm, "AM", "PM"), a)
		}},
		{"ios-2016", true, func(tm time.Time, a string) string {
			h, pm := h12(tm, false)
			return fmt.Sprintf("%d/%d/%02d, %d:%02d:%02d %s: %s: ", tm.Month(), tm.Day(), tm.Year()%100, h, tm.Minute(), tm.Second(), ampm(pm, "AM", "PM"), a)
		}},
		{"ios-zero-hour", true, func(tm time.Time, a string) string {
			h, pm := h12(tm, true)
			return fmt.Sprintf("[%d/%d/%02d, %02d:%02d:%02d %s] %s: ", tm.Month(), tm.Day(), tm.Year()%100, h, tm.Minute(), tm.Second(), ampm(pm, "AM", "PM"), a)
		}},
		{"android-es", false, func(tm time.Time, a string) string {
			h, pm := h12(tm, true)
			return fmt.Sprintf("%d/%d/%d, %d:%02d\u00a0%s - %s: ", tm.Day(), tm.Month(), tm.Year(), h, tm.Minute(), ampm(pm, "a.\u00a0m.", "p.\u00a0m."), a)
		}},
		{"ios-ar", true, func(tm time.Time, a string) string {
			h, pm := h12(tm, false)
			d := fxDigits(fmt.Sprintf("%d\u200f/%d\u200f/%d", tm.Day(), tm.Month(), tm.Year()), '٠')
			c := fxDigits(fmt.Sprintf("%d:%02d:%02d", h, tm.Minute(), tm.Second()), '٠')
			return "\u200f[" + d + "، " + c + " " + ampm(pm, "ص", "م") + "] " + a + ": "
		}},
		{"android-fa", false, func(tm time.Time, a string) string {
			return fxDigits(tm.Format("2006/1/2، 15:04"), '۰') + " - " + a + ": "
		}},
		{"android-hi", false, func(tm time.Time, a string) string {
			h, pm := h12(tm, false)
			return fxDigits(fmt.Sprintf("%d/%d/%02d, %d:%02d", tm.Day(), tm.Month(), tm.Year()%100, h, tm.Minute()), '०') + " " + ampm(pm, "am", "pm") + " - " + a + ": "
		}},
		{"ios-vi", true, func(tm time.Time, a string) string {
			return fmt.Sprintf("[%s, %d/%d/%02d] %s: ", tm.Format("15:04:05"), tm.Month(), tm.Day(), tm.Year()%100, a)
		}},
		{"ios-th", true, func(tm time.Time, a string) string {
			h, pm := h12(tm, false)
			return fmt.Sprintf("[%d/%d/%d BE, %d:%02d:%02d %s] %s: ", tm.Month(), tm.Day(), tm.Year()+543, h, tm.Minute(), tm.Second(), ampm(pm, "AM", "PM"), a)
		}},
		{"ios-ja-era", true, func(tm time.Time, a string) string {
			return fmt.Sprintf("[%d/%d/R%d, %s] %s: ", tm.Month(), tm.Day(), tm.Year()-2018, tm.Format("15:04:05"), a)
		}},
		{"android-ja", false, func(tm time.Time, a string) string {
			h, pm := h12(tm, true)
			return fmt.Sprintf("%s %s%d:%02d - %s: ", tm.Format("2006/01/02"), ampm(pm, "午前", "午後"), h, tm.Minute(), a)
		}},
		{"android-za", false, func(tm time.Time, a string) string { return tm.Format("2006/01/02, 15:04") + ". - " + a + ": " }},
		{"android-iso", false, func(tm time.Time, a string) string { return tm.Format("2006-01-02 15:04") + " - " + a + ": " }},
		{"kakaotalk-ko", false, func(tm time.Time, a string) string {
			h, pm := h12(tm, false)
			return fmt.Sprintf("%d년 %d월 %d일 %s %d:%02d, %s : ", tm.Year(), tm.Month(), tm.Day(), ampm(pm, "오전", "오후"), h, tm.Minute(), a)
		}},
		{"ios-bidi", true, func(tm time.Time, a string) string {
			return "\u200e[" + tm.Format("02/01/2006, 15:04:05") + "] ~\u202f" + a + ": "
		}},
	}
	start := time.Date(2021, 12, 30, 0, 4, 3, 0, time.Local)
	for i, l := range layouts {
		step := 7*time.Hour + 13*time.Minute + 17*time.Second
		msgs := fxMessages(start.Add(time.Duration(i)*time.Hour), 60, step)
		var b strings.Builder
		for k := range msgs {
			m := &msgs[k]
			if !l.seconds {
				m.at = m.at.Truncate(time.Minute)
			}
			if k == 5 {
				// a group event between messages: counted, never a message
				h := l.head(m.at, "\x00")
				b.WriteString(h[:strings.IndexByte(h, 0)] + "Ana María added Ivan Petrov\n")
			}
			b.WriteString(l.head(m.at, m.author) + m.text + "\n")
		}
		p := filepath.Join(dir, "WhatsApp Chat with "+l.name+".txt")
		fxWrite(t, p, b.String())
		fxTruth(e, p, msgs)
	}
	return e
}

// fbLatin1 writes s as Facebook's export does: UTF-8 bytes read as Latin-1.
func fbLatin1(t *testing.T, s string) string {
	t.Helper()
	out, err := charmap.ISO8859_1.NewDecoder().String(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeMessengerFixtures writes Facebook and Instagram "Download your
// information" threads (newest message first, text as UTF-8-read-as-Latin-1, a
// thread split over two files) and one end-to-end encrypted chat export.
func writeMessengerFixtures(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	type fbMsg struct {
		Sender  string           `json:"sender_name"`
		TS      int64            `json:"timestamp_ms"`
		Content string           `json:"content,omitempty"`
		Photos  []map[string]any `json:"photos,omitempty"`
	}
	thread := func(root, path string, msgs []fxMsg, files int) {
		per := (len(msgs) + files - 1) / files
		for f := 0; f < files; f++ {
			part := msgs[f*per : min(len(msgs), (f+1)*per)]
			var out []fbMsg
			names := map[string]bool{}
			for i := len(part) - 1; i >= 0; i-- {
				m := part[i]
				names[m.author] = true
				fm := fbMsg{Sender: fbLatin1(t, m.author), TS: m.at.UnixMilli(), Content: fbLatin1(t, m.text)}
				if i%9 == 4 {
					fm.Photos = []map[string]any{{"uri": path + "/photos/p" + fmt.Sprint(i) + ".jpg", "creation_timestamp": m.at.Unix()}}
				}
				out = append(out, fm)
			}
			var parts []map[string]string
			var sorted []string
			for n := range names {
				sorted = append(sorted, n)
			}
			sort.Strings(sorted)
			for _, n := range sorted {
				parts = append(parts, map[string]string{"name": fbLatin1(t, n)})
			}
			b, err := json.MarshalIndent(map[string]any{
				"participants": parts, "messages": out, "title": fbLatin1(t, "Zoë & friends"),
				"is_still_participant": true, "thread_path": path, "magic_words": []string{},
			}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(root), filepath.FromSlash(path), fmt.Sprintf("message_%d.json", f+1))
			fxWrite(t, p, string(b))
			fxTruth(e, p, part)
		}
	}
	thread("facebook-me/messages", "inbox/zoeandfriends_8xk2", fxMessages(time.Date(2019, 5, 1, 9, 0, 0, 0, time.UTC), 80, 5*time.Hour+3*time.Second), 2)
	thread("instagram-me/your_instagram_activity/messages", "inbox/ana.s_17845", fxMessages(time.Date(2022, 1, 1, 23, 59, 0, 0, time.UTC), 40, 11*time.Hour), 1)
	var e2 []map[string]any
	msgs := fxMessages(time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC), 20, 3*time.Minute)
	for _, m := range msgs {
		e2 = append(e2, map[string]any{"isUnsent": false, "media": []any{}, "reactions": []any{}, "senderName": m.author, "text": m.text, "timestamp": m.at.UnixMilli(), "type": "text"})
	}
	b, _ := json.Marshal(map[string]any{"participants": []string{"Ana María", "Zoë"}, "threadName": "Ana María", "messages": e2})
	p := filepath.Join(dir, "messenger-e2ee", "Ana María_1.json")
	fxWrite(t, p, string(b))
	fxTruth(e, p, msgs)
	return e
}

// writeGoogleChatFixtures writes a Takeout "Google Chat" folder: a space and a DM,
// each messages.json with group_info.json, and a user's user_info.json.
func writeGoogleChatFixtures(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	conv := func(folder, name string, msgs []fxMsg) {
		var out []map[string]any
		members := map[string]bool{}
		for i, m := range msgs {
			members[m.author] = true
			// Takeout's layout, with its narrow no-break space before AM/PM
			d := m.at.UTC().Format("Monday, January 2, 2006 at 3:04:05\u202fPM") + " UTC"
			out = append(out, map[string]any{
				"creator":      map[string]string{"name": m.author, "email": fmt.Sprintf("user%d@example.com", utf8.RuneCountInString(m.author)), "user_type": "Human"},
				"created_date": d, "text": m.text, "topic_id": fmt.Sprintf("t%d", i/3), "message_id": fmt.Sprintf("%s/t%d/m%d", folder, i/3, i),
			})
		}
		b, _ := json.MarshalIndent(map[string]any{"messages": out}, "", "  ")
		p := filepath.Join(dir, "Takeout", "Google Chat", "Groups", folder, "messages.json")
		fxWrite(t, p, string(b))
		info := map[string]any{"members": []map[string]string{}}
		if name != "" {
			info["name"] = name
		}
		for n := range members {
			info["members"] = append(info["members"].([]map[string]string), map[string]string{"name": n, "user_type": "Human"})
		}
		b, _ = json.Marshal(info)
		fxWrite(t, filepath.Join(filepath.Dir(p), "group_info.json"), string(b))
		fxTruth(e, p, msgs)
	}
	conv("Space AAAAx1y2z3", "Launch team", fxMessages(time.Date(2022, 3, 16, 14, 56, 1, 0, time.UTC), 50, 9*time.Hour+1*time.Second))
	conv("DM 8ab3c0", "", fxMessages(time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC), 15, 17*time.Minute))
	fxWrite(t, filepath.Join(dir, "Takeout", "Google Chat", "Users", "User 1234", "user_info.json"),
		`{"user": {"name": "Ana María", "email": "ana@example.com", "user_type": "Human"}, "membership_info": [{"group_name": "Launch team", "group_id": "AAAAx1y2z3", "membership_state": "MEMBER_JOINED"}]}`)
	return e
}
