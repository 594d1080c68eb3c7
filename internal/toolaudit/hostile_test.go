//go:build unix

package toolaudit

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/openhuman/openhuman-core/policy"
)

// TestAuditFileCapsInput (finding 4): a file over the module limit is refused
// from its size, never read (on 3656465 a 60 MB file took the audit over 3 GB),
// and a FIFO is refused without blocking (finding 10).
func TestAuditFileCapsInput(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.wasm")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, policy.MaxModuleBytes+1); err != nil {
		t.Fatal(err)
	}
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	rep, err := AuditFile(huge, Options{})
	goruntime.ReadMemStats(&after)
	if rep == nil || err == nil || rep.ExitCode() == ExitWouldLoad || !strings.Contains(rep.Verdict.Reasons[0], "the limit for a module is 67108864") {
		t.Fatalf("oversized: %+v, %v", rep, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("auditing an oversized file allocated %d bytes", n)
	}
	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFOs: %v", err)
	}
	rep, _ = AuditFile(fifo, Options{})
	if rep == nil || !strings.Contains(rep.Error, "not a regular file (a named pipe (FIFO))") {
		t.Errorf("fifo: %+v", rep)
	}
}
