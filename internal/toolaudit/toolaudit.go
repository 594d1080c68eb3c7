// Package toolaudit builds the security review of one tool module — digest, ABI,
// manifest, every import classified, every export, signature status and the
// verdict under the policy in force — and renders it as text or stable JSON,
// without ever executing the module.
package toolaudit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/tools-wasm/firstparty"
)

// Schema identifies the JSON layout of a Report; it changes only when a field is
// removed or changes meaning (new fields may be added).
const Schema = "openhuman.audit/1"

// Exit codes of `openhuman-core tools audit`.
const (
	ExitWouldLoad = 0
	ExitRefused   = 1
	ExitInvalid   = 2
)

// Import classes as they appear in the JSON report.
const (
	ClassWASIBasic          = "wasi_basic"
	ClassCapability         = "capability"
	ClassLog                = "log"
	ClassExtismPlumbing     = "extism_plumbing"
	ClassExtismNeverGranted = "extism_never_granted"
	ClassForbidden          = "forbidden"
)

// Origins of a module.
const (
	OriginBuiltin   = "builtin"
	OriginDirectory = "directory"
)

// Options say which module is audited and under which policy.
type Options struct {
	// Name is what the report calls the module (a path as given, or a builtin name).
	// Its base name is the file name policy entries are matched and suggested with.
	Name string
	// Policy is the policy in force; nil means the empty default policy.
	Policy *policy.Policy
	// Builtin marks a first-party module: granted exactly what its manifest asks,
	// and pinned by PinnedSHA256 instead of a policy entry.
	Builtin      bool
	PinnedSHA256 string
	// ToolsDir, when set, is the tools directory the module is (or would be)
	// installed in: a tool name that a module there, loaded before this one (the
	// loader goes by file name), already serves refuses it, as the loader does.
	ToolsDir string
}

// Report is the audit of one module. Its JSON form is documented in sdk/AUTHORING.md.
type Report struct {
	Schema string `json:"schema"`
	File   string `json:"file"`
	Origin string `json:"origin"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	// Valid is false when the bytes are not a WebAssembly module (then only File,
	// Size, SHA256 and Error are set, and the exit code is 2).
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
	ABI   string `json:"abi"`
	// Manifest is the embedded manifest, or nil when missing or invalid (ManifestError says why).
	Manifest      *Manifest `json:"manifest"`
	ManifestError string    `json:"manifest_error,omitempty"`
	Imports       []Import  `json:"imports"`
	Exports       []Export  `json:"exports"`
	// Egress lists the capability imports whose calls can send data beyond
	// the local store (an embedder, SearXNG): absent when there are none.
	Egress    []Egress          `json:"egress,omitempty"`
	Signature *signature.Status `json:"signature"`
	Policy    PolicyInfo        `json:"policy"`
	Verdict   Verdict           `json:"verdict"`
}

// Manifest is the manifest as the report shows it.
type Manifest struct {
	ABI          string        `json:"abi"`
	Capabilities []string      `json:"capabilities"`
	Limits       policy.Limits `json:"limits"` // requested (0 = not requested)
	Tools        []Tool        `json:"tools"`
}

// Tool is one [[tool]] of the manifest.
type Tool struct {
	Name         string             `json:"name"`
	Title        string             `json:"title"`
	Description  string             `json:"description"`
	Export       string             `json:"export"`
	InputSchema  json.RawMessage    `json:"input_schema"`
	OutputSchema json.RawMessage    `json:"output_schema"`
	Annotations  policy.Annotations `json:"annotations"`
}

// Import is one import with its classification.
type Import struct {
	Module string `json:"module"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Type   string `json:"type,omitempty"`
	// Class is one of wasi_basic, capability, log, extism_plumbing,
	// extism_never_granted, forbidden.
	Class      string `json:"class"`
	Capability string `json:"capability,omitempty"`
	// Note explains the class (why it is harmless, refused or forbidden).
	Note string `json:"note"`
}

