package chat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

func waTestRef(conv string, ms int64, n int) string {
	return fmt.Sprintf("whatsapp:%s:%d:%d", conv, ms, n)
}

func TestWhatsAppAndroid24h(t *testing.T) {
	p := readertest.WriteFile(t, "WhatsApp Chat with Alice.txt", "\uFEFF"+
		"\u200e31.12.19, 23:58 - Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or listen to them. Tap to learn more.\n"+
		"31.12.19, 23:59 - Alice: Happy new year\r\n"+
		"almost!\n"+
		"\n"+
		"1.1.20, 0:01 - Bob: <Media omitted>\n"+
		"01.01.20, 00:01 - Bob created group “Party”\n"+
		"01.01.20, 00:01 - Alice added Carol\n"+
		"01.01.20, 00:01 - Alice: same minute\n"+
		"13.01.2020, 09:05 - Alice: day over 12\n"+
		"30.02.20, 10:00 - Alice: not a date\n"+
		"01.02.20, 10:00 - Carol: <Medien ausgeschlossen>\n"+
		"01.02.20, 10:01 - Carol: IMG-20200201-WA0001.jpg (file attached)\n"+
		"look at this\n")
	out, rep := readertest.Run(t, WhatsAppReader{}, p)
	msgs := readertest.Messages(t, out)
	if len(msgs) != 7 {
		t.Errorf("%d messages, want 7", len(msgs))
	}
	ref := func(ms int64, n int) string { return waTestRef("WhatsApp Chat with Alice", ms, n) }
	ms := readertest.LocalMS(2019, 12, 31, 23, 59, 0)
	readertest.WantMessage(t, msgs, ref(ms, 0), "Alice", "", ms, "Happy new year\nalmost!")
	ms = readertest.LocalMS(2020, 1, 1, 0, 1, 0)
	readertest.WantMessage(t, msgs, ref(ms, 0), "Bob", "", ms, "<Media omitted>")
	readertest.WantMessage(t, msgs, ref(ms, 1), "Alice", "", ms, "same minute")
	ms = readertest.LocalMS(2020, 1, 13, 9, 5, 0)
	readertest.WantMessage(t, msgs, ref(ms, 0), "Alice", "", ms, "day over 12")
	// a header with an impossible date is its own message, never another's words
	readertest.WantMessage(t, msgs, ref(ms, 1), "Alice", "", ms, "not a date")
	ms = readertest.LocalMS(2020, 2, 1, 10, 0, 0)
	readertest.WantMessage(t, msgs, ref(ms, 0), "Carol", "", ms, "<Medien ausgeschlossen>")
	ms = readertest.LocalMS(2020, 2, 1, 10, 1, 0)
	m := readertest.WantMessage(t, msgs, ref(ms, 0), "Carol", "", ms, "IMG-20200201-WA0001.jpg (file attached)\nlook at this")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "IMG-20200201-WA0001.jpg" {
		t.Errorf("attachments %+v", m.Attachments)
	}
	for _, s := range out.Sources {
		for _, m := range s.Messages {
			month := time.UnixMilli(m.TimestampMS).UTC().Format("2006-01")
			if s.SourceID != "whatsapp:WhatsApp Chat with Alice/"+month || s.Title != "Alice ("+month+")" {
				t.Errorf("message %s in source %q %q", m.Ref, s.SourceID, s.Title)
			}
		}
		if s.Provider != "whatsapp" || s.Origin != p {
			t.Errorf("source %s provider %q origin %q", s.SourceID, s.Provider, s.Origin)
		}
	}
	if rep.Sum.Failures != 0 {
		t.Errorf("failures %v", rep.Sum.Errors)
	}
	if !readertest.HasNote(rep, false, "line 10", "not valid") || !readertest.HasNote(rep, false, "local time") || readertest.HasNote(rep, false, "guessed") {
		t.Errorf("warnings %v", rep.Sum.Notes)
	}
}

