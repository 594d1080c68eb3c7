package chat

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

func TestTelegramSingleChat(t *testing.T) {
	p := readertest.WriteFile(t, "result.json", readertest.TelegramSingleChat)
	out, rep := readertest.Run(t, TelegramReader{}, p)
	if len(out.Sources) != 1 {
		t.Fatalf("%d sources, want 1 (one month)", len(out.Sources))
	}
	src := out.Sources[0]
	if src.SourceID != "telegram:4242/2020-01" || src.Title != "Test Group (2020-01)" || src.Provider != "telegram" || src.Origin != p {
		t.Errorf("source %q %q %q %q", src.SourceID, src.Title, src.Provider, src.Origin)
	}
	msgs := readertest.Messages(t, out)
	if len(msgs) != 12 {
		t.Errorf("%d messages, want 12 (14 less a service message without text and one without a date)", len(msgs))
	}
	readertest.WantMessage(t, msgs, "telegram:4242:1", "Alice", "user111", 1577977445000, "Hello")
	if m := readertest.WantMessage(t, msgs, "telegram:4242:2", "Bob", "user222", 1577977505000, "(reply to Alice) See the docs (https://ex.com/d) and https://go.dev!"); m.ReplyTo != "telegram:4242:1" {
		t.Errorf("reply links to %q, want telegram:4242:1", m.ReplyTo)
	}
	if _, ok := msgs["telegram:4242:3"]; ok {
		t.Error("service message without text was kept")
	}
	m := readertest.WantMessage(t, msgs, "telegram:4242:4", "Bob", "user222", 1577977625000, "[photo]")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "photo_1@02-01-2020_16-07-05.jpg" || m.Attachments[0].ContentType != "image/jpeg" || m.Attachments[0].Size != 1234 {
		t.Errorf("photo attachments %+v", m.Attachments)
	}
	m = readertest.WantMessage(t, msgs, "telegram:4242:5", "Alice", "user111", 1577977685000, "[sticker 😀]")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "sticker.webp" {
		t.Errorf("sticker attachments %+v", m.Attachments)
	}
	m = readertest.WantMessage(t, msgs, "telegram:4242:6", "Alice", "user111", 1577977745000, "[voice message]")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "audio_1.ogg" || m.Attachments[0].ContentType != "audio/ogg" {
		t.Errorf("voice attachments %+v", m.Attachments)
	}
	m = readertest.WantMessage(t, msgs, "telegram:4242:7", "Bob", "user222", 1577977805000, "[file report.pdf]")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "report.pdf" || m.Attachments[0].ContentType != "application/pdf" || m.Attachments[0].Size != 2048 {
		t.Errorf("file attachments %+v", m.Attachments)
	}
	readertest.WantMessage(t, msgs, "telegram:4242:8", "Bob", "user222", 1577977865000, "(forwarded from Carol) fwd text")
	local := time.Date(2020, 1, 3, 10, 0, 0, 0, time.Local).UnixMilli()
	readertest.WantMessage(t, msgs, "telegram:4242:9", "Alice", "user111", local, "old export, no unixtime")
	if m := readertest.WantMessage(t, msgs, "telegram:4242:11", "Bob", "user222", 1577977925000, "reply to something older"); m.ReplyTo != "telegram:4242:999" {
		t.Errorf("reply to a message outside the export links to %q, want telegram:4242:999", m.ReplyTo)
	}
	m = readertest.WantMessage(t, msgs, "telegram:4242:12", "Bob", "user222", 1577977985000, "caption")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "photo" {
		t.Errorf("not-included photo attachments %+v", m.Attachments)
	}
	readertest.WantMessage(t, msgs, "telegram:4242:13", "Alice", "user111", 1577978045000, "Call ended")
	readertest.WantMessage(t, msgs, "telegram:4242:14", "Bob", "user222", 1577978105000, "[poll] Lunch?\n- Yes\n- No")

	if rep.Sum.Failures != 1 || !readertest.HasNote(rep, true, p, "message id 10", "no date") {
		t.Errorf("failures %d %v, want one for message id 10", rep.Sum.Failures, rep.Sum.Errors)
	}
	if rep.Sum.Warnings != 1 || !readertest.HasNote(rep, false, "local time") {
		t.Errorf("warnings %v, want one about local time", rep.Sum.Notes)
	}
	for i := 1; i < len(src.Messages); i++ {
		if src.Messages[i].TimestampMS < src.Messages[i-1].TimestampMS {
			t.Errorf("messages out of time order at %d", i)
		}
	}
}

