package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/runtime"
)

// readThenFail is a dispatcher whose calls read through two host calls, had a
// third refused, and then failed in their module.
type readThenFail struct{ *fakeDispatcher }

func (d readThenFail) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	return nil, &runtime.CallFailure{ModuleSHA256: "sha-" + c.Tool, Err: errors.New("tool " + c.Tool + " failed in its sandbox: wasm error: unreachable"),
		Usage: runtime.Usage{HostCalls: map[string]int{"memory_search": 2}, BytesIn: 900, BytesOut: 40, Refused: map[string]int{"memory_search": 1}}}
}

// TestFailedCallReadsAudited (finding 7): the audit line of a call that failed
// after reading carries its host calls, bytes and refused calls (on 3656465 it
// said host_calls {}, though the data could reach the client).
func TestFailedCallReadsAudited(t *testing.T) {
	f := newFake()
	s, al, auditPath, _ := newServer(t, f, func(o *Options) { o.Dispatcher = readThenFail{f} })
	cs := connectClient(t, s, "cursor", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "q"}})
	if err == nil && (res == nil || !res.IsError) {
		t.Fatalf("want a failed call, got %+v", res)
	}
	al.Close()
	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var line struct {
		Capabilities struct {
			HostCalls map[string]int `json:"host_calls"`
			BytesIn   int64          `json:"bytes_in"`
			Refused   map[string]int `json:"refused_host_calls"`
		} `json:"capabilities"`
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(data))), &line); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if c := line.Capabilities; c.HostCalls["memory_search"] != 2 || c.BytesIn != 900 || c.Refused["memory_search"] != 1 {
		t.Errorf("audit line capabilities %+v, want the failed call's reads", c)
	}
}
