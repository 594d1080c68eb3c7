package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/smallfile"
)

// Policy is the operator's policy.toml: default limits, the third-party modules it
// pins and grants, and the signature trust settings.
type Policy struct {
	// File is the path the policy was read from (kept even when the file is missing,
	// so refusals can say where to add an entry).
	File     string
	Defaults Limits
	Modules  []ModuleEntry
	Trust    Trust
}

// ModuleEntry is one [[module]] of the policy.
type ModuleEntry struct {
	File          string   `toml:"file"`
	SHA256        string   `toml:"sha256"`
	Grant         []string `toml:"grant"`
	AllowedAgents []string `toml:"allowed_agents"`
	TimeoutMS     int      `toml:"timeout_ms"`
	MemoryMiB     int      `toml:"memory_mib"`
	// MaxHostCalls and MaxHostBytes override the per-call host budget
	// (DefaultMaxHostCalls, DefaultMaxHostBytes; 0 = the default).
	MaxHostCalls int   `toml:"max_host_calls"`
	MaxHostBytes int64 `toml:"max_host_bytes"`
	// Line is where the entry starts in the file (0 when unknown).
	Line int `toml:"-"`
}

// Trust is the [trust] table: keys whose signatures are trusted and whether a
// trusted signature is required. Verification lives in internal/signature.
type Trust struct {
	Keys             []string `toml:"keys"`
	RequireSignature bool     `toml:"require_signature"`
}

// Grant is what a module was admitted with.
type Grant struct {
	// Entry is the policy entry that admitted the module (nil for first-party modules).
	Entry         *ModuleEntry
	Capabilities  []string
	AllowedAgents []string
	Limits        Limits // effective limits
	// Budget bounds each call's host functions (DefaultHostBudget unless the
	// policy entry overrides it).
	Budget HostBudget
}

type rawPolicy struct {
	Defaults rawLimits     `toml:"defaults"`
	Modules  []ModuleEntry `toml:"module"`
	Trust    Trust         `toml:"trust"`
}

// Default returns the empty policy: default limits, no third-party grants.
func Default(file string) *Policy {
	return &Policy{File: file, Defaults: Limits{TimeoutMS: DefaultTimeoutMS, MemoryMiB: DefaultMemoryMiB, MaxResultBytes: DefaultMaxResultBytes}}
}

// MaxPolicyBytes bounds a policy file (a few hundred bytes per module).
const MaxPolicyBytes = 4 << 20