// Egress is one capability import whose calls can reach outside the machine's
// local store.
type Egress struct {
	Import     string `json:"import"`
	Capability string `json:"capability"`
	Reaches    string `json:"reaches"`
}

// Export is one export.
type Export struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Type string `json:"type,omitempty"`
}

// PolicyInfo says which policy the verdict was computed under.
type PolicyInfo struct {
	File             string `json:"file"` // "" = no policy file (defaults)
	RequireSignature bool   `json:"require_signature"`
	TrustedKeys      int    `json:"trusted_keys"`
}

// Verdict is whether the module would load, and why not.
type Verdict struct {
	WouldLoad bool `json:"would_load"`
	// Reasons lists every reason for a refusal (empty when it would load).
	Reasons []string `json:"reasons"`
	// Grant is what the module would be granted when it loads.
	Grant *Grant `json:"grant,omitempty"`
}

// Grant is the effective grant of a module that would load.
type Grant struct {
	Capabilities  []string      `json:"capabilities"`
	AllowedAgents []string      `json:"allowed_agents"`
	Limits        policy.Limits `json:"limits"`
}

// ExitCode maps the report to the exit status of `tools audit`.
func (r *Report) ExitCode() int {
	switch {
	case !r.Valid:
		return ExitInvalid
	case r.Verdict.WouldLoad:
		return ExitWouldLoad
	}
	return ExitRefused
}

func classOf(c policy.ImportClass) string {
	switch c.Kind {
	case policy.WASIBasic:
		return ClassWASIBasic
	case policy.CapabilityFunc:
		return ClassCapability
	case policy.Log:
		return ClassLog
	case policy.ExtismRuntime:
		return ClassExtismPlumbing
	case policy.ExtismRefused:
		return ClassExtismNeverGranted
	}
	return ClassForbidden
}

func noteOf(c policy.ImportClass) string {
	switch c.Kind {
	case policy.WASIBasic:
		return "harmless: linked with no preopened files, no environment, no arguments"
	case policy.CapabilityFunc:
		return "host function of capability " + c.Capability
	case policy.Log:
		return "always linked: writes to the host's stderr, rate-limited"
	case policy.ExtismRuntime:
		return "Extism kernel plumbing (memory, input/output, logging inside the plugin)"
	}
	return c.Reason
}

// AuditFile reads the module file at path as the loader does
// (policy.ReadModuleFile: a regular file of at most policy.MaxModuleBytes,
// opened so that a FIFO cannot block) and audits it. A file refused before it
// is read gives a report that is not valid (exit code 2) whose error is the
// loader's reason; err is set then, and when the file cannot be read.
func AuditFile(path string, opts Options) (*Report, error) {
	if opts.Name == "" {
		opts.Name = path
	}
	module, _, err := policy.ReadModuleFile(path)
	if err != nil {
		var fr *policy.FileRefusal
		if !errors.As(err, &fr) {
			return nil, err
		}
		r := &Report{Schema: Schema, File: opts.Name, Origin: OriginDirectory, Size: int(fr.Size), Imports: []Import{}, Exports: []Export{},
			Error: fr.Reason, Verdict: Verdict{Reasons: []string{"the loader refuses it: " + fr.Reason}}}
		if pol := opts.Policy; pol != nil {
			r.Policy = PolicyInfo{File: pol.File, RequireSignature: pol.Trust.RequireSignature, TrustedKeys: len(pol.Trust.Keys)}
		}
		return r, err
	}
	return Audit(module, opts)
}

