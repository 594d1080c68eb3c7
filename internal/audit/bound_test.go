package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNoClientErasesTheHistory (finding 6): a client whose request ids and
// client name are 1 MB each gets bounded lines (original lengths recorded),
// and once over its session budget its lines are counted, not written: the
// lines of another session written before are still in the log. On 3656465,
// 115 such calls rotated away the default 6 × 16 MiB.
func TestNoClientErasesTheHistory(t *testing.T) {
	dir := t.TempDir()
	l := New(Options{Dir: dir, MaxFileBytes: 64 << 10, MaxFiles: 2, SessionBytesPerHour: 32 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	l.Record(Entry{Session: "mcp:victim", RequestID: "keep-me", Tool: "memory.search", Outcome: OutcomeOK})
	huge := strings.Repeat("x", 1<<20)
	for i := 0; i < 500; i++ {
		l.Record(Entry{Session: "mcp:" + huge, RequestID: huge, Tool: "memory.search", Outcome: OutcomeOK,
			Arguments: map[string]any{"query": huge[:200]}})
	}
	l.Close()

	var all []map[string]any
	files, _ := filepath.Glob(filepath.Join(dir, FileName+"*"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if len(sc.Bytes()) > MaxLineBytes {
				t.Errorf("a line of %d bytes", len(sc.Bytes()))
			}
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			all = append(all, m)
		}
		fh.Close()
	}
	kept, flood := false, 0
	for _, m := range all {
		if m["request_id"] == "keep-me" {
			kept = true
		}
		if s, _ := m["session"].(string); strings.HasPrefix(s, "mcp:xxx") {
			flood++
			tr, _ := m["truncated"].(map[string]any)
			if tr["request_id"] != float64(1<<20) || tr["session"] != float64(1<<20+4) {
				t.Errorf("truncated = %v, want the original lengths", tr)
			}
		}
	}
	if !kept {
		t.Errorf("the victim's line was rotated away by the flood (%d lines left)", len(all))
	}
	if flood == 0 || flood > 100 {
		t.Errorf("%d flood lines written; want some, bounded by the session budget", flood)
	}
	t.Logf("%d lines kept, %d of the flooding session", len(all), flood)
}

// TestRenamingClientSharesItsBudget (finding 6's gap): a client that gives
// every call a new session name but has one payer (the identity the server
// sets: its stdio session or its bearer token) is held to one budget, so it
// cannot rotate away another client's history by renaming itself. Without
// Payer, each new name was a fresh budget.
func TestRenamingClientSharesItsBudget(t *testing.T) {
	for _, c := range []struct {
		payer     string
		wantBound bool
	}{{TokenPayer("secret"), true}, {"", false}} {
		dir := t.TempDir()
		l := New(Options{Dir: dir, MaxFileBytes: 64 << 10, MaxFiles: 2, SessionBytesPerHour: 16 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		l.Record(Entry{Session: "mcp:victim", RequestID: "keep-me", Tool: "memory.search", Outcome: OutcomeOK})
		pad := strings.Repeat("y", 200)
		for i := 0; i < 2000; i++ {
			l.Record(Entry{Session: fmt.Sprintf("rpc:agent-%d", i), Payer: c.payer, RequestID: fmt.Sprintf("%d-%s", i, pad), Tool: "memory.search", Outcome: OutcomeOK})
			if i%500 == 0 {
				time.Sleep(10 * time.Millisecond) // let the writer keep up (Record drops when its buffer is full)
			}
		}
		l.Close()
		data, _ := os.ReadFile(filepath.Join(dir, FileName))
		for _, f := range []string{FileName + ".1", FileName + ".2"} {
			more, _ := os.ReadFile(filepath.Join(dir, f))
			data = append(data, more...)
		}
		kept := strings.Contains(string(data), `"request_id":"keep-me"`)
		written := strings.Count(string(data), `"session":"rpc:agent-`)
		t.Logf("payer %q: %d of 2000 renamed lines written, victim kept: %v", c.payer, written, kept)
		if c.wantBound && (!kept || written > 100) {
			t.Errorf("payer %q: %d renamed lines written, victim kept %v; want one budget for all names", c.payer, written, kept)
		}
		if !c.wantBound && kept {
			t.Errorf("without a payer the renaming flood should have rotated the victim away (the test would prove nothing)")
		}
	}
}
