package runtime

import "testing"

// TestDecodeResponseReportsCompact checks that a result the runtime scanned is
// marked compact only when it is (the MCP server then writes it without a
// second scan).
func TestDecodeResponseReportsCompact(t *testing.T) {
	for out, want := range map[string]bool{
		`{"result":{"chunks":[{"id":"a b"}]}}`:    true,
		`{"result":{"chunks": [ {"id":"a b"} ]}}`: false,
		`{"result":{"a":"x\ny"}}`:                 true,
	} {
		o, err := decodeResponse("t", []byte(out))
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if o.Compact != want {
			t.Errorf("%s: Compact = %v, want %v", out, o.Compact, want)
		}
	}
}
