package rpcwire

import (
	"encoding/json"
	"testing"
)

// The id rule both servers apply: 1.0 is the integer 1 (JSON does not tell
// them apart); 1.5, null, booleans, arrays, objects and integers beyond what a
// float64 holds exactly are refused.
func TestCanonicalID(t *testing.T) {
	for raw, want := range map[string]string{`1`: "n:1", `1.0`: "n:1", `1e3`: "n:1000", `-7`: "n:-7", `"a"`: "s:a", `"1"`: "s:1", `9007199254740991`: "n:9007199254740991"} {
		if got, err := CanonicalID(json.RawMessage(raw)); err != nil || got != want {
			t.Errorf("CanonicalID(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{`1.5`, `null`, `true`, `[1]`, `{"a":1}`, `9007199254740992`, `1e300`, ``} {
		if got, err := CanonicalID(json.RawMessage(raw)); err == nil {
			t.Errorf("CanonicalID(%s) = %q, want an error", raw, got)
		}
	}
}