func TestWhatsAppAndroid12h(t *testing.T) {
	// month first (a second number over 12), 12-hour clock with U+202F and lowercase am
	p := readertest.WriteFile(t, "Bob.txt",
		"12/31/19, 11:59\u202fPM - Bob: late\n"+
			"1/2/20, 12:05 am - Carol: after midnight\n"+
			"12/13/19, 1:00 PM - Bob: afternoon\n"+
			"12/13/19, 12:00 PM - Bob: noon\n")
	out, rep := readertest.Run(t, WhatsAppReader{}, p)
	msgs := readertest.Messages(t, out)
	if len(msgs) != 4 {
		t.Errorf("%d messages, want 4", len(msgs))
	}
	for _, w := range []struct {
		ms           int64
		author, text string
	}{
		{readertest.LocalMS(2019, 12, 31, 23, 59, 0), "Bob", "late"},
		{readertest.LocalMS(2020, 1, 2, 0, 5, 0), "Carol", "after midnight"},
		{readertest.LocalMS(2019, 12, 13, 13, 0, 0), "Bob", "afternoon"},
		{readertest.LocalMS(2019, 12, 13, 12, 0, 0), "Bob", "noon"},
	} {
		readertest.WantMessage(t, msgs, waTestRef("Bob", w.ms, 0), w.author, "", w.ms, w.text)
	}
	if readertest.HasNote(rep, false, "guessed") || rep.Sum.Failures != 0 {
		t.Errorf("warnings %v failures %v", rep.Sum.Notes, rep.Sum.Errors)
	}
}

func TestWhatsAppIOS(t *testing.T) {
	// iOS: "_chat.txt" in the folder the zip was unpacked into; notices attributed to
	// the group with U+200E; attachments; seconds
	dir := filepath.Join(t.TempDir(), "WhatsApp Chat - Team")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "_chat.txt")
	content := "\u200e[31/12/2019, 23:59:59] Team: \u200eMessages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or listen to them.\n" +
		"[31/12/2019, 23:59:59] Team: \u200eAlice created group “Team”\n" +
		"[01/01/2020, 00:00:05] Alice: \u200e<attached: 00000012-PHOTO-2020-01-01-00-00-05.jpg>\n" +
		"\u200e[01/01/2020, 00:00:07] Bob: \u200eimage omitted\n" +
		"[01/01/2020, 00:01:00] Bob: line one\n" +
		"\u200eline two\n" +
		"[1/1/2020, 0:01:30] Team: not a notice, just someone named like the group\n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, rep := readertest.Run(t, WhatsAppReader{}, p)
	msgs := readertest.Messages(t, out)
	if len(msgs) != 4 {
		t.Errorf("%d messages, want 4", len(msgs))
	}
	conv := "WhatsApp Chat - Team"
	ms := readertest.LocalMS(2020, 1, 1, 0, 0, 5)
	m := readertest.WantMessage(t, msgs, waTestRef(conv, ms, 0), "Alice", "", ms, "<attached: 00000012-PHOTO-2020-01-01-00-00-05.jpg>")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "00000012-PHOTO-2020-01-01-00-00-05.jpg" || m.Attachments[0].ContentType != "image/jpeg" {
		t.Errorf("attachments %+v", m.Attachments)
	}
	ms = readertest.LocalMS(2020, 1, 1, 0, 0, 7)
	readertest.WantMessage(t, msgs, waTestRef(conv, ms, 1), "Bob", "", ms, "image omitted")
	ms = readertest.LocalMS(2020, 1, 1, 0, 1, 0)
	readertest.WantMessage(t, msgs, waTestRef(conv, ms, 0), "Bob", "", ms, "line one\nline two")
	ms = readertest.LocalMS(2020, 1, 1, 0, 1, 30)
	readertest.WantMessage(t, msgs, waTestRef(conv, ms, 1), "Team", "", ms, "not a notice, just someone named like the group")
	for _, s := range out.Sources {
		month := time.UnixMilli(s.Messages[0].TimestampMS).UTC().Format("2006-01")
		if s.Title != "Team ("+month+")" || s.SourceID != "whatsapp:WhatsApp Chat - Team/"+month {
			t.Errorf("source %q %q", s.SourceID, s.Title)
		}
	}
	if rep.Sum.Failures != 0 || readertest.HasNote(rep, false, "guessed") {
		t.Errorf("warnings %v failures %v", rep.Sum.Notes, rep.Sum.Errors)
	}
}

func TestWhatsAppOrderGuessed(t *testing.T) {
	for _, c := range []struct {
		name, content string
		ms            int64
		order         string
	}{
		{"24h", "01/02/2020, 10:00 - Ann: x\n", readertest.LocalMS(2020, 2, 1, 10, 0, 0), "day/month"},
		{"12h", "[1/2/20, 3:04:05 PM] Ann: x\n", readertest.LocalMS(2020, 1, 2, 15, 4, 5), "month/day"},
		{"iso", "2020-01-02 10:00 - Ann: x\n", readertest.LocalMS(2020, 1, 2, 10, 0, 0), ""},
		{"dash 2-digit year", "[15-01-20 02:22:56] Ann: x\n", readertest.LocalMS(2020, 1, 15, 2, 22, 56), ""},
	} {
		p := readertest.WriteFile(t, "chat.txt", c.content)
		out, rep := readertest.Run(t, WhatsAppReader{}, p)
		msgs := readertest.Messages(t, out)
		readertest.WantMessage(t, msgs, waTestRef("chat", c.ms, 0), "Ann", "", c.ms, "x")
		if c.order != "" && !readertest.HasNote(rep, false, "guessed "+c.order) {
			t.Errorf("%s: warnings %v, want the order guessed as %s", c.name, rep.Sum.Notes, c.order)
		}
	}
}

