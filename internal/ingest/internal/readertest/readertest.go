// Package readertest holds what the ingest packages' tests share to run one
// format reader on its own, outside the pipeline: an Output that keeps what a
// reader emits, Run and ReadForced, fixture writers and checks of the report.
// It is imported by tests only.
package readertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Output is a readkit.Output that keeps what a reader gives it, for tests of one
// reader on its own (the store tests run the whole pipeline into a real store).
type Output struct {
	mu      sync.Mutex
	Sources []memtree.SourceInput
	Mails   []*readkit.MailMessage
	People  []memtree.ContactInput
}

func (c *Output) Source(src memtree.SourceInput) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Sources = append(c.Sources, src)
}

func (c *Output) Mail(m *readkit.MailMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Mails = append(c.Mails, m)
}

// Run hands path (a file or folder) to r as the runner would, with the folder
// holding it as the ingest root, and returns what r emitted and reported. It fails
// the test when r does not detect path.
func Run(t *testing.T, r readkit.Reader, path string) (*Output, *readkit.Report) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var head []byte
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		head = b[:min(len(b), readkit.HeadBytes)]
	}
	if !r.Detect(path, st.IsDir(), head) {
		t.Fatalf("%s reader does not detect %s", r.Kind(), path)
	}
	root := filepath.Dir(path)
	out := &Output{}
	rep := readkit.NewReport(nil)
	r.Read(context.Background(), readkit.Input{Path: path, Root: root, Rel: filepath.ToSlash(filepath.Base(path))}, out, rep)
	return out, rep
}

// WriteFile writes content to name in a fresh temporary folder and returns its path.
func WriteFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ReadForced hands path to r without asking detect (as --kind would).
func ReadForced(ctx context.Context, r readkit.Reader, path string) (*Output, *readkit.Report) {
	out := &Output{}
	rep := readkit.NewReport(nil)
	r.Read(ctx, readkit.Input{Path: path, Root: filepath.Dir(path), Rel: filepath.Base(path), Forced: true}, out, rep)
	return out, rep
}

// Messages returns every emitted message by ref, failing on a repeated ref.
func Messages(t *testing.T, out *Output) map[string]memtree.MessageInput {
	t.Helper()
	m := map[string]memtree.MessageInput{}
	for _, s := range out.Sources {
		if !s.Merge || s.Kind != memtree.KindChat {
			t.Errorf("source %s: Merge %v, Kind %q", s.SourceID, s.Merge, s.Kind)
		}
		for _, msg := range s.Messages {
			if _, dup := m[msg.Ref]; dup {
				t.Errorf("ref %s emitted twice", msg.Ref)
			}
			m[msg.Ref] = msg
		}
	}
	return m
}

// WantMessage checks one message's author, address, time and text.
func WantMessage(t *testing.T, msgs map[string]memtree.MessageInput, ref, author, addr string, ms int64, text string) memtree.MessageInput {
	t.Helper()
	m, ok := msgs[ref]
	if !ok {
		refs := make([]string, 0, len(msgs))
		for r := range msgs {
			refs = append(refs, r)
		}
		t.Fatalf("no message %s; have %v", ref, refs)
	}
	if m.Author != author || m.AuthorAddr != addr || m.TimestampMS != ms || m.Text != text {
		t.Errorf("%s = author %q addr %q ms %d text %q; want %q %q %d %q", ref, m.Author, m.AuthorAddr, m.TimestampMS, m.Text, author, addr, ms, text)
	}
	return m
}

// HasNote reports whether rep holds a failure (fail) or warning whose text has all of subs.
func HasNote(rep *readkit.Report, fail bool, subs ...string) bool {
	list := rep.Sum.Notes
	if fail {
		list = rep.Sum.Errors
	}
next:
	for _, e := range list {
		s := e.Error()
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				continue next
			}
		}
		return true
	}
	return false
}

