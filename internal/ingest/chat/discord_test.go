package chat

import (
	"context"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

const dcFixture = `{
  "guild": {"id": "100", "name": "My Server", "iconUrl": "https://cdn.example/icon.png"},
  "channel": {"id": "200", "type": "GuildTextChat", "categoryId": "3", "category": "Text Channels", "name": "general", "topic": null},
  "dateRange": {"after": null, "before": null},
  "exportedAt": "2024-01-01T00:00:00+00:00",
  "messages": [
    {"id": "1", "type": "Default", "timestamp": "2020-01-01T12:00:00.123+00:00", "timestampEdited": null, "callEndedTimestamp": null, "isPinned": false,
     "content": "Hello all",
     "author": {"id": "10", "name": "alice", "discriminator": "1234", "nickname": "Alice A", "color": null, "isBot": false, "roles": [], "avatarUrl": "u"},
     "attachments": [], "embeds": [], "stickers": [], "reactions": [], "mentions": []},
    {"id": "2", "type": "Reply", "timestamp": "2020-01-01T13:00:01+01:00", "content": "Hi back",
     "author": {"id": "11", "name": "bob", "discriminator": "0000", "nickname": "bob", "isBot": false},
     "attachments": [], "embeds": [], "reference": {"messageId": "1", "channelId": "200", "guildId": "100"}},
    {"id": "3", "type": "Default", "timestamp": "2020-01-01T12:05:00+00:00", "content": "",
     "author": {"id": "11", "name": "bob", "discriminator": "0000", "nickname": null},
     "attachments": [{"id": "a", "url": "https://cdn.discordapp.com/attachments/1/2/pic.png?ex=1", "fileName": "pic.png", "fileSizeBytes": 12345}]},
    {"id": "4", "type": "Default", "timestamp": "2020-01-01T12:06:00+00:00", "content": "check this",
     "author": {"id": "10", "name": "alice", "discriminator": "1234", "nickname": "Alice A"},
     "attachments": [{"url": "https://cdn.discordapp.com/attachments/1/2/notes.txt", "fileSizeBytes": 10}],
     "embeds": [{"title": "Release 1.0", "url": "https://ex.com/r", "description": "Notes here", "fields": [{"name": "Version", "value": "1.0", "isInline": false}, {"name": "", "value": "bare value"}]}]},
    {"id": "5", "type": "Reply", "timestamp": "2020-01-01T12:07:00+00:00", "content": "unknown ref",
     "author": {"id": "12", "name": "carol", "discriminator": "0"}, "reference": {"messageId": "999", "channelId": "200"}},
    {"id": "6", "type": "Default", "timestamp": "not a time", "content": "x", "author": {"id": "12", "name": "carol"}},
    {"id": "7", "type": "Default", "timestamp": "2020-01-01T12:08:00+00:00", "content": "", "author": {"id": "12", "name": "carol"}, "attachments": [], "embeds": []},
    {"id": "8", "type": "ThreadCreated", "timestamp": "2020-02-01T00:00:00+00:00", "content": "Started a thread.", "author": {"id": "12", "name": "carol"}},
    {"id": "9", "type": "Default", "timestamp": "2020-02-01T00:01:00+00:00", "content": "",
     "author": {"id": "12", "name": "carol"}, "embeds": [{"title": "", "description": "only an embed"}]}
  ],
  "messageCount": 9
}`

func TestDiscordExport(t *testing.T) {
	p := readertest.WriteFile(t, "My Server - general [200].json", dcFixture)
	out, rep := readertest.Run(t, DiscordReader{}, p)
	msgs := readertest.Messages(t, out)
	if len(msgs) != 7 {
		t.Errorf("%d messages, want 7", len(msgs))
	}
	readertest.WantMessage(t, msgs, "discord:200:1", "Alice A", "alice#1234", 1577880000123, "Hello all")
	if m := readertest.WantMessage(t, msgs, "discord:200:2", "bob", "bob", 1577880001000, "(reply to Alice A) Hi back"); m.ReplyTo != "discord:200:1" {
		t.Errorf("reply links to %q, want discord:200:1", m.ReplyTo)
	}
	m := readertest.WantMessage(t, msgs, "discord:200:3", "bob", "bob", 1577880300000, "[attachment pic.png]")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "pic.png" || m.Attachments[0].ContentType != "image/png" || m.Attachments[0].Size != 12345 {
		t.Errorf("attachments %+v", m.Attachments)
	}
	m = readertest.WantMessage(t, msgs, "discord:200:4", "Alice A", "alice#1234", 1577880360000, "check this\nRelease 1.0\nNotes here\nVersion: 1.0\nbare value")
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "notes.txt" || m.Attachments[0].Size != 10 {
		t.Errorf("attachments %+v", m.Attachments)
	}
	readertest.WantMessage(t, msgs, "discord:200:5", "carol", "carol", 1577880420000, "unknown ref")
	readertest.WantMessage(t, msgs, "discord:200:8", "carol", "carol", 1580515200000, "Started a thread.")
	readertest.WantMessage(t, msgs, "discord:200:9", "carol", "carol", 1580515260000, "only an embed")
	ids := map[string]string{}
	for _, s := range out.Sources {
		ids[s.SourceID] = s.Title
		if s.Provider != "discord" || s.Origin != p {
			t.Errorf("source %s provider %q origin %q", s.SourceID, s.Provider, s.Origin)
		}
	}
	if len(ids) != 2 || ids["discord:100/200/2020-01"] != "My Server #general (2020-01)" || ids["discord:100/200/2020-02"] != "My Server #general (2020-02)" {
		t.Errorf("sources %v", ids)
	}
	if rep.Sum.Failures != 1 || !readertest.HasNote(rep, true, p, "message id 6", "not a time") {
		t.Errorf("failures %v, want one for message id 6", rep.Sum.Errors)
	}
	if rep.Sum.Warnings != 1 || !readertest.HasNote(rep, false, "1 message(s) with no content") {
		t.Errorf("warnings %v", rep.Sum.Notes)
	}
}

func TestDiscordDetect(t *testing.T) {
	r := DiscordReader{}
	if !r.Detect("x/c.json", false, []byte(dcFixture)) || !r.Detect("x/c.json", false, []byte(dcFixture[:700])) {
		t.Error("DiscordChatExporter file not detected")
	}
	for name, s := range map[string]string{
		"chat batch":     `{"platform":"x","channel_label":"y","messages":[]}`,
		"slack day file": `[{"type":"message","user":"U1","text":"hi","ts":"1.0"}]`,
		"telegram":       readertest.TelegramSingleChat,
		"nested":         `{"export":{"guild":{},"channel":{},"messages":[]}}`,
		"no messages":    `{"guild":{"id":"1"},"channel":{"id":"2"}}`,
	} {
		if r.Detect("x/c.json", false, []byte(s)) {
			t.Errorf("%s: detected", name)
		}
	}
	if (TelegramReader{}).Detect("x/c.json", false, []byte(dcFixture)) {
		t.Error("Telegram reader detects a Discord export")
	}
	if r.Detect("x/c.txt", false, []byte(dcFixture)) {
		t.Error("detected a .txt file")
	}
}

func TestDiscordMalformed(t *testing.T) {
	for name, s := range map[string]string{
		"truncated":       dcFixture[:900],
		"syntax":          `{"guild":{"id":"1"},"channel":{"id":"2"},"messages":[,]}`,
		"messages string": `{"guild":{"id":"1"},"channel":{"id":"2"},"messages":"x"}`,
		"no channel id":   `{"guild":{"id":"1"},"channel":{"name":"c"},"messages":[]}`,
	} {
		p := readertest.WriteFile(t, "c.json", s)
		out, rep := readertest.Run(t, DiscordReader{}, p)
		if rep.Sum.Failures != 1 || len(out.Sources) != 0 {
			t.Errorf("%s: failures %v, %d sources; want one failure", name, rep.Sum.Errors, len(out.Sources))
		}
		if name != "no channel id" && !readertest.HasNote(rep, true, p, "byte ") {
			t.Errorf("%s: failure does not name the byte offset: %v", name, rep.Sum.Errors)
		}
	}
	// odd values cost at most their message
	p := readertest.WriteFile(t, "c.json", `{"guild":null,"channel":{"id":2},"messages":[1,
	  {"id":"a","timestamp":"2020-01-01T00:00:00Z","content":"ok","author":"x","attachments":{},"embeds":[1],"reference":[]}]}`)
	out, rep := readertest.Run(t, DiscordReader{}, p)
	msgs := readertest.Messages(t, out)
	readertest.WantMessage(t, msgs, "discord:2:a", "", "", 1577836800000, "ok")
	if rep.Sum.Failures != 1 || len(out.Sources) != 1 || out.Sources[0].SourceID != "discord:0/2/2020-01" {
		t.Errorf("failures %v sources %d", rep.Sum.Errors, len(out.Sources))
	}
	// every prefix: no panic
	for n := 0; n <= len(dcFixture); n += 11 {
		p := readertest.WriteFile(t, "c.json", dcFixture[:n])
		readertest.ReadForced(context.Background(), DiscordReader{}, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p = readertest.WriteFile(t, "c.json", dcFixture)
	out, rep = readertest.ReadForced(ctx, DiscordReader{}, p)
	if len(out.Sources) != 0 || rep.Sum.Failures != 0 {
		t.Errorf("cancelled: %d sources, failures %v", len(out.Sources), rep.Sum.Errors)
	}
}
