package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// WASIModule is the import module of WASI preview 1.
const WASIModule = "wasi_snapshot_preview1"

// ExtismKernelModule is the import module of the Extism kernel (runtime plumbing).
const ExtismKernelModule = "extism:host/env"

// WASIBasics are the only WASI preview 1 functions a module may import: what a Go
// guest needs to start, write to stderr, read clocks and randomness. They are
// linked with no preopens, no env and no args, so file calls fail with EBADF; no
// WASI preview 1 call opens a socket.
var WASIBasics = []string{
	"args_get", "args_sizes_get", "environ_get", "environ_sizes_get",
	"clock_time_get", "random_get", "fd_write", "proc_exit", "sched_yield",
	"poll_oneoff", "fd_close", "fd_fdstat_get", "fd_fdstat_set_flags",
	"fd_prestat_get", "fd_prestat_dir_name",
}

// wasiTypes are the signatures of WASIBasics in WASI preview 1 (wazero links
// them with exactly these; a module importing one with another type cannot be
// instantiated).
var wasiTypes = func() map[string]wasmbin.FuncType {
	i32, i64 := wasmbin.I32, wasmbin.I64
	ft := func(params ...wasmbin.ValType) wasmbin.FuncType {
		return wasmbin.FuncType{Params: params, Results: []wasmbin.ValType{i32}}
	}
	return map[string]wasmbin.FuncType{
		"args_get": ft(i32, i32), "args_sizes_get": ft(i32, i32),
		"environ_get": ft(i32, i32), "environ_sizes_get": ft(i32, i32),
		"clock_time_get": ft(i32, i64, i32), "random_get": ft(i32, i32),
		"fd_write": ft(i32, i32, i32, i32), "proc_exit": {Params: []wasmbin.ValType{i32}},
		"sched_yield": ft(), "poll_oneoff": ft(i32, i32, i32, i32), "fd_close": ft(i32),
		"fd_fdstat_get": ft(i32, i32), "fd_fdstat_set_flags": ft(i32, i32),
		"fd_prestat_get": ft(i32, i32), "fd_prestat_dir_name": ft(i32, i32, i32),
	}
}()

// ExtismPlumbing are the Extism kernel functions an extism/1 module may import:
// memory management, input/output, errors, logging, and the plugin's own config
// and variables (config is always empty; variables live inside the plugin
// instance and reach nothing outside it).
var ExtismPlumbing = []string{
	"alloc", "free", "length", "length_unsafe", "load_u8", "load_u64", "store_u8", "store_u64",
	"input_length", "input_load_u8", "input_load_u64", "input_offset", "output_set",
	"error_set", "error_get", "reset", "config_get", "var_get", "var_set",
	"log_trace", "log_debug", "log_info", "log_warn", "log_error", "get_log_level",
}

// ExtismNeverGranted are Extism kernel functions that could reach outside the
// sandbox. They may be linked (the PDKs import them), but every call fails: the
// Extism manifest is built with allowed_hosts empty, so http_request refuses every
// URL, and there is never a response for the status/header functions to read.
var ExtismNeverGranted = []string{"http_request", "http_status_code", "http_headers"}

// Signatures of the host functions.
var (
	hostFuncType   = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I64}}
	logFuncType    = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32, wasmbin.I32}}
	extismFuncType = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I64}, Results: []wasmbin.ValType{wasmbin.I64}}
	allocFuncType  = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
)

// ClassKind is what kind of import something is.
type ClassKind int

// Import classes.
const (
	// Forbidden imports are never linked.
	Forbidden ClassKind = iota
	// WASIBasic is one of WASIBasics.
	WASIBasic
	// CapabilityFunc is a host function of a capability (ImportClass.Capability).
	CapabilityFunc
	// Log is the always-linked log host function.
	Log
	// ExtismRuntime is Extism kernel plumbing (extism/1 only).
	ExtismRuntime
	// ExtismRefused is an Extism kernel function that is linked but refuses every call.
	ExtismRefused
)