const tgAccount = `{
 "about": "Here is the data you requested.",
 "personal_information": {"user_id": 111, "first_name": "Alice", "last_name": "Smith", "phone_number": "+1 555"},
 "contacts": {"about": "x", "list": []},
 "chats": {
  "about": "This page lists all chats from this export.",
  "list": [
   {"type": "personal_chat", "id": 222, "messages": [
     {"id": 1, "type": "message", "date": "2021-03-01T10:00:00", "date_unixtime": "1614592800", "from": "Alice Smith", "from_id": "user111", "text": "hi Bob"},
     {"id": 2, "type": "message", "date": "2021-03-01T10:01:00", "date_unixtime": "1614592860", "from": "Bob", "from_id": "user222", "reply_to_message_id": 1, "text": "hi"}
   ]},
   {"type": "saved_messages", "id": 111, "messages": [
     {"id": 7, "type": "message", "date": "2021-04-01T10:00:00", "date_unixtime": "1617271200", "from": "Alice Smith", "from_id": "user111", "text": [{"type": "link", "text": "https://example.org"}]}
   ]},
   {"name": "Quiet", "type": "private_group", "id": 5, "messages": []}
  ]
 },
 "left_chats": {
  "about": "left",
  "list": [
   {"name": "Old Group", "type": "private_supergroup", "id": 777, "messages": [
     {"id": 3, "type": "message", "date": "2021-02-27T09:00:00", "date_unixtime": "1614416400", "from": "Dan", "from_id": "user444", "text": "bye"}
   ]}
  ]
 }
}`

func TestTelegramAccountExport(t *testing.T) {
	p := readertest.WriteFile(t, "result.json", tgAccount)
	out, rep := readertest.Run(t, TelegramReader{}, p)
	if rep.Sum.Failures != 0 || rep.Sum.Warnings != 0 {
		t.Errorf("failures %v warnings %v", rep.Sum.Errors, rep.Sum.Notes)
	}
	titles := map[string]string{}
	for _, s := range out.Sources {
		titles[s.SourceID] = s.Title
	}
	want := map[string]string{
		"telegram:222/2021-03": "Bob (2021-03)",
		"telegram:111/2021-04": "Saved Messages (2021-04)",
		"telegram:777/2021-02": "Old Group (2021-02)",
	}
	if len(titles) != len(want) {
		t.Errorf("sources %v, want %v", titles, want)
	}
	for id, title := range want {
		if titles[id] != title {
			t.Errorf("source %s title %q, want %q", id, titles[id], title)
		}
	}
	msgs := readertest.Messages(t, out)
	readertest.WantMessage(t, msgs, "telegram:222:1", "Alice Smith", "user111", 1614592800000, "hi Bob")
	readertest.WantMessage(t, msgs, "telegram:222:2", "Bob", "user222", 1614592860000, "(reply to Alice Smith) hi")
	readertest.WantMessage(t, msgs, "telegram:111:7", "Alice Smith", "user111", 1617271200000, "https://example.org")
	readertest.WantMessage(t, msgs, "telegram:777:3", "Dan", "user444", 1614416400000, "bye")
}

func TestTelegramDuplicateIDs(t *testing.T) {
	// anonymised exports repeat one id (and a zero date_unixtime): every message is
	// still kept under its own ref, and no reply is attributed by guess
	p := readertest.WriteFile(t, "result.json", `{"name":"Anon","type":"private_group","id":9,"messages":[
	 {"id":5,"type":"message","date":"2022-03-21T11:11:11","date_unixtime":"0000000000","from":"A","from_id":"user1","text":"one"},
	 {"id":5,"type":"message","date":"2022-03-21T11:11:12","date_unixtime":"0000000000","from":"B","from_id":"user2","reply_to_message_id":5,"text":"two"}]}`)
	out, rep := readertest.Run(t, TelegramReader{}, p)
	msgs := readertest.Messages(t, out)
	readertest.WantMessage(t, msgs, "telegram:9:5", "A", "user1", time.Date(2022, 3, 21, 11, 11, 11, 0, time.Local).UnixMilli(), "one")
	readertest.WantMessage(t, msgs, "telegram:9:5#2", "B", "user2", time.Date(2022, 3, 21, 11, 11, 12, 0, time.Local).UnixMilli(), "two")
	if !readertest.HasNote(rep, false, "repeat an id") || !readertest.HasNote(rep, false, "local time") || rep.Sum.Warnings != 2 {
		t.Errorf("warnings %v", rep.Sum.Notes)
	}
}

