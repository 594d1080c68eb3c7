package ingest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// detectedBy names the reader the runner's order gives path to ("" for none).
func detectedBy(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range readers() {
		if r.Detect(p, false, b[:min(len(b), readkit.HeadBytes)]) {
			return fmt.Sprintf("%T", r)
		}
	}
	return ""
}

// TestSignalBackupTxt reads a chat signalbackup-tools wrote with --exporttxt:
// messages with author and local time, a text over several lines, reactions
// after a text (dropped, counted), a file sent (named), a status line
// (counted), a poll with its options, and the conversation from the file name.
func TestSignalBackupTxt(t *testing.T) {
	name, content := "Micah Stubbs (_id12).txt", "[Jan 05, 2026 10:00:00] <Micah Stubbs> the budget is attached\n"+
		"[Jan 05, 2026 10:00:30] *** Missed voice call\n"+
		"[Jan 05, 2026 10:01:00] <Dana Ruiz> thanks, reading it\n"+
		"second line of the reply\n"+
		"[Jan 05, 2026 10:02:00] <Micah Stubbs> see you at the harbour (Dana Ruiz: 👍; Lee Wong: ❤️)\n"+
		"[Jan 05, 2026 10:03:00] *** <Dana Ruiz> sent file \"floorplan.pdf\"\n"+
		"[Jan 05, 2026 10:03:00] <Dana Ruiz> the floor plan (draft 2)\n"+
		"[Feb 01, 2026 09:00:00] <Micah Stubbs> Poll: lunch?\n"+
		"                                                  [1] pizza\n"
	if r := detectedBy(t, readertest.WriteFile(t, name, content)); r != "chat.SignalBackupTxtReader" {
		t.Errorf("read by %s", r)
	}
	rep := appCheck(t, chat.SignalBackupTxtReader{}, name, content, false, []appWant{
		{"Micah Stubbs", "the budget is attached", 2026, 1, 5, 10, 0, 0},
		{"Dana Ruiz", "thanks, reading it\nsecond line of the reply", 2026, 1, 5, 10, 1, 0},
		{"Micah Stubbs", "see you at the harbour", 2026, 1, 5, 10, 2, 0},
		{"Dana Ruiz", "[attachment: floorplan.pdf]", 2026, 1, 5, 10, 3, 0},
		{"Dana Ruiz", "the floor plan (draft 2)", 2026, 1, 5, 10, 3, 0},
		{"Micah Stubbs", "Poll: lunch?\n                                                  [1] pizza", 2026, 2, 1, 9, 0, 0},
	})
	notes := fmt.Sprint(rep.Sum.Notes)
	for _, w := range []string{"1 status line", "reactions after 1 message"} {
		if !strings.Contains(notes, w) {
			t.Errorf("no note %q in %s", w, notes)
		}
	}
	// Other files with bracketed dates are not this export.
	q := readertest.WriteFile(t, "notes.txt", "[Jan 05, 2026] shopping list\nmilk\neggs\n[Jan 06, 2026 10:00:00] <b>bold</b>\n")
	if r := detectedBy(t, q); r == "chat.SignalBackupTxtReader" {
		t.Error("a note with bracketed dates read as a signalbackup-tools chat")
	}
}
