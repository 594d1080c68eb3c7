// Package examples holds third-party example tool modules (Go SDK, Extism PDK, C;
// threads-per-year in Go, C, Rust and AssemblyScript; sdkprobe, the Rust and
// AssemblyScript SDKs' test tools) and deliberately hostile modules, with a
// catalogue of the committed C-built modules so tests can rebuild, audit and
// run them. The Rust and AssemblyScript modules are built from source by the
// tests (internal/guestbuild), never committed.
package examples

import "path/filepath"

// Expected outcomes of a hostile module.
const (
	// RefusedAtAudit: `tools audit` and the loader refuse the module before it runs.
	RefusedAtAudit = "refused at audit/load"
	// ContainedAtRun: the module loads, and the call fails without harming the host.
	ContainedAtRun = "contained at run time"
)

// CModule is one committed module built from C with Debian's clang.
type CModule struct {
	Name     string // file stem, e.g. "path_open"
	Dir      string // relative to the examples directory
	Tool     string // the tool name in its manifest
	Tries    string // what it tries (hostile) or does
	Expected string // RefusedAtAudit, ContainedAtRun, or "" for a well-behaved module
	// Grant is what the example policy entry grants it.
	Grant []string
}

// Source is the C file, relative to the examples directory.
func (m CModule) Source() string { return filepath.Join(m.Dir, m.Name+".c") }

// Manifest is the TOML manifest, relative to the examples directory.
func (m CModule) Manifest() string { return filepath.Join(m.Dir, m.Name+".toml") }

// Wasm is the committed, packed module, relative to the examples directory.
func (m CModule) Wasm() string { return filepath.Join(m.Dir, m.Name+".wasm") }

// CModules lists every committed C-built module.
func CModules() []CModule {
	mr := []string{"memory.read"}
	return []CModule{
		{Name: "hello", Dir: "c-hello", Tool: "c.hello", Tries: "greets and counts sources through sources_list (a well-behaved C tool)", Grant: mr},
		{Name: "path_open", Dir: "hostile", Tool: "hostile.path_open", Tries: "imports WASI path_open to open /etc/passwd", Expected: RefusedAtAudit, Grant: mr},
		{Name: "ungranted", Dir: "hostile", Tool: "hostile.ungranted", Tries: "asks for web.searxng and imports searxng_search; the operator grants only memory.read", Expected: RefusedAtAudit, Grant: mr},
		{Name: "manifest_lie", Dir: "hostile", Tool: "hostile.manifest_lie", Tries: "manifest claims only memory.read while the module imports searxng_search", Expected: RefusedAtAudit, Grant: mr},
		{Name: "infinite_loop", Dir: "hostile", Tool: "hostile.infinite_loop", Tries: "spins forever inside oh_call", Expected: ContainedAtRun, Grant: mr},
		{Name: "alloc_bomb", Dir: "hostile", Tool: "hostile.alloc_bomb", Tries: "grows its memory without bound, then traps when refused", Expected: ContainedAtRun, Grant: mr},
		{Name: "big_result", Dir: "hostile", Tool: "hostile.big_result", Tries: "returns a 10 MB result (the cap is 1 MiB)", Expected: ContainedAtRun, Grant: mr},
		{Name: "extism_http", Dir: "hostile", Tool: "hostile.extism_http", Tries: "an Extism module that sends http_request to 127.0.0.1:7788", Expected: ContainedAtRun, Grant: mr},
	}
}
