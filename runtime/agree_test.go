package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestAuditAndLoaderAgreeOnFinding9 is the table of issue 29's finding 9 (and
// the start function of finding 2): for each module `tools audit` (toolaudit,
// reading the file as the loader does, with the tools directory) and the loader
// refuse it with the same reason. On 3656465 the audit said WOULD LOAD for
// every row.
func TestAuditAndLoaderAgreeOnFinding9(t *testing.T) {
	plain := func(name string, raw []byte, caps ...string) []byte {
		return pack(t, raw, manifest(abi.Version, caps, "memory_mib = 4", tool{name: name}))
	}
	files := map[string][]byte{
		"multimem.wasm":  plain("multimem", wasmgen.Uses(wasmgen.MultiMemory)),
		"mem64.wasm":     plain("mem64", wasmgen.Uses(wasmgen.Memory64)),
		"threads.wasm":   plain("threads", wasmgen.Uses(wasmgen.Threads)),
		"tailcall.wasm":  plain("tailcall", wasmgen.Uses(wasmgen.TailCalls)),
		"except.wasm":    plain("except", wasmgen.Uses(wasmgen.Exceptions)),
		"wasitype.wasm":  plain("wasitype", wasmgen.Uses(wasmgen.WASIWrongType)),
		"start.wasm":     plain("start", wasmgen.Nesting(wasmgen.FromStart), abi.CapMemoryRead),
		"a_dup.wasm":     plain("dup.tool", wasmgen.Uses("")),
		"b_dup.wasm":     plain("dup.tool", wasmgen.Uses("")),
		"globals.wasm":   plain("globals", wasmgen.Entries(wasmgen.ShapeGlobals, 10_001)),
		"fine.wasm":      plain("fine", wasmgen.Uses("")),
		"trustkeys.wasm": plain("trustkeys", wasmgen.Uses("")),
	}
	want := map[string]string{
		"multimem.wasm": "the module declares 2 memories; only one is supported",
		"mem64.wasm":    "memory 0 is a 64-bit memory (memory64 is not enabled)",
		"threads.wasm":  "memory 0 is shared (threads are not enabled)",
		"tailcall.wasm": "the code uses tail calls",
		"except.wasm":   "the module uses exception handling",
		"wasitype.wasm": "wasi_snapshot_preview1.fd_write has type (i32) -> (i32); WASI preview 1 defines fd_write as (i32, i32, i32, i32) -> (i32)",
		"start.wasm":    "the start function (function 3) calls capability host function openhuman.memory_search",
		"b_dup.wasm":    `tool name "dup.tool" is already served by a_dup.wasm`,
		"globals.wasm":  "the module declares 10001 globals; the limit is 10000",
		"huge.wasm":     "the limit for a module is 67108864",
		"a_dup.wasm":    "",
		"fine.wasm":     "",
	}
	dir := thirdParty(t, files)
	huge := filepath.Join(dir, "huge.wasm")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, MaxModuleBytes+1); err != nil {
		t.Fatal(err)
	}
	var entries []string
	for name, b := range files {
		if name != "trustkeys.wasm" {
			entries = append(entries, entry(name, b, abi.CapMemoryRead))
		}
	}
	pol := policyFor(t, entries...)
	h, _ := newHost(t, Options{ToolsDir: dir, Policy: pol, CacheDir: "-"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = h.WaitReady(ctx)
	check := func(name, reason string, rep *toolaudit.Report, st ModuleStatus) {
		t.Helper()
		reasons := strings.Join(rep.Verdict.Reasons, "\n")
		if reason == "" {
			if !rep.Verdict.WouldLoad || st.State != StateReady {
				t.Errorf("%s: audit would_load=%v %q, loader %s %q: both should load it", name, rep.Verdict.WouldLoad, reasons, st.State, st.Error)
			}
			return
		}
		if rep.Verdict.WouldLoad || !strings.Contains(reasons, reason) {
			t.Errorf("%s: audit would_load=%v %q\nwant refused: %s", name, rep.Verdict.WouldLoad, reasons, reason)
		}
		if st.State != StateRefused || !strings.Contains(st.Error, reason) {
			t.Errorf("%s: loader %s %q\nwant refused: %s", name, st.State, st.Error, reason)
		}
	}
	for name, reason := range want {
		rep, _ := toolaudit.AuditFile(filepath.Join(dir, name), toolaudit.Options{Name: name, Policy: pol, ToolsDir: dir})
		if rep == nil {
			t.Fatalf("%s: no report", name)
		}
		check(name, reason, rep, statusOf(t, h, name))
	}

	// A malformed [trust] key refuses every third-party module, signed or not.
	bad := policyFor(t, entry("trustkeys.wasm", files["trustkeys.wasm"]), "[trust]\nkeys = [\"ed25519:not-a-key\"]\n")
	h2, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"trustkeys.wasm": files["trustkeys.wasm"]}), Policy: bad, CacheDir: "-"})
	rep, _ := toolaudit.Audit(files["trustkeys.wasm"], toolaudit.Options{Name: "trustkeys.wasm", Policy: bad})
	check("trustkeys.wasm", "trust key 1", rep, statusOf(t, h2, "trustkeys.wasm"))
}
