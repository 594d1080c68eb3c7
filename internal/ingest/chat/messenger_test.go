package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

// fbMojibake writes s as Facebook's export does: each UTF-8 byte as the Latin-1
// character of that value, \u-escaped.
func fbMojibake(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 {
			b.WriteByte(c)
			continue
		}
		b.WriteString(`\u00`)
		b.WriteString(strings.ToLower(string("0123456789ABCDEF"[c>>4])) + strings.ToLower(string("0123456789ABCDEF"[c&15])))
	}
	return b.String()
}

func TestMessengerFacebookThread(t *testing.T) {
	// "Download your information" JSON: newest message first, text as mojibake
	content := `{
  "participants": [{"name": "` + fbMojibake("Zoë Martín") + `"}, {"name": "Bob"}],
  "messages": [
    {"sender_name": "Bob", "timestamp_ms": 1647615600000, "content": "Bob sent a link.",
     "share": {"link": "https://example.org/a", "share_text": "An article"}, "is_geoblocked_for_viewer": false},
    {"sender_name": "Bob", "timestamp_ms": 1647615500000, "photos": [{"uri": "messages/inbox/zoe_abc123/photos/123_456.jpg", "creation_timestamp": 1647615500}]},
    {"sender_name": "` + fbMojibake("Zoë Martín") + `", "timestamp_ms": 1647615400000, "content": "` + fbMojibake("Café at 5? 😀") + `\nsecond line",
     "reactions": [{"reaction": "` + fbMojibake("❤") + `", "actor": "Bob"}]},
    {"sender_name": "Bob", "timestamp_ms": 1647615300000, "is_unsent": true},
    {"sender_name": "Bob", "timestamp_ms": 1647615200000, "call_duration": 125, "content": "Bob called you."},
    {"sender_name": "Bob", "timestamp_ms": 1647615100000}
  ],
  "title": "` + fbMojibake("Zoë Martín") + `",
  "is_still_participant": true,
  "thread_path": "inbox/zoemartin_abc123",
  "magic_words": []
}`
	p := readertest.WriteFile(t, filepath.Join("messages", "inbox", "zoemartin_abc123", "message_1.json"), content)
	out, rep := readertest.Run(t, MessengerReader{}, p)
	msgs := readertest.Messages(t, out)
	if len(msgs) != 4 {
		t.Errorf("%d messages, want 4", len(msgs))
	}
	readertest.WantMessage(t, msgs, "messenger:inbox/zoemartin_abc123:1647615400000", "Zoë Martín", "", 1647615400000, "Café at 5? 😀\nsecond line")
	m := readertest.WantMessage(t, msgs, "messenger:inbox/zoemartin_abc123:1647615500000", "Bob", "", 1647615500000, "[photo: 123_456.jpg]")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "123_456.jpg" || m.Attachments[0].ContentType != "image/jpeg" {
		t.Errorf("attachments %+v", m.Attachments)
	}
	readertest.WantMessage(t, msgs, "messenger:inbox/zoemartin_abc123:1647615600000", "Bob", "", 1647615600000, "Bob sent a link.\n[shared: https://example.org/a] An article")
	readertest.WantMessage(t, msgs, "messenger:inbox/zoemartin_abc123:1647615200000", "Bob", "", 1647615200000, "Bob called you.\n[call, 2:05]")
	for _, s := range out.Sources {
		if s.Provider != "messenger" || !strings.HasPrefix(s.Title, "Zoë Martín (") {
			t.Errorf("source %s provider %q title %q", s.SourceID, s.Provider, s.Title)
		}
	}
	if rep.Sum.Failures != 0 || !readertest.HasNote(rep, false, "1 unsent") || !readertest.HasNote(rep, false, "1 message(s) with no text") {
		t.Errorf("failures %v warnings %v", rep.Sum.Errors, rep.Sum.Notes)
	}
}

