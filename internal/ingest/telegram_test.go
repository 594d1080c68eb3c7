package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

// TestTelegramMinimalChats: a single chat's export cut to its least — no chat id
// or name, no from_id, date_unixtime or text_entities, messages without ids or
// authors — is still read as Telegram, each message kept.
func TestTelegramMinimalChats(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"a.json": `{"messages":[{"id":1,"type":"message","date":"2020-01-01T10:00:00","from":"Ann","text":"Minimal Message"},` +
			`{"id":2,"type":"message","date":"2020-01-01T10:01:00","from":"Bob","text":["Minimal ",{"type":"bold","text":"Message"}]}]}`,
		"b.json": `{"messages":[{"type":"message","date":"2020-01-01T10:00:00","text":"Minimal Message"}]}`,
		"c.json": `{"name":"X","messages":[{"id":1,"date":"2020-01-01T10:00:00","from":"Ann","text":"Minimal Message"}]}`,
	})
	c, sum := runOn(t, Options{}, dir)
	n := 0
	for _, s := range c.srcs {
		if !strings.HasPrefix(s.SourceID, "telegram:") {
			t.Errorf("read as %s", s.SourceID)
		}
		for _, m := range s.Messages {
			n++
			if m.Text != "Minimal Message" || m.TimestampMS != time.Date(2020, 1, 1, 10, 0, 0, 0, time.Local).UnixMilli() && m.TimestampMS != time.Date(2020, 1, 1, 10, 1, 0, 0, time.Local).UnixMilli() {
				t.Errorf("message %+v", m)
			}
		}
	}
	if n != 4 || sum.Failures != 0 || sum.Skipped != 0 {
		t.Errorf("%d messages, want 4; errors %v, skipped %v", n, sum.Errors, sum.Skips)
	}
}