func (k ClassKind) String() string {
	switch k {
	case WASIBasic:
		return "WASI basic"
	case CapabilityFunc:
		return "capability"
	case Log:
		return "log"
	case ExtismRuntime:
		return "Extism runtime plumbing"
	case ExtismRefused:
		return "Extism runtime, never granted"
	}
	return "forbidden"
}

// ImportClass is the classification of one import.
type ImportClass struct {
	Kind ClassKind
	// Capability is the capability a CapabilityFunc import belongs to.
	Capability string
	// ABI is the manifest abi this import is meant for ("" = both).
	ABI string
	// Reason explains a Forbidden (or ExtismRefused) classification.
	Reason string
}

// Classify says what an import is, independent of any grant.
func Classify(imp wasmbin.Import) ImportClass {
	if imp.Kind != wasmbin.KindFunc {
		return ImportClass{Kind: Forbidden, Reason: fmt.Sprintf("imports a %s; modules may import functions only and must define their own memory", imp.Kind)}
	}
	switch imp.Module {
	case WASIModule:
		if slices.Contains(WASIBasics, imp.Name) {
			if want := wasiTypes[imp.Name]; !imp.Type.Equal(want) {
				return ImportClass{Kind: Forbidden, Reason: fmt.Sprintf("has type %s; WASI preview 1 defines %s as %s, and instantiating the module would fail", imp.Type, imp.Name, want)}
			}
			return ImportClass{Kind: WASIBasic}
		}
		return ImportClass{Kind: Forbidden, Reason: "is not allowed: only the WASI basics (" + strings.Join(WASIBasics, ", ") + ") are linked; tools have no files, sockets or environment"}
	case abi.HostModule:
		if imp.Name == abi.FnLog {
			if !imp.Type.Equal(logFuncType) {
				return ImportClass{Kind: Forbidden, Reason: fmt.Sprintf("has type %s; log must be %s", imp.Type, logFuncType)}
			}
			return ImportClass{Kind: Log, ABI: abi.Version}
		}
		if c := abi.CapabilityOf(imp.Name); c != "" {
			if !imp.Type.Equal(hostFuncType) {
				return ImportClass{Kind: Forbidden, Capability: c, Reason: fmt.Sprintf("has type %s; host functions are %s", imp.Type, hostFuncType)}
			}
			return ImportClass{Kind: CapabilityFunc, Capability: c, ABI: abi.Version}
		}
		return ImportClass{Kind: Forbidden, Reason: fmt.Sprintf("does not exist: the host module %q has only %s", abi.HostModule, strings.Join(allHostFuncs(), ", "))}
	case abi.ExtismHostModule:
		if c := abi.CapabilityOf(imp.Name); c != "" {
			if !imp.Type.Equal(extismFuncType) {
				return ImportClass{Kind: Forbidden, Capability: c, Reason: fmt.Sprintf("has type %s; Extism host functions are %s", imp.Type, extismFuncType)}
			}
			return ImportClass{Kind: CapabilityFunc, Capability: c, ABI: abi.ExtismVersion}
		}
		return ImportClass{Kind: Forbidden, Reason: fmt.Sprintf("does not exist: %q has only the capability functions %s (log through the PDK)", abi.ExtismHostModule, strings.Join(allCapFuncs(), ", "))}
	case ExtismKernelModule:
		if slices.Contains(ExtismPlumbing, imp.Name) {
			return ImportClass{Kind: ExtismRuntime, ABI: abi.ExtismVersion}
		}
		if slices.Contains(ExtismNeverGranted, imp.Name) {
			return ImportClass{Kind: ExtismRefused, ABI: abi.ExtismVersion, Reason: "is never granted: allowed_hosts is empty, every HTTP request is refused"}
		}
		return ImportClass{Kind: Forbidden, Reason: "is not an Extism kernel function this host links"}
	}
	return ImportClass{Kind: Forbidden, Reason: fmt.Sprintf("is not allowed: module %q is not linked (only %s, %s and the WASI basics exist)", imp.Module, abi.HostModule, abi.ExtismHostModule)}
}

func allCapFuncs() []string {
	var out []string
	for _, c := range KnownCapabilities() {
		out = append(out, abi.CapabilityFunctions[c]...)
	}
	return out
}