func TestMessengerInstagramAndE2EE(t *testing.T) {
	ig := `{"participants": [{"name": "ana.s"}, {"name": "me"}],
  "messages": [{"sender_name": "ana.s", "timestamp_ms": 1647615400000, "content": "` + fbMojibake("olá") + `"},
               {"sender_name": "ana.s", "timestamp_ms": 1647615400000, "content": "same ms"}],
  "title": "ana.s", "thread_path": "inbox/anas_17845"}`
	p := readertest.WriteFile(t, filepath.Join("instagram-me-2022", "your_instagram_activity", "messages", "inbox", "anas_17845", "message_1.json"), ig)
	out, rep := readertest.Run(t, MessengerReader{}, p)
	msgs := readertest.Messages(t, out)
	if len(msgs) != 2 || rep.Sum.Failures != 0 {
		t.Errorf("instagram: %d messages, failures %v", len(msgs), rep.Sum.Errors)
	}
	for ref, m := range msgs {
		if !strings.HasPrefix(ref, "instagram:inbox/anas_17845:1647615400000:") || m.Author != "ana.s" {
			t.Errorf("instagram message %s %+v", ref, m)
		}
	}
	// Messenger's end-to-end encrypted chat export: participants as names, camelCase
	e2ee := `{"participants": ["Lena", "Tom"], "threadName": "Lena",
  "messages": [{"isUnsent": false, "media": [{"uri": "./media/img.png"}], "reactions": [], "senderName": "Lena", "text": "look", "timestamp": 1700000000000, "type": "media"}]}`
	p = readertest.WriteFile(t, "Lena_1.json", e2ee)
	out, _ = readertest.Run(t, MessengerReader{}, p)
	msgs = readertest.Messages(t, out)
	if len(msgs) != 1 {
		t.Fatalf("e2ee: %d messages", len(msgs))
	}
	for _, m := range msgs {
		if m.Author != "Lena" || m.TimestampMS != 1700000000000 || m.Text != "look\n[media: img.png]" {
			t.Errorf("e2ee message %+v", m)
		}
	}
}