func TestTelegramDetect(t *testing.T) {
	r := TelegramReader{}
	yes := map[string]string{
		"single chat":           readertest.TelegramSingleChat,
		"single chat, cut head": readertest.TelegramSingleChat[:150],
		"account":               tgAccount,
		"account, cut head":     tgAccount[:100],
		"chats list only":       `{"about":"x","chats":{"about":"y","list":[{"type":"personal_chat"`,
	}
	for name, s := range yes {
		if !r.Detect("x/result.json", false, []byte(s)) {
			t.Errorf("%s: not detected", name)
		}
	}
	no := map[string]string{
		"chat batch":         `{"platform":"x","channel_label":"y","messages":[]}`,
		"slack day file":     `[{"type":"message","user":"U1","text":"hi","ts":"1.0"}]`,
		"discord":            `{"guild":{"id":"1","name":"g"},"channel":{"id":"2","type":"GuildTextChat","name":"c"},"messages":[{"type":"Default"}]}`,
		"nested type":        `{"data":{"type":"personal_chat","messages":[]}}`,
		"unknown chat type":  `{"name":"x","type":"channel","messages":[]}`,
		"email thread":       `{"provider":"gmail","thread_subject":"s","messages":[{"from":"a"}]}`,
		"not json":           `hello`,
		"chats without list": `{"chats":{"about":"x"}}`,
	}
	for name, s := range no {
		if r.Detect("x/result.json", false, []byte(s)) {
			t.Errorf("%s: detected", name)
		}
	}
	if r.Detect("x/result.txt", false, []byte(readertest.TelegramSingleChat)) || r.Detect("x/result.json", true, nil) {
		t.Error("detected a .txt file or a folder")
	}
}

func TestTelegramMalformed(t *testing.T) {
	for name, s := range map[string]string{
		"truncated":    readertest.TelegramSingleChat[:400],
		"syntax":       `{"name":"x","type":"personal_chat","id":1,"messages":[}]}`,
		"trailing":     `{"name":"x","type":"personal_chat","id":1,"messages":[]} {}`,
		"messages obj": `{"name":"x","type":"personal_chat","id":1,"messages":{"a":1}}`,
	} {
		p := readertest.WriteFile(t, "result.json", s)
		out, rep := readertest.Run(t, TelegramReader{}, p)
		if rep.Sum.Failures != 1 || len(out.Sources) != 0 {
			t.Errorf("%s: %d failures %v, %d sources; want one failure", name, rep.Sum.Failures, rep.Sum.Errors, len(out.Sources))
		}
		if name != "messages obj" && !readertest.HasNote(rep, true, p, "byte ") {
			t.Errorf("%s: failure does not name the byte offset: %v", name, rep.Sum.Errors)
		}
	}
	// a chat without messages is not a failure
	p := readertest.WriteFile(t, "result.json", `{"name":"x","type":"personal_chat","id":1,"messages":[]}`)
	out, rep := readertest.Run(t, TelegramReader{}, p)
	if len(out.Sources) != 0 || rep.Sum.Failures != 0 {
		t.Errorf("empty chat: %d sources, failures %v", len(out.Sources), rep.Sum.Errors)
	}
	// odd values in one message cost that message at most
	p = readertest.WriteFile(t, "result.json", `{"name":"x","type":"personal_chat","id":1,"messages":[
	  7, {"id":{"a":1},"type":[],"date_unixtime":true,"from":{},"text":{"x":1}},
	  {"id":2,"type":"message","date_unixtime":1577977445,"from":null,"from_id":"user9","text":[1,null,{"type":"bold"}, "ok"]}]}`)
	out, rep = readertest.Run(t, TelegramReader{}, p)
	msgs := readertest.Messages(t, out)
	readertest.WantMessage(t, msgs, "telegram:1:2", "user9", "user9", 1577977445000, "ok")
	if rep.Sum.Failures != 2 {
		t.Errorf("failures %v, want 2 (message 1 not an object, message 2 without a date)", rep.Sum.Errors)
	}
}