func allHostFuncs() []string { return append(allCapFuncs(), abi.FnLog) }

// GateError is a static-gate refusal listing every offending import.
type GateError struct {
	Problems []string
}

func (e *GateError) Error() string {
	return "static gate refused the module: " + strings.Join(e.Problems, "; ")
}

// Gate refuses a module when any import is outside {WASI basics} ∪ {functions of
// the granted capabilities} ∪ {log} (∪ Extism plumbing for extism/1). The error
// names every offending import. It runs before anything is instantiated.
func Gate(mod *wasmbin.Module, abiVersion string, granted []string) error {
	return gate(mod, abiVersion, nil, granted)
}

func gate(mod *wasmbin.Module, abiVersion string, requested, granted []string) error {
	var problems []string
	for _, imp := range mod.Imports {
		cl := Classify(imp)
		switch cl.Kind {
		case Forbidden:
			what := imp.String()
			if cl.Capability != "" {
				what += fmt.Sprintf(" (capability %s)", cl.Capability)
			}
			problems = append(problems, fmt.Sprintf("%s %s", what, cl.Reason))
			continue
		case WASIBasic:
			continue
		}
		if cl.ABI != "" && cl.ABI != abiVersion {
			problems = append(problems, fmt.Sprintf("%s is not available to abi %q modules (it belongs to %q)", imp, abiVersion, cl.ABI))
			continue
		}
		if cl.Kind == CapabilityFunc {
			if requested != nil && !slices.Contains(requested, cl.Capability) {
				problems = append(problems, fmt.Sprintf("module imports %s (capability %s), which its manifest does not request", imp, cl.Capability))
			} else if !slices.Contains(granted, cl.Capability) {
				problems = append(problems, fmt.Sprintf("module imports %s (capability %s), which is not granted", imp, cl.Capability))
			}
		}
	}
	if len(problems) > 0 {
		return &GateError{Problems: problems}
	}
	return nil
}

// CheckModule is the full static check of a packed module against its manifest and
// grant: the manifest's ABI exports exist with the right types, every import is
// allowed (Gate), and no import belongs to a capability the manifest does not
// request even if it would be granted. It executes nothing.
func CheckModule(mod *wasmbin.Module, m *Manifest, granted []string) error {
	var problems []string
	switch m.ABI {
	case abi.Version:
		if e, ok := mod.Export(abi.ExportMemory); !ok || e.Kind != wasmbin.KindMemory {
			problems = append(problems, "module does not export its memory as \"memory\"")
		}
		if ft, ok := mod.ExportFuncType(abi.ExportAlloc); !ok || !ft.Equal(allocFuncType) {
			problems = append(problems, fmt.Sprintf("module must export %s %s", abi.ExportAlloc, allocFuncType))
		}
		if ft, ok := mod.ExportFuncType(abi.ExportCall); !ok || !ft.Equal(hostFuncType) {
			problems = append(problems, fmt.Sprintf("module must export %s %s", abi.ExportCall, hostFuncType))
		}
	case abi.ExtismVersion:
		for _, t := range m.Tools {
			if _, ok := mod.ExportFuncType(t.Export); !ok {
				problems = append(problems, fmt.Sprintf("tool %s: module does not export function %q", t.Name, t.Export))
			}
		}
	}
	err := gate(mod, m.ABI, m.Capabilities, granted)
	if ge, ok := err.(*GateError); ok {
		problems = append(problems, ge.Problems...)
	}
	if len(problems) > 0 {
		return &GateError{Problems: problems}
	}
	return nil
}

// Audit lists every import of a module with its classification, for reviewers
// (`openhuman-core tools audit`).
func Audit(mod *wasmbin.Module) []AuditLine {
	out := make([]AuditLine, 0, len(mod.Imports))
	for _, imp := range mod.Imports {
		out = append(out, AuditLine{Import: imp.String(), Type: imp.Type.String(), Class: Classify(imp)})
	}
	return out
}

// AuditLine is one import as the audit shows it.
type AuditLine struct {
	Import string
	Type   string
	Class  ImportClass
}