// Audit reviews module. It never executes it. The returned report is always
// usable; err is set (wrapping wasmbin.ErrInvalid) only when module is not a
// WebAssembly module, and then the report's exit code is 2.
func Audit(module []byte, opts Options) (*Report, error) {
	sum := sha256.Sum256(module)
	pol := opts.Policy
	if pol == nil {
		pol = policy.Default("")
	}
	r := &Report{
		Schema:  Schema,
		File:    opts.Name,
		Origin:  OriginDirectory,
		Size:    len(module),
		SHA256:  hex.EncodeToString(sum[:]),
		Imports: []Import{},
		Exports: []Export{},
		Policy:  PolicyInfo{File: pol.File, RequireSignature: pol.Trust.RequireSignature, TrustedKeys: len(pol.Trust.Keys)},
		Verdict: Verdict{Reasons: []string{}},
	}
	if opts.Builtin {
		r.Origin = OriginBuiltin
	}
	if err := policy.CheckModuleSize(int64(len(module))); err != nil {
		// The loader reads no more than this: never parse it.
		r.Error = err.Error()
		r.Verdict.Reasons = append(r.Verdict.Reasons, "the loader refuses it: "+err.Error())
		return r, fmt.Errorf("audit %s: %w", opts.Name, err)
	}
	mod, err := wasmbin.Parse(module)
	if err != nil {
		r.Error = err.Error()
		r.Verdict.Reasons = append(r.Verdict.Reasons, "not a WebAssembly module: "+err.Error())
		return r, fmt.Errorf("audit %s: %w", opts.Name, err)
	}
	r.Valid = true
	for _, imp := range mod.Imports {
		c := policy.Classify(imp)
		ir := Import{Module: imp.Module, Name: imp.Name, Kind: imp.Kind.String(), Class: classOf(c), Capability: c.Capability, Note: noteOf(c)}
		if imp.Kind == wasmbin.KindFunc {
			ir.Type = imp.Type.String()
		}
		r.Imports = append(r.Imports, ir)
		if to, ok := policy.Egress[imp.Name]; ok && c.Kind == policy.CapabilityFunc {
			r.Egress = append(r.Egress, Egress{Import: imp.String(), Capability: c.Capability, Reaches: to})
		}
	}
	for _, e := range mod.Exports {
		er := Export{Name: e.Name, Kind: e.Kind.String()}
		if ft, ok := mod.ExportFuncType(e.Name); ok && e.Kind == wasmbin.KindFunc {
			er.Type = ft.String()
		}
		r.Exports = append(r.Exports, er)
	}
	refuse := func(format string, args ...any) {
		r.Verdict.Reasons = append(r.Verdict.Reasons, fmt.Sprintf(format, args...))
	}

	// Signature (verified whatever the policy says, so reviewers always see it).
	st, err := signature.Verify(module, nil)
	if err != nil {
		return r, fmt.Errorf("audit %s: %w", opts.Name, err)
	}
	// The loader parses the keys for every third-party module (signature.Check):
	// a malformed key refuses it whether or not it is signed.
	keys, kerr := signature.ParsePublicKeys(pol.Trust.Keys)
	if kerr != nil && !opts.Builtin {
		refuse("policy [trust] keys: %v", kerr)
	}
	if st.State == signature.StateValid && kerr == nil {
		st, _ = signature.Verify(module, keys)
	}
	r.Signature = st

	name := opts.Name
	if name == "" {
		name = "module.wasm"
	}
	man, err := policy.ReadManifestNamed(module, filepath.Base(name))
	if err != nil {
		r.ManifestError = err.Error()
		refuse("%v", err)
		// Still name the imports no grant could ever allow.
		for _, imp := range r.Imports {
			if imp.Class == ClassForbidden {
				refuse("static gate: %s.%s %s", imp.Module, imp.Name, imp.Note)
			}
		}
		return r, nil
	}
	r.ABI = man.ABI
	r.Manifest = manifestOf(man)

	var grant *policy.Grant
	if opts.Builtin {
		g := pol.Builtin(man)
		r.Verdict.Grant = grantOf(g)
		grant = g
		if opts.PinnedSHA256 != "" && opts.PinnedSHA256 != r.SHA256 {
			refuse("builtin module digest %s does not match the digest pinned at build time (%s); rebuild the binary", r.SHA256, opts.PinnedSHA256)
		}
	} else {
		g, err := pol.Admit(filepath.Base(name), r.SHA256, man)
		if err != nil {
			refuse("%v", err)
			// Judge the rest against what it asks for, under the default limits.
			grant = &policy.Grant{Capabilities: man.Capabilities, Limits: policy.EffectiveLimits(man.Limits, pol.Defaults)}
		} else {
			r.Verdict.Grant = grantOf(g)
			grant = g
		}
		if err := signature.Admit(st, pol.Trust.RequireSignature); err != nil {
			refuse("%v", err)
		}
	}
	// The loader's own check (runtime.Host calls the same function): static gate,
	// exports, memory against memory_mib, first-party names.
	if err := policy.CheckLoad(mod, man, grant, reservedNames(opts.Builtin)); err != nil {
		var ge *policy.GateError
		if errors.As(err, &ge) {
			for _, p := range ge.Problems {
				refuse("static gate: %s", p)
			}
		} else {
			refuse("%v", err)
		}
	}
	if !opts.Builtin && opts.ToolsDir != "" {
		for _, t := range man.Tools {
			if other := servedBefore(opts.ToolsDir, filepath.Base(name), t.Name, pol); other != "" {
				refuse("tool name %q is already served by %s; rename the tool in this module's manifest", t.Name, other)
			}
		}
	}
	r.Verdict.WouldLoad = len(r.Verdict.Reasons) == 0
	if !r.Verdict.WouldLoad {
		r.Verdict.Grant = nil
	}
	return r, nil
}