func TestFBFixText(t *testing.T) {
	for in, want := range map[string]string{
		"CafÃ©":                  "Café",
		"plain":                  "plain",
		"Café":                   "Café", // Latin-1 text that is not UTF-8 stays
		"ð\u009f\u0098\u0080":    "😀",
		"already ok: 😀 and café": "already ok: 😀 and café",
	} {
		if got := fbFixText(in); got != want {
			t.Errorf("fbFixText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMessengerDetect(t *testing.T) {
	r := MessengerReader{}
	if !r.Detect("message_1.json", false, []byte(`{"participants":[{"name":"a"}],"messages":[{"sender_name":"a","timestamp_ms":1}]}`)) {
		t.Error("facebook thread not detected")
	}
	for name, s := range map[string]string{
		"telegram": `{"name":"x","type":"personal_chat","id":1,"messages":[]}`,
		"batch":    `{"platform":"x","channel_label":"y","messages":[]}`,
		"no parts": `{"messages":[{"sender_name":"a","timestamp_ms":1}]}`,
	} {
		if r.Detect("x.json", false, []byte(s)) {
			t.Errorf("%s detected", name)
		}
	}
}

func TestGoogleChatTakeout(t *testing.T) {
	dir := filepath.Join("Google Chat", "Groups", "Space AAAAbcd123")
	msgs := `{"messages": [
  {"creator": {"name": "Alice Smith", "email": "Alice@Example.com", "user_type": "Human"},
   "created_date": "Wednesday, March 16, 2022 at 2:56:01` + "\u202f" + `PM UTC", "text": "Hello team\nsecond line", "topic_id": "t1", "message_id": "AAAAbcd123/t1/t1"},
  {"creator": {"name": "Bob", "email": "bob@example.com", "user_type": "Human"},
   "created_date": "Thursday, March 17, 2022 at 9:05:00 AM UTC", "attached_files": [{"original_name": "plan.pdf", "export_name": "File-plan.pdf"}], "topic_id": "t1", "message_id": "AAAAbcd123/t1/m2"},
  {"creator": {"name": "Bob", "email": "bob@example.com", "user_type": "Human"},
   "created_date": "Thursday, March 17, 2022 at 9:06:00 AM UTC", "message_state": "DELETED", "deletion_metadata": {"deletion_type": "CREATOR"}},
  {"creator": {"name": "Bob"}, "created_date": "Unknown Date", "text": "lost"}
]}`
	p := readertest.WriteFile(t, filepath.Join(dir, "messages.json"), msgs)
	info := filepath.Join(filepath.Dir(p), "group_info.json")
	fbWriteFile(t, info, `{"name": "Launch team", "members": [{"name": "Alice Smith", "email": "alice@example.com", "user_type": "Human"}, {"name": "Bob"}]}`)
	out, rep := readertest.Run(t, GoogleChatReader{}, p)
	got := readertest.Messages(t, out)
	if len(got) != 2 {
		t.Errorf("%d messages, want 2", len(got))
	}
	readertest.WantMessage(t, got, "googlechat:Space AAAAbcd123:AAAAbcd123/t1/t1", "Alice Smith", "alice@example.com", 1647442561000, "Hello team\nsecond line")
	m := readertest.WantMessage(t, got, "googlechat:Space AAAAbcd123:AAAAbcd123/t1/m2", "Bob", "bob@example.com", 1647507900000, "[attached: plan.pdf]")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "plan.pdf" {
		t.Errorf("attachments %+v", m.Attachments)
	}
	for _, s := range out.Sources {
		if s.Title != "Launch team (2022-03)" || s.SourceID != "googlechat:Space AAAAbcd123/2022-03" || s.Provider != "googlechat" {
			t.Errorf("source %q %q %q", s.SourceID, s.Title, s.Provider)
		}
	}
	if rep.Sum.Failures != 1 || !readertest.HasNote(rep, true, "message 4", "Unknown Date") || !readertest.HasNote(rep, false, "1 deleted") {
		t.Errorf("failures %v warnings %v", rep.Sum.Errors, rep.Sum.Notes)
	}
	// group_info.json is claimed (read with messages.json), yielding nothing itself
	out, rep = readertest.Run(t, GoogleChatReader{}, info)
	if len(out.Sources) != 0 || rep.Sum.Failures != 0 || rep.Sum.Warnings != 0 {
		t.Errorf("group_info: %d sources, %v %v", len(out.Sources), rep.Sum.Errors, rep.Sum.Notes)
	}
	// a DM without a name is titled by its members; an offset zone is applied
	p = readertest.WriteFile(t, filepath.Join("DM 12345", "messages.json"), `{"messages": [{"creator": {"name": "Ann"}, "created_date": "Friday, January 5, 2024 at 10:00:00 AM GMT+05:30", "text": "hi"}]}`)
	fbWriteFile(t, filepath.Join(filepath.Dir(p), "group_info.json"), `{"members": [{"name": "Ann"}, {"name": "Ben"}]}`)
	out, _ = readertest.Run(t, GoogleChatReader{}, p)
	got = readertest.Messages(t, out)
	readertest.WantMessage(t, got, "googlechat:DM 12345:1704429000000", "Ann", "", 1704429000000, "hi")
	if out.Sources[0].Title != "Ann, Ben (2024-01)" {
		t.Errorf("title %q", out.Sources[0].Title)
	}
}

func fbWriteFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMessengerInstagramOldArray(t *testing.T) {
	p := readertest.WriteFile(t, "messages.json", `[{"participants": ["bob.b", "ana.s"], "conversation": [
	  {"sender": "ana.s", "created_at": "2018-08-14T17:54:01.139743+00:00", "text": "hi there"},
	  {"sender": "bob.b", "created_at": "2018-08-14T17:55:00+00:00", "media_share_url": "https://example.org/p/1"},
	  {"sender": "bob.b", "created_at": "bad", "text": "lost"}]}]`)
	out, rep := readertest.Run(t, MessengerReader{}, p)
	msgs := readertest.Messages(t, out)
	readertest.WantMessage(t, msgs, "instagram:ana.s,bob.b:1534269241139", "ana.s", "", 1534269241139, "hi there")
	readertest.WantMessage(t, msgs, "instagram:ana.s,bob.b:1534269300000", "bob.b", "", 1534269300000, "[shared: https://example.org/p/1]")
	if rep.Sum.Failures != 1 || !readertest.HasNote(rep, true, "conversation 1, message 3") {
		t.Errorf("failures %v", rep.Sum.Errors)
	}
}
