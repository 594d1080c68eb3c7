//go:build unix

package runtime

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

func totalAlloc() uint64 {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestUnpinnedNotParsed (finding 4): an unpinned 60 MB file is read and hashed
// once and never parsed: the host allocates less than twice its size while
// loading it (on 3656465 it was parsed three times, ~60 bytes a byte), and the
// refusal says so.
func TestUnpinnedNotParsed(t *testing.T) {
	big := make([]byte, 60<<20)
	copy(big, pack(t, echoModule(t, ""), ""))
	dir := thirdParty(t, map[string][]byte{"big.wasm": big})
	before := totalAlloc()
	h, _ := newHost(t, Options{ToolsDir: dir, Policy: policyFor(t), CacheDir: "-"})
	allocated := totalAlloc() - before
	st := statusOf(t, h, "big.wasm")
	if st.State != StateRefused || !strings.Contains(st.Error, "no policy entry pins sha256") || !strings.Contains(st.Error, "so it was not parsed") {
		t.Errorf("unpinned big file: %s %q", st.State, st.Error)
	}
	if allocated > 2*uint64(len(big)) {
		t.Errorf("loading an unpinned %d MB file allocated %d MB", len(big)>>20, allocated>>20)
	}
	t.Logf("an unpinned %d MiB file: %d MiB allocated while loading", len(big)>>20, allocated>>20)

	// Over the size limit: refused from its size, before reading.
	huge := filepath.Join(dir, "huge.wasm")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, MaxModuleBytes+1); err != nil {
		t.Fatal(err)
	}
	before = totalAlloc()
	h, _ = newHost(t, Options{ToolsDir: dir, Policy: policyFor(t), CacheDir: "-"})
	if allocated := totalAlloc() - before; allocated > 2*uint64(len(big))+8<<20 {
		t.Errorf("a file over the limit was read: %d MB allocated", allocated>>20)
	}
	if st := statusOf(t, h, "huge.wasm"); st.State != StateRefused || !strings.Contains(st.Error, "the limit for a module is 67108864") {
		t.Errorf("oversized file: %s %q", st.State, st.Error)
	}
}

// TestFIFONeverBlocks (finding 10): a FIFO named *.wasm in the tools directory
// is refused as not a regular file; it never blocks the host's start (on
// 3656465 opening it hung `mcp` before initialize).
func TestFIFONeverBlocks(t *testing.T) {
	wasm := echoModule(t, "")
	dir := thirdParty(t, map[string][]byte{"echo.wasm": wasm})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.wasm"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan *Host, 1)
	go func() {
		h, _ := newHost(t, Options{ToolsDir: dir, Policy: policyFor(t, entry("echo.wasm", wasm, abi.CapMemoryRead)), CacheDir: "-"})
		done <- h
	}()
	var h *Host
	select {
	case h = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not start within 30 s with a FIFO in the tools directory")
	}
	st := statusOf(t, h, "fifo.wasm")
	if st.State != StateRefused || !strings.Contains(st.Error, "not a regular file (a named pipe (FIFO))") {
		t.Errorf("fifo: %s %q", st.State, st.Error)
	}
	if _, err := call(t, h, "echo", `{"text":"hi"}`); err != nil {
		t.Errorf("the module beside the FIFO: %v", err)
	}
	_ = h.WaitReady(context.Background())
}

// TestWorldWritableToolsDirRefused (finding 11): no module loads from a tools
// directory others may write, and the log says why.
func TestWorldWritableToolsDirRefused(t *testing.T) {
	wasm := echoModule(t, "")
	dir := thirdParty(t, map[string][]byte{"echo.wasm": wasm})
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	h, logs := newHost(t, Options{ToolsDir: dir, Policy: policyFor(t, entry("echo.wasm", wasm, abi.CapMemoryRead)), CacheDir: "-"})
	if tools := h.Tools(); len(tools) != 0 {
		t.Errorf("tools served from a 0777 directory: %+v", tools)
	}
	if !strings.Contains(logs.String(), "is writable by other users (mode 0777)") {
		t.Errorf("no reason logged:\n%s", logs)
	}
}
