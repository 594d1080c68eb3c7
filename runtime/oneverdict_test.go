package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// minimalModule is a hand-built openhuman/1 module with one memory of pages
// initial pages, packed with a manifest serving toolName.
func minimalModule(t *testing.T, pages uint32, toolName string) []byte {
	t.Helper()
	var b wasmbin.Builder
	i32, i64 := wasmbin.I32, wasmbin.I64
	b.Memory(pages)
	b.Func("oh_alloc", wasmbin.FuncType{Params: []wasmbin.ValType{i32}, Results: []wasmbin.ValType{i32}}, []byte{0x41, 0})
	b.Func("oh_call", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}}, []byte{0x42, 0})
	return pack(t, b.Bytes(), manifest(abi.Version, []string{abi.CapMemoryRead}, "memory_mib = 4", tool{name: toolName}))
}

// One verdict: `tools audit` (toolaudit.Audit) and the loader refuse the same
// modules for the same reason — initial memory above memory_mib, a tool named like
// a first-party tool (memory.search), and searxng_search while SearXNG is
// disabled — and both admit a module that is fine.
func TestAuditAndLoaderAgree(t *testing.T) {
	files := map[string][]byte{
		"bigmem.wasm":  minimalModule(t, 65536, "big.memory"),
		"collide.wasm": minimalModule(t, 1, "memory.search"),
		"websrch.wasm": minimalModule(t, 1, "searxng_search"),
		"fine.wasm":    minimalModule(t, 1, "fine.tool"),
	}
	var entries []string
	for name, b := range files {
		entries = append(entries, entry(name, b, "memory.read"))
	}
	pol := policyFor(t, entries...)
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, files), Policy: pol, SearXNGEnabled: false})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = h.WaitReady(ctx) // fine.wasm's readiness is checked below

	want := map[string]string{
		"bigmem.wasm":  "memory 0 declares 65536 initial pages (4096 MiB) but memory_mib = 4 allows 64 pages",
		"collide.wasm": `tool name "memory.search" is a first-party tool name`,
		"websrch.wasm": `tool name "searxng_search" is a first-party tool name`,
		"fine.wasm":    "",
	}
	served := map[string]bool{}
	for _, tl := range h.Tools() {
		served[tl.Name] = true
	}
	for name, reason := range want {
		rep, err := toolaudit.Audit(files[name], toolaudit.Options{Name: name, Policy: pol})
		if err != nil {
			t.Fatalf("audit %s: %v", name, err)
		}
		st := statusOf(t, h, name)
		if reason == "" {
			if !rep.Verdict.WouldLoad || st.State != StateReady || !served["fine.tool"] {
				t.Errorf("%s: audit would_load=%v %q, loader %s %q: both should load it", name, rep.Verdict.WouldLoad, rep.Verdict.Reasons, st.State, st.Error)
			}
			continue
		}
		if rep.Verdict.WouldLoad || !strings.Contains(strings.Join(rep.Verdict.Reasons, "\n"), reason) {
			t.Errorf("%s: audit says would_load=%v %q, want refused: %s", name, rep.Verdict.WouldLoad, rep.Verdict.Reasons, reason)
		}
		if st.State != StateRefused || !strings.Contains(st.Error, reason) {
			t.Errorf("%s: loader %s %q, want refused: %s", name, st.State, st.Error, reason)
		}
		for _, tl := range st.Tools {
			if served[tl] {
				t.Errorf("%s: refused, yet its tool %s is served", name, tl)
			}
		}
	}
	if served["searxng_search"] || served["memory.search"] || served["big.memory"] {
		t.Errorf("a third-party module serves a first-party name: %v", served)
	}
}
