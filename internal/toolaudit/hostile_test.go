//go:build unix

package toolaudit

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
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

// TestTextReportEscapesControls (finding 8): an export named with terminal
// control sequences (clear screen, cursor home, a fake "imports (0)" and
// "granted nothing") is printed escaped; the real imports still show. On
// 3656465 the bytes reached the terminal raw.
func TestTextReportEscapesControls(t *testing.T) {
	var b wasmbin.Builder
	i32, i64 := wasmbin.I32, wasmbin.I64
	b.ImportFunc("openhuman", "memory_search", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}})
	b.Memory(1)
	b.Func("oh_alloc", wasmbin.FuncType{Params: []wasmbin.ValType{i32}, Results: []wasmbin.ValType{i32}}, []byte{0x41, 0})
	b.Func("oh_call", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}}, []byte{0x42, 0})
	b.Func("\x1b[2J\x1b[H\u202eimports (0)\n  none\nverdict: WOULD LOAD, granted nothing\r", wasmbin.FuncType{}, nil)
	man := "abi = \"openhuman/1\"\ncapabilities = [\"memory.read\"]\n[[tool]]\nname = \"t\"\ntitle = \"t\"\ndescription = \"d\\u001b[1A\"\ninput_schema = '''{\"type\":\"object\"}'''\noutput_schema = '''{\"type\":\"object\"}'''\nannotations = { readOnlyHint = true, openWorldHint = false }\n"
	mod, err := wasmbin.SetCustomSection(b.Bytes(), policy.ManifestSection, []byte(man))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Audit(mod, Options{Name: "evil.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, c := range []string{"\x1b", "\r", "\u202e"} {
		if strings.Contains(text, c) {
			t.Errorf("text report contains %q raw:\n%s", c, text)
		}
	}
	for _, want := range []string{`\u001b[2J\u001b[H\u202eimports (0)\n  none\nverdict: WOULD LOAD, granted nothing\r`, "imports (1)", "openhuman.memory_search", `d\u001b[1A`} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}
