package policy

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzParseManifest: the manifest parser never panics, and a manifest it accepts
// holds what the runtime relies on: a known ABI, at least one tool, each with a
// valid unique name, an export, and object schemas that are valid JSON;
// non-negative limits whose effective values stay within the hard caps.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`abi = "openhuman/1"
capabilities = ["memory.read"]
[limits]
timeout_ms = 3000
memory_mib = 4
[[tool]]
name = "t.x"
description = "d"
input_schema = '{"type":"object","properties":{"q":{"type":"string","maxLength":10}},"required":["q"]}'
output_schema = '{"type":"object"}'
[tool.annotations]
readOnlyHint = true
`))
	f.Add([]byte("abi = \"extism/1\"\n[[tool]]\nname = \"a\"\nexport = \"run\"\ndescription = \"x\"\ninput_schema = '{\"type\":\"object\",\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}}}'\noutput_schema = '{\"type\":\"object\"}'\n"))
	f.Add([]byte("abi = \"openhuman/1\"\nnope = 1\n[[tool]]\nname = \"A\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data, "fuzz.toml")
		if err != nil {
			if m != nil {
				t.Fatal("a manifest returned with an error")
			}
			return
		}
		if m.ABI != "openhuman/1" && m.ABI != "extism/1" {
			t.Fatalf("accepted abi %q", m.ABI)
		}
		if len(m.Tools) == 0 {
			t.Fatal("accepted a manifest without tools")
		}
		seen := map[string]bool{}
		for _, tool := range m.Tools {
			if !toolNameRE.MatchString(tool.Name) || seen[tool.Name] || tool.Export == "" {
				t.Fatalf("accepted tool %+v", tool)
			}
			seen[tool.Name] = true
			for _, s := range []json.RawMessage{tool.InputSchema, tool.OutputSchema} {
				if !json.Valid(s) || s[0] != '{' || !utf8.Valid(s) {
					t.Fatalf("accepted schema %q", s)
				}
			}
		}
		l := m.Limits
		if l.TimeoutMS < 0 || l.MemoryMiB < 0 || l.MaxResultBytes < 0 {
			t.Fatalf("accepted negative limits %+v", l)
		}
		e := EffectiveLimits(l, Limits{})
		if e.TimeoutMS <= 0 || e.TimeoutMS > CapTimeoutMS || e.MemoryMiB <= 0 || e.MemoryMiB > CapMemoryMiB || e.MaxResultBytes <= 0 || e.MaxResultBytes > CapMaxResultBytes {
			t.Fatalf("effective limits %+v outside the caps", e)
		}
	})
}

// FuzzParsePolicy: the policy parser never panics, and a policy it accepts has
// defaults within the hard caps, and entries with a 64-hex-digit pin, known
// capabilities, limits within the caps and a non-empty allowed_agents.
func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(`[defaults]
timeout_ms = 5000
memory_mib = 16
max_result_bytes = 4096

[[module]]
file = "a.wasm"
sha256 = "` + "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789" + `"
grant = ["memory.read"]
allowed_agents = ["mcp:claude-desktop"]
timeout_ms = 100
memory_mib = 4

[trust]
keys = ["k"]
require_signature = true
`))
	f.Add([]byte("[[module]]\nsha256 = \"x\"\n[[module]]\ngrant = [\"nope\"]\nmemory_mib = -1\n"))
	f.Add([]byte("[defaults]\ntimeout_ms = 99999999999\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "policy.toml")
		if err != nil {
			return
		}
		d := p.Defaults
		if d.TimeoutMS <= 0 || d.TimeoutMS > CapTimeoutMS || d.MemoryMiB <= 0 || d.MemoryMiB > CapMemoryMiB || d.MaxResultBytes <= 0 || d.MaxResultBytes > CapMaxResultBytes {
			t.Fatalf("accepted defaults %+v", d)
		}
		caps := capabilitySet()
		for _, e := range p.Modules {
			if !isHexDigest(e.SHA256) || len(e.AllowedAgents) == 0 {
				t.Fatalf("accepted entry %+v", e)
			}
			for _, c := range e.Grant {
				if _, ok := caps[c]; !ok {
					t.Fatalf("accepted grant %q", c)
				}
			}
			if e.TimeoutMS < 0 || e.TimeoutMS > CapTimeoutMS || e.MemoryMiB < 0 || e.MemoryMiB > CapMemoryMiB {
				t.Fatalf("accepted entry limits %+v", e)
			}
			l := EffectiveLimits(Limits{}, Limits{TimeoutMS: e.TimeoutMS, MemoryMiB: e.MemoryMiB})
			if l.TimeoutMS <= 0 || l.MemoryMiB <= 0 {
				t.Fatalf("effective limits %+v", l)
			}
		}
	})
}
