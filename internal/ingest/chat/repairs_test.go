package chat

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// TestTextReadersTellTheirRepairs: every reader of a text export says what
// decoding repaired (an invalid byte replaced with U+FFFD) as a warning on the
// file, and still keeps the message around it; the LINE, IRC, signalbackup-tools,
// iMessage and Signal readers dropped those notes before.
func TestTextReadersTellTheirRepairs(t *testing.T) {
	const bad = "\xff"
	for _, c := range []struct {
		r          readkit.Reader
		name, text string
		keeps      string // a word of the message holding the bad byte
	}{
		{LineReader{}, "[LINE] Chat with Micah.txt", "[LINE] Chat history with Micah\nSaved on: 2026/01/06 10:00\n\n2026/01/05(Mon)\n10:00\tMicah\tHello" + bad + " there\n", "there"},
		{IRCReader{}, "#golang.log", "--- Log opened Mon Jan 05 10:00:00 2026\n10:01 <@micah> morning" + bad + " all\n", "all"},
		{SignalBackupTxtReader{}, "Micah Stubbs (_id12).txt", "[Jan 05, 2026 10:00:00] <Micah Stubbs> the budget" + bad + " is attached\n", "attached"},
		{IMessageReader{}, "Micah Stubbs.txt", "Jan 05, 2026  9:00:00 AM\nMicah Stubbs\nAre we still on" + bad + " for lunch?\n\n", "lunch"},
		{SignalReader{}, "chat.md", "[2026-01-05 10:00] Micah: hello" + bad + " world\n", "world"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, rep := readertest.Run(t, c.r, readertest.WriteFile(t, c.name, c.text))
			if !readertest.HasNote(rep, false, "invalid UTF-8 byte(s) replaced") {
				t.Errorf("no warning of the replaced byte: %v", rep.Sum.Notes)
			}
			kept := false
			for _, s := range out.Sources {
				for _, m := range s.Messages {
					if strings.Contains(m.Text, c.keeps) && strings.Contains(m.Text, "\ufffd") {
						kept = true
					}
				}
			}
			if !kept {
				t.Errorf("the message with the repaired byte is not kept: %+v", out.Sources)
			}
		})
	}
}
