package mcpserver

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestResultKeyReadsTheHeadOnly checks the fast path of writeFromSDK: a result
// frame's id is read from its head (numbers, strings with escapes), and every
// other frame, and the first initialize answer (whose result is kept), is left to
// the full decode.
func TestResultKeyReadsTheHeadOnly(t *testing.T) {
	c := newStdioConn(nil, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Second)
	c.initKey = "n:1"
	cases := []struct {
		frame string
		key   string
		ok    bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, "n:7", true},
		{`{"jsonrpc":"2.0","id":-3,"result":{}}`, "n:-3", true},
		{`{"jsonrpc":"2.0","id":"a\"b\\","result":{}}`, `s:a"b\`, true},
		{`{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"m"}}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}`, "", false}, // initialize not yet noted
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, "", false},
		{`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`, "", false}, // out of range: full path decides
		{`[{"jsonrpc":"2.0","id":2,"result":{}}]`, "", false},
	}
	for _, tc := range cases {
		key, ok := c.resultKey([]byte(tc.frame))
		if key != tc.key || ok != tc.ok {
			t.Errorf("resultKey(%s) = %q, %v; want %q, %v", tc.frame, key, ok, tc.key, tc.ok)
		}
	}
	c.initResult = []byte(`{}`)
	if key, ok := c.resultKey([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); !ok || key != "n:1" {
		t.Errorf("after the initialize answer is kept, id 1 = %q, %v; want the fast path", key, ok)
	}
}