// TelegramSingleChat is a Telegram Desktop export of one chat (result.json)
// with formatted text, a reply, links, media, a service message and a poll.
const TelegramSingleChat = `{
 "name": "Test Group",
 "type": "private_supergroup",
 "id": 4242,
 "messages": [
  {"id": 1, "type": "message", "date": "2020-01-02T16:04:05", "date_unixtime": "1577977445",
   "from": "Alice", "from_id": "user111", "text": "Hello", "text_entities": [{"type": "plain", "text": "Hello"}]},
  {"id": 2, "type": "message", "date": "2020-01-02T16:05:05", "date_unixtime": "1577977505",
   "from": "Bob", "from_id": "user222", "reply_to_message_id": 1,
   "text": ["See ", {"type": "text_link", "text": "the docs", "href": "https://ex.com/d"}, " and ", {"type": "link", "text": "https://go.dev"}, {"type": "bold", "text": "!"}]},
  {"id": 3, "type": "service", "date": "2020-01-02T16:06:05", "date_unixtime": "1577977565",
   "actor": "Alice", "actor_id": "user111", "action": "pin_message", "message_id": 1, "text": "", "text_entities": []},
  {"id": 4, "type": "message", "date": "2020-01-02T16:07:05", "date_unixtime": "1577977625",
   "from": "Bob", "from_id": "user222", "photo": "photos/photo_1@02-01-2020_16-07-05.jpg", "photo_file_size": 1234, "width": 10, "height": 10, "text": ""},
  {"id": 5, "type": "message", "date_unixtime": "1577977685", "date": "2020-01-02T16:08:05",
   "from": "Alice", "from_id": "user111", "file": "stickers/sticker.webp", "media_type": "sticker", "sticker_emoji": "😀", "text": ""},
  {"id": 6, "type": "message", "date_unixtime": "1577977745", "date": "2020-01-02T16:09:05",
   "from": "Alice", "from_id": "user111", "file": "voice_messages/audio_1.ogg", "media_type": "voice_message", "mime_type": "audio/ogg", "duration_seconds": 3, "text": ""},
  {"id": 7, "type": "message", "date_unixtime": "1577977805", "date": "2020-01-02T16:10:05",
   "from": "Bob", "from_id": "user222", "file": "files/report.pdf", "file_name": "report.pdf", "file_size": 2048, "mime_type": "application/pdf", "text": []},
  {"id": 8, "type": "message", "date_unixtime": "1577977865", "date": "2020-01-02T16:11:05",
   "from": "Bob", "from_id": "user222", "forwarded_from": "Carol", "text": "fwd text"},
  {"id": 9, "type": "message", "date": "2020-01-03T10:00:00",
   "from": "Alice", "from_id": "user111", "text": "old export, no unixtime"},
  {"id": 10, "type": "message", "from": "Alice", "from_id": "user111", "text": "no date at all"},
  {"id": 11, "type": "message", "date_unixtime": "1577977925", "date": "2020-01-02T16:12:05",
   "from": "Bob", "from_id": "user222", "reply_to_message_id": 999, "text": "reply to something older"},
  {"id": 12, "type": "message", "date_unixtime": "1577977985", "date": "2020-01-02T16:13:05",
   "from": "Bob", "from_id": "user222", "photo": "(File not included. Change data exporting settings to download.)", "text": "caption"},
  {"id": 13, "type": "service", "date_unixtime": "1577978045", "date": "2020-01-02T16:14:05",
   "actor": "Alice", "actor_id": "user111", "action": "phone_call", "text": "Call ended"},
  {"id": 14, "type": "message", "date_unixtime": "1577978105", "date": "2020-01-02T16:15:05",
   "from": "Bob", "from_id": "user222", "poll": {"question": "Lunch?", "answers": [{"text": "Yes", "voters": 1}, {"text": "No", "voters": 0}]}, "text": ""}
 ]
}`

// LocalMS is the Unix milliseconds of a wall-clock time in the local zone (the
// zone WhatsApp and other text exports are read in).
func LocalMS(y, mo, d, h, mi, s int) int64 {
	return time.Date(y, time.Month(mo), d, h, mi, s, 0, time.Local).UnixMilli()
}

// EnexExport wraps notes in an export's prologue, DOCTYPE and root.
func EnexExport(notes ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE en-export SYSTEM "http://xml.evernote.com/pub/evernote-export3.dtd">
<en-export export-date="20230101T120000Z" application="Evernote" version="10.0">
` + strings.Join(notes, "\n") + "\n</en-export>\n"
}

// Contacts keeps an address book's people.
func (c *Output) Contacts(_ string, cs []memtree.ContactInput) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.People = append(c.People, cs...)
}

// MailHeader is the header of a test message from from, to Sam Rivera, with its
// subject, date and Message-ID, and any extra header lines.
func MailHeader(from, subject, date, id string, extra ...string) string {
	h := []string{"From: " + from, "To: Sam Rivera <sam@kestrel.example>", "Subject: " + subject, "Date: " + date, "Message-ID: <" + id + ">", "MIME-Version: 1.0"}
	return strings.Join(append(h, extra...), "\n") + "\n"
}

// WriteFiles writes files (slash path → content) under a new temporary folder
// and returns the folder.
func WriteFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const slackUsers = `[{"id":"U1","name":"ana.souza","real_name":"Ana Souza","profile":{"real_name":"Ana Souza","display_name":"ana"}},
	{"id":"U2","name":"sam","real_name":"Sam Rivera","profile":{"real_name":"Sam Rivera"}}]`

// SlackExportDir writes a Slack export (users.json, channels.json [#phoenix] and the
// given files, relative to the export folder) and returns its folder.
func SlackExportDir(t *testing.T, files map[string]string) string {
	t.Helper()
	all := map[string]string{"users.json": slackUsers, "channels.json": `[{"id":"C1","name":"phoenix"}]`}
	for k, v := range files {
		all[k] = v
	}
	for k, v := range all {
		if v == "-" {
			delete(all, k)
		}
	}
	m := map[string]string{}
	for k, v := range all {
		m["export/"+k] = v
	}
	return filepath.Join(WriteFiles(t, m), "export")
}
