package rpcserver

import (
	"bytes"
	"testing"
)

// /rpc takes the ids the MCP servers take (internal/rpcwire): 1.0 is the
// integer 1 and is answered, echoed as sent; 1.5 is refused on both.
func TestIntegerValuedIDsAsMCP(t *testing.T) {
	e := newTestEnv(t, false)
	for _, id := range []string{`1.0`, `1e3`} {
		status, b := post(t, e.http.URL, testToken, `{"jsonrpc":"2.0","id":`+id+`,"method":"openhuman.nope"}`)
		if status != 200 || !bytes.Contains(b, []byte(`"id":`+id)) || !bytes.Contains(b, []byte(`unknown method`)) {
			t.Errorf("id %s: HTTP %d %s", id, status, b)
		}
	}
	if _, b := post(t, e.http.URL, testToken, `{"jsonrpc":"2.0","id":1.5,"method":"openhuman.nope"}`); !bytes.Contains(b, []byte(`id must be a string or an integer, got 1.5`)) {
		t.Errorf("id 1.5 accepted: %s", b)
	}
}
