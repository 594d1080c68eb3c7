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

	"github.com/openhuman/openhuman-core/internal/builtin"
	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

// Schema identifies the JSON layout of a Report; it changes only when a field is
// removed or changes meaning (new fields may be added).
const Schema = "openhuman.audit/1"

// Exit codes of `openhuman-core tools audit`.
const (
	// ExitWouldLoad: the module would load under the policy in force.
	ExitWouldLoad = 0
	// ExitRefused: refused by the policy only; it loads once policy.toml pins and
	// grants it (or trusts its signer). Verdict.Fix says what to add.
	ExitRefused = 1
	// ExitInvalid: the file is not a WebAssembly module or cannot be read.
	ExitInvalid = 2
	// ExitNeverLoadable: the module itself must change (a forbidden import, a
	// limit exceeded, no valid manifest, a broken signature); no policy admits it.
	ExitNeverLoadable = 3
)

// Verdict statuses as they appear in the JSON report.
const (
	StatusWouldLoad     = "would_load"
	StatusNeedsPolicy   = "needs_policy"
	StatusNeverLoadable = "never_loadable"
	StatusInvalid       = "invalid"
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
	Egress []Egress `json:"egress,omitempty"`
	// LoadCost is what compiling the module costs beyond its code, against
	// the gate's bound (absent for bytes that are not a module).
	LoadCost  *LoadCost         `json:"load_cost,omitempty"`
	Signature *signature.Status `json:"signature"`
	// Producer is what built the module, when it says or its bytes show it.
	Producer *Producer  `json:"producer,omitempty"`
	Policy   PolicyInfo `json:"policy"`
	Verdict  Verdict    `json:"verdict"`
}

// Producer is the language and toolchain that built a module: from its
// producers custom section (Source "producers_section": the module's own claim,
// which nothing verifies), or, when it has none, guessed from marks its
// compiler leaves in the bytes (Source "inferred", with the Evidence).
type Producer struct {
	Source      string             `json:"source"`
	Language    []wasmbin.Producer `json:"language,omitempty"`
	ProcessedBy []wasmbin.Producer `json:"processed_by,omitempty"`
	SDK         []wasmbin.Producer `json:"sdk,omitempty"`
	Evidence    string             `json:"evidence,omitempty"`
	// Error says why a producers section present did not decode.
	Error string `json:"error,omitempty"`
}

// Producer sources.
const (
	ProducerSection  = "producers_section"
	ProducerInferred = "inferred"
)

// producerOf reads mod's producers section, or infers the toolchain from the
// module's bytes when there is none; nil when neither says anything.
func producerOf(mod *wasmbin.Module, module []byte) *Producer {
	if payload, ok := mod.Custom(wasmbin.ProducersSection); ok {
		p, err := wasmbin.ParseProducers(payload)
		if err != nil {
			return &Producer{Source: ProducerSection, Error: err.Error()}
		}
		return &Producer{Source: ProducerSection, Language: p.Language, ProcessedBy: p.ProcessedBy, SDK: p.SDK}
	}
	if tc, evidence := wasmbin.InferToolchain(module); tc != "" {
		return &Producer{Source: ProducerInferred, Language: []wasmbin.Producer{{Name: tc}}, Evidence: evidence}
	}
	return nil
}

