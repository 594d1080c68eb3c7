package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

const goodManifest = `
abi = "openhuman/1"
capabilities = ["memory.read"]

[[tool]]
name = "timeline"
title = "Timeline"
description = "Chunks in time order."
input_schema = '''{"type":"object","properties":{"k":{"type":"integer","minimum":1}},"additionalProperties":false}'''
output_schema = '''{"type":"object"}'''
annotations = { readOnlyHint = true, openWorldHint = false }

[limits]
timeout_ms = 10000
memory_mib = 64
`

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest), "tool.toml")
	if err != nil {
		t.Fatal(err)
	}
	if m.ABI != abi.Version || len(m.Tools) != 1 || m.Tools[0].Export != "oh_call" {
		t.Fatalf("manifest = %+v", m)
	}
	if string(m.Tools[0].OutputSchema) != `{"type":"object"}` || !m.Tools[0].Annotations.ReadOnlyHint {
		t.Errorf("tool = %+v", m.Tools[0])
	}
	if m.Limits.TimeoutMS != 10000 || m.Limits.MemoryMiB != 64 {
		t.Errorf("limits = %+v", m.Limits)
	}
}

func TestParseManifestErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"toml syntax", "abi = \"openhuman/1\"\ncapabilities = [\n", "tool.toml:"},
		{"unknown key", goodManifest + "\n[extra]\nx = 1\n", "unknown key extra"},
		{"wrong type", strings.Replace(goodManifest, "timeout_ms = 10000", "timeout_ms = \"soon\"", 1), "tool.toml:"},
		{"abi", strings.Replace(goodManifest, "openhuman/1", "openhuman/9", 1), `abi "openhuman/9" is unknown`},
		{"capability", strings.Replace(goodManifest, `["memory.read"]`, `["memory.write"]`, 1), `capability "memory.write" is unknown`},
		{"name", strings.Replace(goodManifest, `name = "timeline"`, `name = "Time Line"`, 1), `name "Time Line" must match`},
		{"duplicate", goodManifest + strings.SplitN(goodManifest, "[limits]", 2)[0][strings.Index(goodManifest, "[[tool]]"):], "used by another tool"},
		{"schema type", strings.Replace(goodManifest, `'''{"type":"object"}'''`, `'''{"type":"array"}'''`, 1), `output_schema: must have "type":"object"`},
		{"schema json", strings.Replace(goodManifest, `'''{"type":"object"}'''`, `'''{"type":"object",'''`, 1), "output_schema: is not a JSON object"},
		{"schema compile", strings.Replace(goodManifest, `"minimum":1`, `"minimum":"one"`, 1), "input_schema: is not a valid JSON Schema"},
		{"schema ref", strings.Replace(goodManifest, `'''{"type":"object"}'''`, `'''{"type":"object","$ref":"#/$defs/nope"}'''`, 1), "output_schema: does not compile"},
		{"extism export", strings.Replace(goodManifest, "openhuman/1", "extism/1", 1), "export is required"},
		{"export for openhuman", strings.Replace(goodManifest, `title = "Timeline"`, "title = \"T\"\nexport = \"run\"", 1), `export "run" is not allowed`},
	}
	for _, c := range cases {
		_, err := ParseManifest([]byte(c.src), "tool.toml")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not contain %q", c.name, err, c.want)
		}
		// The deferred parse plus CheckSchemas refuses the same manifests with
		// the same reason; only a schema that does not compile gets past the parse.
		m, err := ParseManifestDeferred([]byte(c.src), "tool.toml")
		if err == nil {
			if !strings.HasPrefix(c.name, "schema compile") && c.name != "schema ref" {
				t.Errorf("%s: the deferred parse accepted it", c.name)
			}
			err = CheckSchemas(m, "tool.toml")
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: deferred parse + CheckSchemas = %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestParseManifestDeferredMatches checks that the deferred parse of a good
// manifest gives what ParseManifest gives and that its schemas check clean.
func TestParseManifestDeferredMatches(t *testing.T) {
	full, err := ParseManifest([]byte(goodManifest), "tool.toml")
	if err != nil {
		t.Fatal(err)
	}
	deferred, err := ParseManifestDeferred([]byte(goodManifest), "tool.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(full, deferred) {
		t.Fatalf("deferred parse %+v differs from ParseManifest %+v", deferred, full)
	}
	if err := CheckSchemas(deferred, "tool.toml"); err != nil {
		t.Fatalf("CheckSchemas of a good manifest: %v", err)
	}
}

func TestReadManifest(t *testing.T) {
	var b wasmbin.Builder
	b.Memory(1)
	mod := b.Bytes()
	if _, err := ReadManifestNamed(mod, "x.wasm"); err == nil || !strings.Contains(err.Error(), "tools pack x.wasm") {
		t.Errorf("missing manifest error = %v", err)
	}
	packed, err := wasmbin.SetCustomSection(mod, ManifestSection, []byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(packed)
	if err != nil || m.Tools[0].Name != "timeline" {
		t.Fatalf("ReadManifest = %+v, %v", m, err)
	}
	bad, _ := wasmbin.SetCustomSection(mod, ManifestSection, []byte("abi = 3"))
	if _, err := ReadManifestNamed(bad, "bad.wasm"); err == nil || !strings.Contains(err.Error(), "bad.wasm[openhuman.manifest]") {
		t.Errorf("bad manifest error = %v", err)
	}
}

const sha = "9f2c000000000000000000000000000000000000000000000000000000000001"

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	p, err := Load(filepath.Join(dir, "missing.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Defaults.TimeoutMS != 15000 || p.Defaults.MemoryMiB != 32 || p.Defaults.MaxResultBytes != 1<<20 || len(p.Modules) != 0 {
		t.Errorf("default policy = %+v", p)
	}
	file := filepath.Join(dir, "policy.toml")
	src := `[defaults]
timeout_ms = 5000

[[module]]
file = "timeline.wasm"
sha256 = "` + strings.ToUpper(sha) + `"
grant = ["memory.read"]

[trust]
keys = ["ed25519:AAAA"]
require_signature = true
`
	os.WriteFile(file, []byte(src), 0o600)
	p, err = Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if p.Defaults.TimeoutMS != 5000 || p.Defaults.MemoryMiB != 32 {
		t.Errorf("defaults = %+v", p.Defaults)
	}
	if len(p.Modules) != 1 || p.Modules[0].SHA256 != sha || p.Modules[0].Line != 4 || p.Modules[0].AllowedAgents[0] != "*" {
		t.Errorf("modules = %+v", p.Modules)
	}
	if !p.Trust.RequireSignature || p.Trust.Keys[0] != "ed25519:AAAA" {
		t.Errorf("trust = %+v", p.Trust)
	}

	bads := []struct{ src, want string }{
		{"[defaults]\ntimeout_ms = 90000\n", "exceeds the hard cap 60000"},
		{"[defaults]\nmemory_mib = 512\n", "exceeds the hard cap 256"},
		{"[defaults]\nmax_result_bytes = 2000000\n", "exceeds the hard cap 1048576"},
		{"[[module]]\nfile = \"a.wasm\"\nsha256 = \"abc\"\n", "must be 64 hex digits"},
		{"[[module]]\nsha256 = \"" + sha + "\"\ngrant = [\"fs.write\"]\n", `grant "fs.write" is not a capability`},
		{"[defaults]\ntimeout = 1\n", "policy.toml:2: unknown key defaults.timeout"},
		{"[[module]]\nfile = \"a.wasm\"\ngrant = \"memory.read\"\n", "policy.toml:3"},
	}
	for _, c := range bads {
		os.WriteFile(file, []byte(c.src), 0o600)
		_, err := Load(file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("policy %q: error %v, want %q", c.src, err, c.want)
		}
	}
}

func TestAdmit(t *testing.T) {
	m, err := ParseManifest([]byte(strings.Replace(goodManifest, `["memory.read"]`, `["memory.read", "web.searxng"]`, 1)), "tool.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse([]byte(`[defaults]
memory_mib = 48

[[module]]
file = "timeline.wasm"
sha256 = "`+sha+`"
grant = ["memory.read"]
`), "/home/u/.openhuman/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("ab", 32)
	_, err = p.Admit("timeline.wasm", other, m)
	want := "refused timeline.wasm: no policy entry pins sha256 " + other + "; to allow it add to /home/u/.openhuman/policy.toml:\n[[module]]\nfile = \"timeline.wasm\"\nsha256 = \"" + other + "\"\ngrant = [\"memory.read\", \"web.searxng\"]"
	if err == nil || err.Error() != want {
		t.Errorf("unpinned:\n got %v\nwant %s", err, want)
	}
	_, err = p.Admit("timeline.wasm", sha, m)
	if err == nil || !strings.Contains(err.Error(), "grants [\"memory.read\"] but the module requests [\"memory.read\", \"web.searxng\"] (missing [\"web.searxng\"])") ||
		!strings.Contains(err.Error(), "[[module]]\nfile = \"timeline.wasm\"\nsha256 = \""+sha+"\"\ngrant = [\"memory.read\", \"web.searxng\"]") ||
		!strings.Contains(err.Error(), "(line 4)") {
		t.Errorf("short grant: %v", err)
	}
	m.Capabilities = []string{"memory.read"}
	g, err := p.Admit("renamed.wasm", sha, m)
	if err != nil {
		t.Fatal(err)
	}
	// requested 10000 ms / 64 MiB; policy 15000 ms / 48 MiB -> 10000 / 48.
	if g.Limits.TimeoutMS != 10000 || g.Limits.MemoryMiB != 48 || g.Limits.MaxResultBytes != 1<<20 || g.Entry.File != "timeline.wasm" {
		t.Errorf("grant = %+v", g)
	}
	if got := EffectiveLimits(Limits{TimeoutMS: 999999, MemoryMiB: 999}, Limits{TimeoutMS: 999999, MemoryMiB: 999}); got.TimeoutMS != CapTimeoutMS || got.MemoryMiB != CapMemoryMiB {
		t.Errorf("caps not applied: %+v", got)
	}
	bg := (*Policy)(nil).Builtin(m)
	if bg.Limits.TimeoutMS != 10000 || bg.Limits.MemoryMiB != 32 || bg.Capabilities[0] != "memory.read" {
		t.Errorf("builtin grant = %+v", bg)
	}
}

func fn(module, name string, params []wasmbin.ValType, results ...wasmbin.ValType) (string, string, wasmbin.FuncType) {
	return module, name, wasmbin.FuncType{Params: params, Results: results}
}

func TestGate(t *testing.T) {
	i32, i64 := wasmbin.I32, wasmbin.I64
	var b wasmbin.Builder
	b.ImportFunc(fn("wasi_snapshot_preview1", "fd_write", []wasmbin.ValType{i32, i32, i32, i32}, i32))
	b.ImportFunc(fn("openhuman", "memory_search", []wasmbin.ValType{i32, i32}, i64))
	b.ImportFunc(fn("openhuman", "searxng_search", []wasmbin.ValType{i32, i32}, i64))
	b.ImportFunc(fn("openhuman", "fs_write", []wasmbin.ValType{i32, i32}, i64))
	b.ImportFunc(fn("wasi_snapshot_preview1", "path_open", []wasmbin.ValType{i32, i32, i32, i32, i32, i64, i64, i32, i32}, i32))
	b.ImportFunc(fn("env", "socket", []wasmbin.ValType{i32}, i32))
	b.ImportFunc(fn("openhuman", "log", []wasmbin.ValType{i32, i32, i32}))
	mod, err := wasmbin.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	err = Gate(mod, abi.Version, []string{"memory.read"})
	if err == nil {
		t.Fatal("gate accepted forbidden imports")
	}
	for _, want := range []string{
		"module imports openhuman.searxng_search (capability web.searxng), which is not granted",
		"openhuman.fs_write does not exist",
		"wasi_snapshot_preview1.path_open is not allowed",
		`env.socket is not allowed: module "env" is not linked`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("gate error lacks %q:\n%v", want, err)
		}
	}
	for _, notWant := range []string{"openhuman.memory_search", "wasi_snapshot_preview1.fd_write", "openhuman.log"} {
		if strings.Contains(err.Error(), notWant) {
			t.Errorf("gate error names allowed import %q: %v", notWant, err)
		}
	}
	if n := len(err.(*GateError).Problems); n != 4 {
		t.Errorf("%d problems, want 4", n)
	}

	// Requested vs granted: importing a capability the manifest did not request.
	var ok wasmbin.Builder
	ok.ImportFunc(fn("openhuman", "searxng_search", []wasmbin.ValType{i32, i32}, i64))
	ok.Memory(1)
	ok.Func("oh_alloc", allocFuncType, []byte{0x41, 0})
	ok.Func("oh_call", hostFuncType, []byte{0x42, 0})
	okMod, _ := wasmbin.Parse(ok.Bytes())
	m := &Manifest{ABI: abi.Version, Capabilities: []string{"memory.read"}}
	err = CheckModule(okMod, m, []string{"memory.read", "web.searxng"})
	if err == nil || !strings.Contains(err.Error(), "which its manifest does not request") {
		t.Errorf("unrequested capability: %v", err)
	}
	m.Capabilities = []string{"web.searxng"}
	if err := CheckModule(okMod, m, []string{"web.searxng"}); err != nil {
		t.Errorf("well-formed module refused: %v", err)
	}
	if err := CheckModule(okMod, &Manifest{ABI: abi.ExtismVersion, Capabilities: []string{"web.searxng"}, Tools: []ToolSpec{{Name: "x", Export: "run"}}}, []string{"web.searxng"}); err == nil ||
		!strings.Contains(err.Error(), `module does not export function "run"`) || !strings.Contains(err.Error(), `not available to abi "extism/1"`) {
		t.Errorf("extism checks: %v", err)
	}

	// Wrong signature of a host function is refused.
	var sig wasmbin.Builder
	sig.ImportFunc(fn("openhuman", "memory_search", []wasmbin.ValType{i32}, i32))
	sigMod, _ := wasmbin.Parse(sig.Bytes())
	if err := Gate(sigMod, abi.Version, []string{"memory.read"}); err == nil || !strings.Contains(err.Error(), "has type (i32) -> (i32)") {
		t.Errorf("signature check: %v", err)
	}

	// Extism kernel: plumbing allowed, http_request linked but marked never granted.
	if c := Classify(wasmbin.Import{Module: "extism:host/env", Name: "http_request", Kind: wasmbin.KindFunc}); c.Kind != ExtismRefused {
		t.Errorf("http_request class = %v", c.Kind)
	}
	if c := Classify(wasmbin.Import{Module: "extism:host/env", Name: "alloc", Kind: wasmbin.KindFunc}); c.Kind != ExtismRuntime {
		t.Errorf("alloc class = %v", c.Kind)
	}
	if c := Classify(wasmbin.Import{Module: "env", Name: "memory", Kind: wasmbin.KindMemory}); c.Kind != Forbidden {
		t.Errorf("memory import class = %v", c.Kind)
	}
}

func TestReadGate(t *testing.T) {
	for _, lvl := range []string{"readonly", "supervised", "full", ""} {
		for _, c := range []string{"memory.read", "web.searxng"} {
			if err := ReadGate(lvl, c); err != nil {
				t.Errorf("ReadGate(%q, %q) = %v", lvl, c, err)
			}
		}
	}
	if err := ReadGate("readonly", "memory.write"); err == nil || err.Error() != "Security policy: read-only mode, cannot perform 'memory.write'" {
		t.Errorf("write in readonly: %v", err)
	}
	if err := ReadGate("full", "memory.write"); err == nil {
		t.Error("write allowed at full")
	}
	if err := ReadGate("yolo", "memory.read"); err == nil || !strings.Contains(err.Error(), `"readonly", "supervised" or "full"`) {
		t.Errorf("unknown level: %v", err)
	}
}

func TestAgentAllowed(t *testing.T) {
	for _, c := range []struct {
		allowed []string
		label   string
		want    bool
	}{
		{[]string{"*"}, "mcp:anything", true},
		{[]string{"rpc:only-this-agent"}, "rpc:only-this-agent", true},
		{[]string{"rpc:only-this-agent"}, "mcp:some-other-client", false},
		{[]string{"rpc:only-this-agent"}, "rpc", false},
		{[]string{"rpc:only-this-agent"}, "rpc:only-this-agent-2", false},
		{[]string{"mcp:*"}, "mcp:claude-desktop", true},
		{[]string{"mcp:*"}, "rpc:claude-desktop", false},
		{nil, "mcp", false},
	} {
		if got := AgentAllowed(c.allowed, c.label); got != c.want {
			t.Errorf("AgentAllowed(%q, %q) = %v, want %v", c.allowed, c.label, got, c.want)
		}
	}
}