// Load reads a policy file. A missing file is the empty policy (defaults, no
// grants); a malformed one is an error naming the file, line and key.
//
// A policy file writable by other users is refused (issue 29, finding 11): the
// policy is what grants capabilities, so whoever can write it can give a
// module of theirs read access to the memory tree. The compilation cache is
// refused on the same rule; the fix is one chmod.
func Load(path string) (*Policy, error) {
	data, err := smallfile.Read(path, MaxPolicyBytes) // a FIFO or /dev/zero neither hangs nor fills memory
	if errors.Is(err, fs.ErrNotExist) {
		return Default(path), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading policy %s: %w", path, err)
	}
	if err := CheckNotWritableByOthers(path, "policy file"); err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse parses policy TOML; file names it in errors and refusals.
func Parse(data []byte, file string) (*Policy, error) {
	var raw rawPolicy
	if err := decodeTOML(data, file, &raw); err != nil {
		return nil, fmt.Errorf("policy %w", err)
	}
	p := Default(file)
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	setLimit := func(key string, v, hardCap int, dst *int) {
		switch {
		case v < 0:
			bad("[defaults] %s = %d must not be negative", key, v)
		case v > hardCap:
			bad("[defaults] %s = %d exceeds the hard cap %d", key, v, hardCap)
		case v > 0:
			*dst = v
		}
	}
	setLimit("timeout_ms", raw.Defaults.TimeoutMS, CapTimeoutMS, &p.Defaults.TimeoutMS)
	setLimit("memory_mib", raw.Defaults.MemoryMiB, CapMemoryMiB, &p.Defaults.MemoryMiB)
	setLimit("max_result_bytes", raw.Defaults.MaxResultBytes, CapMaxResultBytes, &p.Defaults.MaxResultBytes)
	lines := moduleLines(data)
	for i, e := range raw.Modules {
		where := fmt.Sprintf("[[module]] #%d", i+1)
		if i < len(lines) {
			e.Line = lines[i]
			where = fmt.Sprintf("[[module]] at line %d", e.Line)
		}
		e.SHA256 = strings.ToLower(strings.TrimSpace(e.SHA256))
		if !isHexDigest(e.SHA256) {
			bad("%s: sha256 %q must be 64 hex digits (print it with `sha256sum FILE.wasm`)", where, e.SHA256)
		}
		for _, c := range e.Grant {
			if _, ok := capabilitySet()[c]; !ok {
				bad("%s: grant %q is not a capability; known: %s", where, c, strings.Join(KnownCapabilities(), ", "))
			}
		}
		if e.TimeoutMS < 0 || e.TimeoutMS > CapTimeoutMS {
			bad("%s: timeout_ms = %d must be between 0 and %d", where, e.TimeoutMS, CapTimeoutMS)
		}
		if e.MemoryMiB < 0 || e.MemoryMiB > CapMemoryMiB {
			bad("%s: memory_mib = %d must be between 0 and %d", where, e.MemoryMiB, CapMemoryMiB)
		}
		if e.MaxHostCalls < 0 || e.MaxHostCalls > CapMaxHostCalls {
			bad("%s: max_host_calls = %d must be between 0 and %d", where, e.MaxHostCalls, CapMaxHostCalls)
		}
		if e.MaxHostBytes < 0 || e.MaxHostBytes > CapMaxHostBytes {
			bad("%s: max_host_bytes = %d must be between 0 and %d", where, e.MaxHostBytes, CapMaxHostBytes)
		}
		if len(e.AllowedAgents) == 0 {
			e.AllowedAgents = []string{"*"}
		}
		p.Modules = append(p.Modules, e)
	}
	p.Trust = raw.Trust
	if len(problems) > 0 {
		return nil, fmt.Errorf("policy %s is invalid: %s", file, strings.Join(problems, "; "))
	}
	return p, nil
}

// moduleLines finds the line of each [[module]] header (best effort, for messages).
func moduleLines(data []byte) []int {
	var out []int
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "[[module]]") {
			out = append(out, i+1)
		}
	}
	return out
}

