package audit

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// readAll decodes every line of the log in dir.
func readAll(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var all []map[string]any
	files, _ := filepath.Glob(filepath.Join(dir, FileName+"*"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			all = append(all, m)
		}
		fh.Close()
	}
	return all
}

// tally is the lines written for payer's session and the dropped lines the
// rate_limited lines count.
func tally(all []map[string]any, session string) (written, counted int) {
	for _, m := range all {
		if m["outcome"] == OutcomeRateLimited {
			d, _ := m["details"].(map[string]any)
			n, _ := d["dropped_lines"].(float64)
			counted += int(n)
		} else if m["session"] == session {
			written++
		}
	}
	return written, counted
}

// TestDroppedLinesCountedWhenSessionEnds (issue 39, finding 8): a client over
// its audit budget that leaves before another line of its own is admitted
// still has every refused call counted: EndSession writes the count at once,
// and Close writes any count still held. Before, the count waited for the
// client's next admitted line, which never came (401 calls, no trace).
func TestDroppedLinesCountedWhenSessionEnds(t *testing.T) {
	for _, how := range []string{"EndSession", "Close"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			l := New(Options{Dir: dir, SessionBytesPerHour: 4 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			const calls = 400
			for i := 0; i < calls; i++ {
				l.Record(Entry{Session: "mcp:leaver", Payer: "token:abc", RequestID: "r", Tool: "memory.search", Outcome: OutcomeOK})
			}
			if how == "EndSession" {
				l.EndSession("token:abc", "mcp-http:s1")
				l.EndSession("token:other", "mcp-http:s2") // nothing dropped: no line
			}
			l.Close()
			if l.Dropped() != 0 {
				t.Fatalf("%d lines dropped by the queue; the test needs them all to reach the writer", l.Dropped())
			}
			all := readAll(t, dir)
			written, counted := tally(all, "mcp:leaver")
			if written == calls || written+counted != calls {
				t.Errorf("%d lines written and %d counted as dropped, for %d calls", written, counted, calls)
			}
			notices := 0
			for _, m := range all {
				if m["outcome"] == OutcomeRateLimited {
					notices++
					d, _ := m["details"].(map[string]any)
					if how == "EndSession" && (m["session"] != "mcp-http:s1" || d["written_because"] != "session ended") {
						t.Errorf("notice %v; want it for mcp-http:s1 because the session ended", m)
					}
				}
			}
			if notices != 1 {
				t.Errorf("%d rate_limited lines, want 1", notices)
			}
			t.Logf("%s: %d written, %d counted", how, written, counted)
		})
	}
}