func TestWhatsAppTextBeforeFirstHeader(t *testing.T) {
	p := readertest.WriteFile(t, "chat.txt", "Some stray line\n\n01/02/2020, 10:00 - Ann: x\n")
	out, rep := readertest.Run(t, WhatsAppReader{}, p)
	msgs := readertest.Messages(t, out)
	ms := readertest.LocalMS(2020, 2, 1, 10, 0, 0)
	readertest.WantMessage(t, msgs, waTestRef("chat", ms, 0), "", "", ms, "Some stray line")
	readertest.WantMessage(t, msgs, waTestRef("chat", ms, 1), "Ann", "", ms, "x")
	if !readertest.HasNote(rep, false, "line 1", "before the first") {
		t.Errorf("warnings %v", rep.Sum.Notes)
	}
}

func TestWhatsAppDetect(t *testing.T) {
	r := WhatsAppReader{}
	for name, s := range map[string]string{
		"android":      "31/12/2019, 23:59 - Alice: hi\n",
		"ios with lrm": "\uFEFF\u200e[31/12/2019, 23:59:59] Alice: hi\n",
		"fifth line":   "a\nb\nc\nd\n12/31/19, 11:59 PM - Bob: x\n",
	} {
		if !r.Detect("x/chat.txt", false, []byte(s)) {
			t.Errorf("%s: not detected", name)
		}
	}
	for name, s := range map[string]string{
		"notes":      "Meeting notes\n\nWe met on 31/12/2019.\n",
		"sixth line": "a\nb\nc\nd\ne\n12/31/19, 11:59 PM - Bob: x\n",
		"empty":      "",
	} {
		if r.Detect("x/chat.txt", false, []byte(s)) {
			t.Errorf("%s: detected", name)
		}
	}
	if r.Detect("x/chat.json", false, []byte("31/12/2019, 23:59 - Alice: hi\n")) {
		t.Error("detected a .json file")
	}
	conv, title := waNames(filepath.Join("x", "WhatsApp Chat with Alice Smith (1).txt"))
	if conv != "WhatsApp Chat with Alice Smith" || title != "Alice Smith" {
		t.Errorf("names %q %q", conv, title)
	}
	if _, title := waNames("Chat de WhatsApp con Ana.txt"); title != "Ana" {
		t.Errorf("spanish title %q", title)
	}
}

func TestWhatsAppMalformed(t *testing.T) {
	p := readertest.WriteFile(t, "chat.txt", "31/12/2019, 23:59 - Alice: hi\n\x00\x00\x01binary")
	out, rep := readertest.Run(t, WhatsAppReader{}, p)
	if rep.Sum.Failures != 1 || len(out.Sources) != 0 {
		t.Errorf("binary: failures %v, %d sources", rep.Sum.Errors, len(out.Sources))
	}
	p = readertest.WriteFile(t, "notes.txt", "no timestamps here\nat all\n")
	out, rep = readertest.ReadForced(context.Background(), WhatsAppReader{}, p)
	if rep.Sum.Failures != 1 || len(out.Sources) != 0 || !readertest.HasNote(rep, true, p, "no line starts with a WhatsApp timestamp") {
		t.Errorf("no headers: failures %v, %d sources", rep.Sum.Errors, len(out.Sources))
	}
	// odd input never panics
	for _, s := range []string{"", "\n\n", "[", "[99/99/9999, 99:99:99] :", "31/12/2019, 23:59 - :", "31/12/2019, 23:59 - Alice:\n\u200e", "00/00/00, 00:00 - a: b"} {
		p = readertest.WriteFile(t, "chat.txt", s)
		readertest.ReadForced(context.Background(), WhatsAppReader{}, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p = readertest.WriteFile(t, "chat.txt", "31/12/2019, 23:59 - Alice: hi\n")
	out, rep = readertest.ReadForced(ctx, WhatsAppReader{}, p)
	if len(out.Sources) != 0 || rep.Sum.Failures != 0 {
		t.Errorf("cancelled: %d sources, failures %v", len(out.Sources), rep.Sum.Errors)
	}
}
