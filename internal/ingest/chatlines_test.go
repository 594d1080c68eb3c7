package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

// TestChatLinesInferred reads chat lines in layouts no app reader knows, each
// inferred from the file: pipes between time, author and text; tab columns
// after a date with a month name and AM/PM; "<Name> text" after a bracketed
// date; the time before the date and " - " around the author (the day/month
// order told by a day over 12); the author and time first with the text on the
// lines below. Text over several lines stays one message,
// a stamped line without an author is counted as an event.
func TestChatLinesInferred(t *testing.T) {
	for _, c := range []struct {
		name, file, content string
		want                []appWant
	}{
		{"pipes", "team-chat.txt", "2026-01-05 10:00:00 | Micah Stubbs | the budget is attached\n" +
			"2026-01-05 10:00:30 | *** Dana Ruiz joined\n" +
			"2026-01-05 10:01:00 | Dana Ruiz | thanks\nI will read it tonight\n" +
			"2026-01-05 10:02:00 | Micah Stubbs | see you at the harbour\n",
			[]appWant{{"Micah Stubbs", "the budget is attached", 2026, 1, 5, 10, 0, 0},
				{"Dana Ruiz", "thanks\nI will read it tonight", 2026, 1, 5, 10, 1, 0},
				{"Micah Stubbs", "see you at the harbour", 2026, 1, 5, 10, 2, 0}}},
		{"tabs, month names, AM/PM", "export.txt", "Jan 5, 2026 10:00 AM\tMicah Stubbs\tmorning all\n" +
			"Jan 5, 2026 2:15 PM\tDana Ruiz\tafternoon, Micah\n" +
			"Jan 6, 2026 9:05 AM\tMicah Stubbs\tbudget is final\n",
			[]appWant{{"Micah Stubbs", "morning all", 2026, 1, 5, 10, 0, 0},
				{"Dana Ruiz", "afternoon, Micah", 2026, 1, 5, 14, 15, 0},
				{"Micah Stubbs", "budget is final", 2026, 1, 6, 9, 5, 0}}},
		{"bracketed date, <Name> text", "log.txt", "[05.01.2026 10:00:00] <micah> anyone seen the budget?\n" +
			"[05.01.2026 10:00:10] <@dana> in the drive\n[05.01.2026 10:01:00] <micah> thanks\n",
			[]appWant{{"micah", "anyone seen the budget?", 2026, 1, 5, 10, 0, 0},
				{"dana", "in the drive", 2026, 1, 5, 10, 0, 10},
				{"micah", "thanks", 2026, 1, 5, 10, 1, 0}}},
		{"time first, name between dashes", "old-phone.txt", "10:00, 05/01/2026 - Micah - hello\n" +
			"10:05, 05/01/2026 - Dana - hi Micah\n23:10, 13/01/2026 - Micah - late again\n",
			[]appWant{{"Micah", "hello", 2026, 1, 5, 10, 0, 0},
				{"Dana", "hi Micah", 2026, 1, 5, 10, 5, 0},
				{"Micah", "late again", 2026, 1, 13, 23, 10, 0}}},
		{"name first, text below (Telegram Desktop's copy)", "copied.txt", "Micah Stubbs, [05.01.26 10:00]\nthe budget is attached\n\n" +
			"Dana Ruiz, [05.01.26 10:02]\nthanks\nreading it now\n\nMicah Stubbs, [13.01.26 18:30]\nfinal numbers?\n",
			[]appWant{{"Micah Stubbs", "the budget is attached", 2026, 1, 5, 10, 0, 0},
				{"Dana Ruiz", "thanks\nreading it now", 2026, 1, 5, 10, 2, 0},
				{"Micah Stubbs", "final numbers?", 2026, 1, 13, 18, 30, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := detectedBy(t, readertest.WriteFile(t, c.file, c.content)); r != "chat.ChatLinesReader" {
				t.Fatalf("read by %q", r)
			}
			rep := appCheck(t, chat.ChatLinesReader{}, c.file, c.content, false, c.want)
			if notes := fmt.Sprint(rep.Sum.Notes); !strings.Contains(notes, "inferred") {
				t.Errorf("no note says the layout was inferred: %s", notes)
			}
		})
	}
	p := readertest.WriteFile(t, "team-chat.txt", "2026-01-05 10:00:00 | Micah Stubbs | the budget is attached\n2026-01-05 10:00:30 | *** Dana Ruiz joined\n2026-01-05 10:01:00 | Dana Ruiz | thanks\n2026-01-05 10:02:00 | Micah Stubbs | bye\n")
	_, rep := readertest.Run(t, chat.ChatLinesReader{}, p)
	if notes := fmt.Sprint(rep.Sum.Notes); !strings.Contains(notes, "1 stamped line(s) without an author") {
		t.Errorf("event not counted: %s", notes)
	}
	// Not chats: an application log, dated notes, and layouts app readers own.
	for name, content := range map[string]string{
		"server.log": "2026-01-05 10:00:00 INFO: server started\n2026-01-05 10:00:01 INFO: listening on :8080\n" +
			"2026-01-05 10:00:02 WARN: cache cold\n2026-01-05 10:00:03 ERROR: disk full\n2026-01-05 10:00:04 INFO: retry\n",
		"app.log": "2026-01-05 10:00:00 | INFO Server | started\n2026-01-05 10:00:01 | INFO Server | listening\n" +
			"2026-01-05 10:00:02 | Cache WARN | cold\n2026-01-05 10:00:03 | INFO Server | ready\n",
		"diary.txt": "2026-01-05 10:00 went to the harbour with the team.\n2026-01-06 09:00 budget meeting, long.\n" +
			"2026-01-07 18:00 dinner at home, quiet evening.\n",
		"minutes.txt": "2026-01-05 10:00 - opening remarks - ten minutes\n2026-01-05 10:10 - budget review - Micah presents\n" +
			"2026-01-05 10:40 - venue options - Dana\n",
		"WhatsApp Chat with Micah.txt": "05/01/2026, 10:00 - Micah: hello\n05/01/2026, 10:01 - Dana: hi\n05/01/2026, 10:02 - Micah: bye\n",
		"#go.weechatlog":               "2026-01-05 10:00:00\tmicah\thello\n2026-01-05 10:00:01\tdana\thi\n2026-01-05 10:00:02\t-->\tlee joined\n",
	} {
		if r := detectedBy(t, readertest.WriteFile(t, name, content)); r == "chat.ChatLinesReader" {
			t.Errorf("%s read as chat lines of an inferred layout", name)
		}
	}
}
