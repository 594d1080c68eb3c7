// Package policy decides what a tool module may do: it reads a module's manifest,
// the operator's policy.toml (grants, pins, limits, trust), audits a module's
// imports before instantiation (the static gate) and applies the read gate.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pelletier/go-toml/v2"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ManifestSection is the wasm custom section that carries a module's TOML manifest.
const ManifestSection = "openhuman.manifest"

// Hard caps no manifest or policy can raise.
const (
	CapTimeoutMS      = 60000
	CapMemoryMiB      = 256
	CapMaxResultBytes = 1 << 20
)

// Defaults used when neither the manifest nor the policy says otherwise.
const (
	DefaultTimeoutMS      = 15000
	DefaultMemoryMiB      = 32
	DefaultMaxResultBytes = 1 << 20
)

// MaxManifestBytes bounds the manifest section.
const MaxManifestBytes = 256 << 10

// toolNameRE is the syntax of a tool name.
var toolNameRE = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// Annotations are the MCP annotations a manifest declares for a tool (the runtime
// serves them as runtime.Annotations, an alias of this type).
type Annotations struct {
	ReadOnlyHint    bool  `json:"readOnlyHint"`
	OpenWorldHint   bool  `json:"openWorldHint"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
}

// Limits bound one call (0 = unset); runtime.Limits is an alias of this type.
type Limits struct {
	TimeoutMS      int `json:"timeout_ms"`
	MemoryMiB      int `json:"memory_mib"`
	MaxResultBytes int `json:"max_result_bytes"`
}

// ToolSpec is one [[tool]] of a manifest.
type ToolSpec struct {
	Name         string
	Title        string
	Description  string
	Export       string // function called for extism/1 modules; "oh_call" for openhuman/1
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  Annotations
}

// Manifest is the TOML manifest a module carries in its openhuman.manifest section.
type Manifest struct {
	ABI          string
	Capabilities []string
	Tools        []ToolSpec
	Limits       Limits // requested limits; policy may lower them
}

type rawManifest struct {
	ABI          string    `toml:"abi"`
	Capabilities []string  `toml:"capabilities"`
	Tools        []rawTool `toml:"tool"`
	Limits       rawLimits `toml:"limits"`
}

type rawTool struct {
	Name         string         `toml:"name"`
	Title        string         `toml:"title"`
	Description  string         `toml:"description"`
	Export       string         `toml:"export"`
	InputSchema  string         `toml:"input_schema"`
	OutputSchema string         `toml:"output_schema"`
	Annotations  rawAnnotations `toml:"annotations"`
}

type rawAnnotations struct {
	ReadOnlyHint    bool  `toml:"readOnlyHint"`
	OpenWorldHint   bool  `toml:"openWorldHint"`
	DestructiveHint *bool `toml:"destructiveHint"`
	IdempotentHint  *bool `toml:"idempotentHint"`
}

type rawLimits struct {
	TimeoutMS      int `toml:"timeout_ms"`
	MemoryMiB      int `toml:"memory_mib"`
	MaxResultBytes int `toml:"max_result_bytes"`
}

// decodeTOML decodes strictly (unknown keys are errors) and turns go-toml errors into
// "where:line:col: message (key k)" messages.
func decodeTOML(data []byte, where string, v any) error {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			if k := de.Key(); len(k) > 0 && (strings.Contains(de.Error(), "unknown field") || strings.Contains(de.Error(), "missing table")) {
				return fmt.Errorf("%s:%d: unknown key %s (check the spelling against the documented keys): %w", where, row, strings.Join(k, "."), err)
			}
			msg := fmt.Sprintf("%s:%d:%d: %s", where, row, col, de.Error())
			if k := de.Key(); len(k) > 0 {
				msg += fmt.Sprintf(" (key %s)", strings.Join(k, "."))
			}
			return fmt.Errorf("%s: %w", msg, err)
		}
		var se *toml.StrictMissingError
		if errors.As(err, &se) {
			var parts []string
			for _, e := range se.Errors {
				row, _ := e.Position()
				parts = append(parts, fmt.Sprintf("%s:%d: unknown key %s", where, row, strings.Join(e.Key(), ".")))
			}
			return fmt.Errorf("%s (check the spelling; see the documented keys): %w", strings.Join(parts, "; "), err)
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// ParseManifest parses and validates a TOML manifest. where names its origin in
// errors (a file name, or "module.wasm[openhuman.manifest]").
func ParseManifest(data []byte, where string) (*Manifest, error) {
	return parseManifest(data, where, true)
}

// ParseManifestDeferred is ParseManifest without compiling the tools' JSON
// Schemas: every other check is made, and each schema must still be a JSON object
// with "type":"object" (all that listing a tool needs). It is for a first-party
// manifest embedded in the binary, whose schemas `go generate` compiled when it
// packed the module: compiling the twelve schemas of the memory manifest costs
// ≈ 5 ms of CPU, the largest part of a start before initialize is answered. The
// caller must run CheckSchemas on the result before the module is compiled or
// called, so that a manifest ParseManifest refuses is still refused.
func ParseManifestDeferred(data []byte, where string) (*Manifest, error) {
	return parseManifest(data, where, false)
}

// CheckSchemas compiles the input and output schemas of every tool of m (parsed by
// ParseManifestDeferred) and reports those that do not compile, in ParseManifest's
// words. where names the manifest's origin as it was given to the parse.
func CheckSchemas(m *Manifest, where string) error {
	var problems []string
	for _, t := range m.Tools {
		label := fmt.Sprintf("tool %q", t.Name)
		if err := compileSchema(t.InputSchema); err != nil {
			problems = append(problems, fmt.Sprintf("%s: input_schema: %v", label, err))
		}
		if err := compileSchema(t.OutputSchema); err != nil {
			problems = append(problems, fmt.Sprintf("%s: output_schema: %v", label, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("manifest %s is invalid: %s", where, strings.Join(problems, "; "))
	}
	return nil
}

func parseManifest(data []byte, where string, compile bool) (*Manifest, error) {
	var raw rawManifest
	if err := decodeTOML(data, where, &raw); err != nil {
		return nil, fmt.Errorf("manifest %w", err)
	}
	m := &Manifest{
		ABI:          raw.ABI,
		Capabilities: raw.Capabilities,
		Limits:       Limits(raw.Limits),
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch raw.ABI {
	case abi.Version, abi.ExtismVersion:
	case "":
		bad("abi is missing; set abi = %q (or %q for Extism PDK modules)", abi.Version, abi.ExtismVersion)
	default:
		bad("abi %q is unknown; expected %q or %q", raw.ABI, abi.Version, abi.ExtismVersion)
	}
	seenCap := map[string]bool{}
	for _, c := range raw.Capabilities {
		if _, ok := abi.CapabilityFunctions[c]; !ok {
			bad("capability %q is unknown; known capabilities: %s", c, strings.Join(KnownCapabilities(), ", "))
		}
		if seenCap[c] {
			bad("capability %q is listed twice", c)
		}
		seenCap[c] = true
	}
	if raw.Limits.TimeoutMS < 0 || raw.Limits.MemoryMiB < 0 || raw.Limits.MaxResultBytes < 0 {
		bad("[limits] values must not be negative")
	}
	if len(raw.Tools) == 0 {
		bad("no [[tool]] entries; a module must declare at least one tool")
	}
	seen := map[string]bool{}
	for i, t := range raw.Tools {
		label := fmt.Sprintf("tool #%d", i+1)
		if t.Name != "" {
			label = fmt.Sprintf("tool %q", t.Name)
		}
		if !toolNameRE.MatchString(t.Name) {
			bad("%s: name %q must match %s", label, t.Name, toolNameRE)
		}
		if seen[t.Name] {
			bad("%s: name is used by another tool in this manifest", label)
		}
		seen[t.Name] = true
		if strings.TrimSpace(t.Description) == "" {
			bad("%s: description is empty", label)
		}
		export := t.Export
		switch raw.ABI {
		case abi.ExtismVersion:
			if export == "" {
				bad("%s: export is required for abi %q (the exported function to call)", label, abi.ExtismVersion)
			}
		default:
			if export == "" {
				export = abi.ExportCall
			} else if export != abi.ExportCall {
				bad("%s: export %q is not allowed for abi %q; every tool is served by %s", label, export, abi.Version, abi.ExportCall)
			}
		}
		in, err := checkSchema(t.InputSchema, compile)
		if err != nil {
			bad("%s: input_schema: %v", label, err)
		}
		out, err := checkSchema(t.OutputSchema, compile)
		if err != nil {
			bad("%s: output_schema: %v", label, err)
		}
		m.Tools = append(m.Tools, ToolSpec{
			Name: t.Name, Title: t.Title, Description: t.Description, Export: export,
			InputSchema: in, OutputSchema: out, Annotations: Annotations(t.Annotations),
		})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("manifest %s is invalid: %s", where, strings.Join(problems, "; "))
	}
	return m, nil
}

// checkSchema requires a JSON object with "type":"object" that (if compile is
// set) compiles as a JSON Schema, and returns it compacted.
func checkSchema(s string, compile bool) (json.RawMessage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New(`is missing; give a JSON Schema object such as {"type":"object"}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, fmt.Errorf("is not a JSON object: %w", err)
	}
	var typ string
	if err := json.Unmarshal(obj["type"], &typ); err != nil || typ != "object" {
		return nil, errors.New(`must have "type":"object"`)
	}
	if compile {
		if err := compileSchema([]byte(s)); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, fmt.Errorf("is not valid JSON: %w", err)
	}
	return json.RawMessage(buf.Bytes()), nil
}