func capabilitySet() map[string]struct{} {
	m := map[string]struct{}{}
	for _, c := range KnownCapabilities() {
		m[c] = struct{}{}
	}
	return m
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// EffectiveLimits is min(requested, policy value, hard cap) for each limit, where
// an unset request takes the policy value and an unset policy value the default.
func EffectiveLimits(requested, policyLimits Limits) Limits {
	pick := func(req, pol, def, hardCap int) int {
		v := pol
		if v <= 0 {
			v = def
		}
		if req > 0 && req < v {
			v = req
		}
		return min(v, hardCap)
	}
	return Limits{
		TimeoutMS:      pick(requested.TimeoutMS, policyLimits.TimeoutMS, DefaultTimeoutMS, CapTimeoutMS),
		MemoryMiB:      pick(requested.MemoryMiB, policyLimits.MemoryMiB, DefaultMemoryMiB, CapMemoryMiB),
		MaxResultBytes: pick(requested.MaxResultBytes, policyLimits.MaxResultBytes, DefaultMaxResultBytes, CapMaxResultBytes),
	}
}

// Builtin returns the grant of a first-party module: exactly what its manifest
// asks, with the policy's default limits applied (p may be nil).
func (p *Policy) Builtin(m *Manifest) *Grant {
	if p == nil {
		p = Default("")
	}
	return &Grant{
		Capabilities:  slices.Clone(m.Capabilities),
		AllowedAgents: []string{"*"},
		Limits:        EffectiveLimits(m.Limits, p.Defaults),
		Budget:        DefaultHostBudget(),
	}
}

// Pinned reports whether some [[module]] entry pins sha256: the loader parses
// nothing of a file that is not pinned.
func (p *Policy) Pinned(sha256 string) bool {
	if p == nil {
		return false
	}
	for _, e := range p.Modules {
		if strings.EqualFold(e.SHA256, sha256) {
			return true
		}
	}
	return false
}

// UnpinnedRefusal is the loader's reason for a file no entry pins (it is not
// parsed, so its manifest's capabilities are not known: `tools audit` shows
// them and the entry to add).
func (p *Policy) UnpinnedRefusal(file, sha256 string) string {
	where := "policy.toml"
	if p != nil && p.File != "" {
		where = p.File
	}
	return fmt.Sprintf("refused %s: no policy entry pins sha256 %s, so it was not parsed; review it with `openhuman-core tools audit %s`, which prints the entry to add to %s:\n%s",
		file, sha256, file, where, snippet(file, sha256, nil))
}

// Admit decides whether a third-party module may load. The sha256 is the pin: an
// entry whose sha256 equals the module's digest admits it, whatever the file is
// called now (renaming a file does not change what it is; an entry whose file
// also matches is preferred when several pin the same digest). The entry's grant
// must cover every capability the manifest requests. A refusal says exactly which
// entry would allow the module.
func (p *Policy) Admit(file, sha256 string, m *Manifest) (*Grant, error) {
	if p == nil {
		p = Default("")
	}
	sha256 = strings.ToLower(sha256)
	var entry *ModuleEntry
	for i := range p.Modules {
		e := &p.Modules[i]
		if e.SHA256 != sha256 {
			continue
		}
		if entry == nil || (e.File == file && entry.File != file) {
			entry = e
		}
	}
	where := p.File
	if where == "" {
		where = "policy.toml"
	}
	if entry == nil {
		return nil, fmt.Errorf("refused %s: no policy entry pins sha256 %s; to allow it add to %s:\n%s",
			file, sha256, where, snippet(file, sha256, m.Capabilities))
	}
	var missing []string
	for _, c := range m.Capabilities {
		if !slices.Contains(entry.Grant, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		at := ""
		if entry.Line > 0 {
			at = fmt.Sprintf(" (line %d)", entry.Line)
		}
		need := slices.Clone(entry.Grant)
		for _, c := range missing {
			need = append(need, c)
		}
		return nil, fmt.Errorf("refused %s: the policy entry for sha256 %s%s grants %s but the module requests %s (missing %s); to allow it change that entry in %s to:\n%s",
			file, sha256, at, quoteList(entry.Grant), quoteList(m.Capabilities), quoteList(missing), where, snippet(file, sha256, need))
	}
	// The entry's own limits replace the defaults for this module (still capped).
	pl := p.Defaults
	if entry.TimeoutMS > 0 {
		pl.TimeoutMS = entry.TimeoutMS
	}
	if entry.MemoryMiB > 0 {
		pl.MemoryMiB = entry.MemoryMiB
	}
	budget := DefaultHostBudget()
	if entry.MaxHostCalls > 0 {
		budget.Calls = entry.MaxHostCalls
	}
	if entry.MaxHostBytes > 0 {
		budget.Bytes = entry.MaxHostBytes
	}
	return &Grant{
		Entry:         entry,
		Capabilities:  slices.Clone(m.Capabilities),
		AllowedAgents: slices.Clone(entry.AllowedAgents),
		Limits:        EffectiveLimits(m.Limits, pl),
		Budget:        budget,
	}, nil
}

// snippet renders the [[module]] entry that admits a module.
func snippet(file, sha256 string, grant []string) string {
	return fmt.Sprintf("[[module]]\nfile = %s\nsha256 = %q\ngrant = %s", strconv.Quote(file), sha256, quoteList(grant))
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// AgentAllowed reports whether the provenance label of a caller (e.g. "mcp:claude-desktop",
// "rpc:ci-bot", "mcp") is admitted by an allowed_agents list: "*" admits every caller,
// an entry ending in "*" admits labels with that prefix ("mcp:*"), any other entry
// admits exactly that label (compared case-insensitively; labels are lowercase).
func AgentAllowed(allowed []string, label string) bool {
	label = strings.ToLower(strings.TrimSpace(label))
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		switch {
		case a == "*":
			return true
		case strings.HasSuffix(a, "*"):
			if strings.HasPrefix(label, strings.TrimSuffix(a, "*")) {
				return true
			}
		case a == label:
			return true
		}
	}
	return false
}
