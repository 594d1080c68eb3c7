package rpcserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/rpcwire/wiretest"
)

// /rpc answers the shared table of malformed messages exactly as the stdio MCP
// server does (internal/mcpserver's TestEnvelopeAsRPC sends the same table):
// HTTP 200 and the same error object under the same id.
func TestEnvelopeAsMCP(t *testing.T) {
	e := newTestEnv(t, false)
	for _, c := range wiretest.Malformed {
		status, b := post(t, e.http.URL, testToken, c.Input)
		if status != http.StatusOK {
			t.Errorf("%s: HTTP %d %s", c.Name, status, b)
			continue
		}
		if diff := c.Check(b); diff != "" {
			t.Errorf("%s: %s", c.Name, diff)
		}
	}
	e.host.mu.Lock()
	calls := len(e.host.calls)
	e.host.mu.Unlock()
	if calls != 0 {
		t.Errorf("%d malformed messages reached a tool", calls)
	}
	// 1.0 is the integer 1 on both servers: an unknown method is refused as
	// such, under the id as sent.
	_, b := post(t, e.http.URL, testToken, `{"jsonrpc":"2.0","id":1.0,"method":"x/y"}`)
	c := wiretest.Case{ID: "1.0", Code: CodeMethodNotFound, Data: `unknown method "x/y"; methods: ` + strings.Join(methodNames(), ", ")}
	if diff := c.Check(b); diff != "" {
		t.Errorf("id 1.0: %s", diff)
	}
}
