package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The generated mbox is deterministic, holds n messages and threads replies.
func TestGenMboxDeterministic(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.mbox"), filepath.Join(dir, "b.mbox")
	if _, err := genMbox(a, 200); err != nil {
		t.Fatal(err)
	}
	if _, err := genMbox(b, 200); err != nil {
		t.Fatal(err)
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Fatal("two runs with the same n wrote different mboxes")
	}
	if n := strings.Count(string(da), "\nMessage-ID: "); n != 200 {
		t.Fatalf("%d messages, want 200", n)
	}
	if !strings.Contains(string(da), "\nIn-Reply-To: ") {
		t.Fatal("no replies: threads are not exercised")
	}
}

func TestPercentiles(t *testing.T) {
	var x []time.Duration
	for i := 1; i <= 100; i++ {
		x = append(x, time.Duration(101-i)*time.Millisecond)
	}
	if p := pct(x, 50); p != 50*time.Millisecond {
		t.Fatalf("p50 = %v", p)
	}
	if p := pct(x, 95); p != 95*time.Millisecond {
		t.Fatalf("p95 = %v", p)
	}
	if m := median([]time.Duration{3, 1, 2}); m != 2 {
		t.Fatalf("median = %v", m)
	}
	if ftsExpr(`a "b`) != `"a" """b"` {
		t.Fatalf("ftsExpr = %s", ftsExpr(`a "b`))
	}
}

// The table is written once: each row exactly once, in order, and a second flush
// writes nothing again.
func TestReportWritesEachRowOnce(t *testing.T) {
	var b bytes.Buffer
	rep := &report{w: &b}
	rep.row("figure", "ours")
	rep.row("---", "---")
	for _, f := range []string{"ping p50", "memory.search p50 / p95 (MCP)", "memory.recall p50 / p95 (MCP)", "RSS after 300 mixed calls (one run)", "ingest"} {
		rep.row(f, "1 ms")
	}
	rep.flush()
	rep.flush()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 7:\n%s", len(lines), b.String())
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("row written twice: %s", l)
		}
		seen[l] = true
	}
}
