package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

const packManifest = `abi = "openhuman/1"
capabilities = ["memory.read"]

[[tool]]
name = "timeline"
title = "Timeline"
description = "Chunks in time order."
input_schema = '''{"type":"object"}'''
output_schema = '''{"type":"object"}'''
annotations = { readOnlyHint = true }
`

func packTestModule(imports ...string) []byte {
	i32, i64 := wasmbin.I32, wasmbin.I64
	var b wasmbin.Builder
	for _, name := range imports {
		b.ImportFunc("openhuman", name, wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}})
	}
	b.Memory(1)
	b.Func("oh_alloc", wasmbin.FuncType{Params: []wasmbin.ValType{i32}, Results: []wasmbin.ValType{i32}}, []byte{0x41, 0})
	b.Func("oh_call", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}}, []byte{0x42, 0})
	return b.Bytes()
}

func TestToolsPack(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "timeline.wasm")
	man := filepath.Join(dir, "tool.toml")
	out := filepath.Join(dir, "out.wasm")
	os.WriteFile(in, packTestModule("memory_search"), 0o644)
	os.WriteFile(man, []byte(packManifest), 0o644)

	var stdout, stderr bytes.Buffer
	if err := runPack(&stdout, &stderr, in, packFlags{manifest: man, out: out}); err != nil {
		t.Fatal(err)
	}
	packed, _ := os.ReadFile(out)
	sum := sha256.Sum256(packed)
	if got := stdout.String(); got != hex.EncodeToString(sum[:])+"  "+out+"\n" {
		t.Errorf("stdout = %q", got)
	}
	m, err := policy.ReadManifest(packed)
	if err != nil || m.Tools[0].Name != "timeline" {
		t.Fatalf("manifest = %+v %v", m, err)
	}

	// Re-packing in place with another manifest replaces it (one section only).
	man2 := filepath.Join(dir, "tool2.toml")
	os.WriteFile(man2, []byte(strings.Replace(packManifest, `"timeline"`, `"timeline2"`, 1)), 0o644)
	stdout.Reset()
	if err := runPack(&stdout, &stderr, out, packFlags{manifest: man2, out: out}); err != nil {
		t.Fatal(err)
	}
	packed, _ = os.ReadFile(out)
	parsed, _ := wasmbin.Parse(packed)
	n := 0
	for _, cs := range parsed.CustomSections {
		if cs.Name == policy.ManifestSection {
			n++
		}
	}
	if m, _ := policy.ReadManifest(packed); n != 1 || m.Tools[0].Name != "timeline2" {
		t.Errorf("%d manifest sections; tool %+v", n, m)
	}

	// Imports inconsistent with the manifest's capabilities.
	os.WriteFile(in, packTestModule("searxng_search"), 0o644)
	err = runPack(&stdout, &stderr, in, packFlags{manifest: man, out: filepath.Join(dir, "bad.wasm")})
	if err == nil || !strings.Contains(err.Error(), "openhuman.searxng_search (capability web.searxng), which its manifest does not request") {
		t.Errorf("inconsistent imports: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.wasm")); err == nil {
		t.Error("output written despite the refusal")
	}
	// Invalid manifest and invalid module.
	os.WriteFile(man2, []byte(strings.Replace(packManifest, `"type":"object"}'''
annotations`, `"type":"array"}'''
annotations`, 1)), 0o644)
	os.WriteFile(in, packTestModule("memory_search"), 0o644)
	if err := runPack(&stdout, &stderr, in, packFlags{manifest: man2, out: out}); err == nil || !strings.Contains(err.Error(), `output_schema: must have "type":"object"`) {
		t.Errorf("bad manifest: %v", err)
	}
	if err := runPack(&stdout, &stderr, man, packFlags{manifest: man, out: out}); err == nil || !strings.Contains(err.Error(), "not a valid WebAssembly module") {
		t.Errorf("bad module: %v", err)
	}
}