// TestTelegramNoPanic reads every prefix of the fixtures: no panic, and every
// problem reported.
func TestTelegramNoPanic(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []string{readertest.TelegramSingleChat, tgAccount} {
		for n := 0; n <= len(s); n += 13 {
			p := filepath.Join(dir, "result.json")
			if err := os.WriteFile(p, []byte(s[:n]), 0o644); err != nil {
				t.Fatal(err)
			}
			out, rep := readertest.ReadForced(context.Background(), TelegramReader{}, p)
			if n < len(s)-2 && len(out.Sources) > 0 {
				t.Errorf("prefix %d: sources from a truncated file", n)
			}
			if n > 0 && n < len(s)-2 && rep.Sum.Failures == 0 && rep.Sum.Warnings == 0 {
				t.Errorf("prefix %d: nothing reported", n)
			}
		}
	}
}

func TestTelegramCancelled(t *testing.T) {
	p := readertest.WriteFile(t, "result.json", tgAccount)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, rep := readertest.ReadForced(ctx, TelegramReader{}, p)
	if len(out.Sources) != 0 || rep.Sum.Failures != 0 {
		t.Errorf("cancelled: %d sources, failures %v", len(out.Sources), rep.Sum.Errors)
	}
}

// TestTelegramChatWithoutIDOrName reads a single chat's result.json that has no
// "id", "name" or "type" (trimmed by hand or written by another tool): it is
// detected by its messages' fields and named after the folder it was exported to.
func TestTelegramChatWithoutIDOrName(t *testing.T) {
	p := readertest.WriteFile(t, filepath.Join("ChatExport_2022-03-21", "result.json"), `{"messages":[
	  {"id":1,"type":"message","date":"2022-03-21T11:11:11","date_unixtime":"1647861071","from":"Ann","from_id":"user1","text":"hello","text_entities":[{"type":"plain","text":"hello"}]},
	  {"id":2,"type":"service","date":"2022-03-21T11:12:00","date_unixtime":"1647861120","actor":"Ann","action":"pin_message","text":""}]}`)
	out, rep := readertest.Run(t, TelegramReader{}, p)
	msgs := readertest.Messages(t, out)
	readertest.WantMessage(t, msgs, "telegram:ChatExport_2022-03-21:1", "Ann", "user1", 1647861071000, "hello")
	if len(out.Sources) != 1 || out.Sources[0].Title != "ChatExport_2022-03-21 (2022-03)" {
		t.Errorf("sources %+v", out.Sources)
	}
	if rep.Sum.Failures != 0 || !readertest.HasNote(rep, false, "named after its file") {
		t.Errorf("failures %v warnings %v", rep.Sum.Errors, rep.Sum.Notes)
	}
	p = readertest.WriteFile(t, "ann.json", `{"messages":[{"id":1,"type":"message","date_unixtime":"1647861071","from":"Ann","text":"x"}]}`)
	out, _ = readertest.Run(t, TelegramReader{}, p)
	readertest.WantMessage(t, readertest.Messages(t, out), "telegram:ann:1", "Ann", "", 1647861071000, "x")
}

// TestChatTimesBefore1980 refuses a message dated by an export's zero ("1970-01-01")
// in each chat JSON reader, naming it; the others are kept.
func TestChatTimesBefore1980(t *testing.T) {
	p := readertest.WriteFile(t, "result.json", `{"name":"x","type":"personal_chat","id":1,"messages":[
	  {"id":1,"type":"message","date":"1970-01-01T00:00:00","from":"A","text":"zero"},
	  {"id":2,"type":"message","date":"2022-01-01T00:00:00","date_unixtime":"1640995200","from":"A","text":"ok"}]}`)
	out, rep := readertest.Run(t, TelegramReader{}, p)
	if len(readertest.Messages(t, out)) != 1 || !readertest.HasNote(rep, true, "message id 1", "before 1980") {
		t.Errorf("telegram: failures %v", rep.Sum.Errors)
	}
	p = readertest.WriteFile(t, "message_1.json", `{"participants":[{"name":"A"}],"messages":[{"sender_name":"A","timestamp_ms":5,"content":"zero"},{"sender_name":"A","timestamp_ms":1640995200000,"content":"ok"}]}`)
	out, rep = readertest.Run(t, MessengerReader{}, p)
	if len(readertest.Messages(t, out)) != 1 || !readertest.HasNote(rep, true, "message 1", "before 1980") {
		t.Errorf("messenger: failures %v", rep.Sum.Errors)
	}
}