// compileSchema reports whether s is a valid JSON Schema that resolves.
func compileSchema(s []byte) error {
	var sch jsonschema.Schema
	if err := json.Unmarshal(s, &sch); err != nil {
		return fmt.Errorf("is not a valid JSON Schema: %w", err)
	}
	if _, err := sch.Resolve(nil); err != nil {
		return fmt.Errorf("does not compile as JSON Schema: %w", err)
	}
	return nil
}

// KnownCapabilities lists the capability names in sorted order.
func KnownCapabilities() []string {
	var out []string
	for c := range abi.CapabilityFunctions {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// ReadManifest reads and validates the manifest in a module's openhuman.manifest
// custom section.
func ReadManifest(module []byte) (*Manifest, error) {
	return ReadManifestNamed(module, "module")
}

// ReadManifestNamed is ReadManifest with the module's name used in errors.
func ReadManifestNamed(module []byte, name string) (*Manifest, error) {
	p, found, err := wasmbin.CustomSection(module, ManifestSection)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", name, err)
	}
	if !found {
		return nil, fmt.Errorf("%s has no %s custom section; pack it with `openhuman-core tools pack %s --manifest tool.toml -o OUT.wasm`", name, ManifestSection, name)
	}
	if len(p) > MaxManifestBytes {
		return nil, fmt.Errorf("%s: manifest of %d bytes exceeds the %d-byte limit", name, len(p), MaxManifestBytes)
	}
	return ParseManifest(p, name+"["+ManifestSection+"]")
}
