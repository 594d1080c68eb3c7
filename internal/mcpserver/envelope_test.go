package mcpserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/rpcwire/wiretest"
)

// rawNext returns the next output line as written.
func (ss *session) rawNext() []byte {
	ss.t.Helper()
	ch := make(chan []byte, 1)
	go func() {
		if !ss.out.Scan() {
			ch <- nil
			return
		}
		ch <- append([]byte(nil), ss.out.Bytes()...)
	}()
	select {
	case b := <-ch:
		return b
	case <-time.After(10 * time.Second):
		ss.t.Fatal("no answer within 10 s")
		return nil
	}
}

// The stdio server answers the shared table of malformed messages exactly as
// serve's /rpc does (internal/rpcserver's TestEnvelopeAsMCP sends the same
// table), before and after initialize, and the session survives each.
func TestEnvelopeAsRPC(t *testing.T) {
	s, _, _, _ := newServer(t, newFake())
	ss := openSession(t, s)
	check := func(phase string) {
		for i, c := range wiretest.Malformed {
			ss.send(c.Input)
			if diff := c.Check(ss.rawNext()); diff != "" {
				t.Errorf("%s, %s: %s", phase, c.Name, diff)
			}
			ss.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`, i))
			if p := ss.next(); p["id"] != fmt.Sprintf("ping-%d", i) || p["result"] == nil {
				t.Fatalf("%s, %s: session did not survive; ping answered with %v", phase, c.Name, p)
			}
		}
	}
	check("before initialize")
	ss.send(initLine)
	if m := ss.next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	ss.send(initializedLine)
	check("after initialize")
	// 1.0 is the integer 1 on both servers: an unknown method is refused as
	// such, under the id as sent.
	ss.send(`{"jsonrpc":"2.0","id":1.0,"method":"x/y"}`)
	if m := ss.rawNext(); string(m) != `{"jsonrpc":"2.0","id":1.0,"error":{"code":-32601,"message":"Method not found","data":"method \"x/y\" not found: this server offers only tools and resources (initialize, ping, tools/list, tools/call, resources/list, resources/read, resources/templates/list)"}}` {
		t.Errorf("id 1.0: %s", m)
	}
}