func manifestOf(m *policy.Manifest) *Manifest {
	out := &Manifest{ABI: m.ABI, Capabilities: slices.Clone(m.Capabilities), Limits: m.Limits, Tools: []Tool{}}
	if out.Capabilities == nil {
		out.Capabilities = []string{}
	}
	for _, t := range m.Tools {
		out.Tools = append(out.Tools, Tool{
			Name: t.Name, Title: t.Title, Description: t.Description, Export: t.Export,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		})
	}
	return out
}

func grantOf(g *policy.Grant) *Grant {
	out := &Grant{Capabilities: slices.Clone(g.Capabilities), AllowedAgents: slices.Clone(g.AllowedAgents), Limits: g.Limits}
	if out.Capabilities == nil {
		out.Capabilities = []string{}
	}
	if out.AllowedAgents == nil {
		out.AllowedAgents = []string{}
	}
	return out
}

// reservedNames lists the tool names a third-party module may not take: every
// first-party tool name (none for a first-party module).
func reservedNames(builtin bool) []string {
	if builtin {
		return nil
	}
	return firstparty.Catalogue
}

// servedBefore names the module of dir, loaded before file (by name), that
// would load and serves tool; "" when none does. It applies the loader's
// checks to each candidate (pin, manifest, signature, grant, policy.CheckLoad).
func servedBefore(dir, file, tool string, pol *policy.Policy) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".wasm") || name >= file {
			continue // ReadDir sorts by name, as the loader does
		}
		data, sum, err := policy.ReadModuleFile(filepath.Join(dir, name))
		if err != nil || !pol.Pinned(sum) {
			continue
		}
		man, err := policy.ReadManifestNamed(data, name)
		if err != nil || !slices.ContainsFunc(man.Tools, func(t policy.ToolSpec) bool { return t.Name == tool }) {
			continue
		}
		mod, err := wasmbin.Parse(data)
		if err != nil {
			continue
		}
		if _, err := signature.Check(data, pol.Trust.Keys, pol.Trust.RequireSignature); err != nil {
			continue
		}
		g, err := pol.Admit(name, sum, man)
		if err != nil || policy.CheckLoad(mod, man, g, firstparty.Catalogue) != nil {
			continue
		}
		return name
	}
	return ""
}