// LoadCost is the work compiling the module does per function and type
// (policy.MaxFunctionsTimesTypes): every start of a server pays it.
type LoadCost struct {
	Functions           int   `json:"functions"`
	Types               int   `json:"types"`
	FunctionTypePairs   int64 `json:"function_type_pairs"`
	MaxFunctionTypePair int64 `json:"max_function_type_pairs"`
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
	// Status is would_load, needs_policy (refused only by the policy: Fix says
	// what to add), never_loadable (the module itself must change) or invalid.
	Status string `json:"status"`
	// Reasons lists every reason for a refusal (empty when it would load): the
	// reasons no policy can lift first. A never-loadable module's reasons carry
	// no policy snippet.
	Reasons []string `json:"reasons"`
	// Fix is the policy.toml change that admits a needs_policy module ("" otherwise).
	Fix string `json:"fix,omitempty"`
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
	case r.Verdict.Status == StatusNeverLoadable:
		return ExitNeverLoadable
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
			Error: fr.Reason, Verdict: Verdict{Status: StatusInvalid, Reasons: []string{"the loader refuses it: " + fr.Reason}}}
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
		r.Verdict.Status = StatusInvalid
		r.Error = err.Error()
		r.Verdict.Reasons = append(r.Verdict.Reasons, "the loader refuses it: "+err.Error())
		return r, fmt.Errorf("audit %s: %w", opts.Name, err)
	}
	mod, err := wasmbin.Parse(module)
	if errors.Is(err, wasmbin.ErrTooManyEntries) {
		// Refused from a section's count, as the loader refuses it: nothing
		// of it is decoded, so auditing it costs no more than loading it.
		r.Valid = true
		r.Verdict.Status = StatusNeverLoadable
		r.Error = err.Error()
		r.Verdict.Reasons = append(r.Verdict.Reasons, "the loader refuses it: "+strings.TrimPrefix(err.Error(), wasmbin.ErrTooManyEntries.Error()+": "))
		return r, nil
	}
	if err != nil {
		r.Verdict.Status = StatusInvalid
		r.Error = err.Error()
		r.Verdict.Reasons = append(r.Verdict.Reasons, "not a WebAssembly module: "+err.Error())
		return r, fmt.Errorf("audit %s: %w", opts.Name, err)
	}
	r.Valid = true
	r.Producer = producerOf(mod, module)
	r.LoadCost = &LoadCost{Functions: len(mod.FuncTypeIndices), Types: len(mod.Types),
		FunctionTypePairs: policy.FunctionsTimesTypes(mod), MaxFunctionTypePair: policy.MaxFunctionsTimesTypes}
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
	// never collects what only a new module can fix; refuse what the policy can.
	var never, byPolicy, fixes []string
	never1 := func(format string, args ...any) { never = append(never, fmt.Sprintf(format, args...)) }
	refuse := func(format string, args ...any) {
		reason, fix := splitFix(fmt.Sprintf(format, args...))
		byPolicy = append(byPolicy, reason)
		if fix != "" {
			fixes = append(fixes, fix)
		}
	}
	defer func() { r.Verdict.decide(never, byPolicy, fixes) }()

	// Signature (verified whatever the policy says, so reviewers always see it).
	st, err := signature.Verify(module, nil)
	if err != nil {
		return r, fmt.Errorf("audit %s: %w", opts.Name, err)
	}
	// The loader parses the keys for every third-party module (signature.Check):
	// a malformed key refuses it whether or not it is signed.
	keys, kerr := signature.ParsePublicKeys(pol.Trust.Keys)
	if kerr != nil && !opts.Builtin {
		refuse("policy %s [trust] keys: %v; correct the key in policy.toml", pol.File, kerr)
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
		never1("%v", err)
		// Still name the imports no grant could ever allow.
		for _, imp := range r.Imports {
			if imp.Class == ClassForbidden {
				never1("static gate: %s.%s %s", imp.Module, imp.Name, imp.Note)
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
			never1("builtin module digest %s does not match the digest pinned at build time (%s); rebuild the binary", r.SHA256, opts.PinnedSHA256)
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
			if st.State == signature.StateInvalid {
				never1("%v", err) // the bytes changed after signing: sign again
			} else {
				refuse("%v", err)
			}
		}
	}
	// The loader's own check (runtime.Host calls the same function): static gate,
	// exports, memory against memory_mib, first-party names.
	if err := policy.CheckLoad(mod, man, grant, reservedNames(opts.Builtin)); err != nil {
		var ge *policy.GateError
		if errors.As(err, &ge) {
			for _, p := range ge.Problems {
				never1("static gate: %s", p)
			}
		} else {
			never1("%v", err)
		}
	}
	if !opts.Builtin && opts.ToolsDir != "" {
		for _, t := range man.Tools {
			if other := servedBefore(opts.ToolsDir, filepath.Base(name), t.Name, pol); other != "" {
				never1("tool name %q is already served by %s; rename the tool in this module's manifest", t.Name, other)
			}
		}
	}
	return r, nil
}

// decide sets the verdict from what only a new module can fix (never), what the
// policy refuses (byPolicy) and the policy changes that would admit it (fixes).
func (v *Verdict) decide(never, byPolicy, fixes []string) {
	if v.Status == StatusInvalid {
		return
	}
	v.Reasons = append(append(v.Reasons, never...), byPolicy...)
	v.WouldLoad = len(v.Reasons) == 0
	switch {
	case v.WouldLoad:
		v.Status = StatusWouldLoad
	case len(never) > 0:
		v.Status = StatusNeverLoadable
	default:
		v.Status = StatusNeedsPolicy
		v.Fix = strings.Join(fixes, "\n\n")
	}
	if !v.WouldLoad {
		v.Grant = nil
	}
}

// splitFix separates a policy refusal ("refused x.wasm: …; to allow it add to
// policy.toml:\n[[module]]…") into its reason and the change that lifts it.
func splitFix(msg string) (reason, fix string) {
	if i := strings.Index(msg, "; to allow it "); i >= 0 {
		return msg[:i], strings.TrimPrefix(msg[i+2:], "to allow it ")
	}
	return msg, ""
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
func reservedNames(firstParty bool) []string {
	if firstParty {
		return nil
	}
	return builtin.Catalogue
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
		if err != nil || policy.CheckLoad(mod, man, g, builtin.Catalogue) != nil {
			continue
		}
		return name
	}
	return ""
}
