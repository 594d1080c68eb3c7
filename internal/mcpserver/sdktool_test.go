package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK gets a stub input schema (and no output schema) unless the input
// schema carries x-mcp-header annotations, which the SDK's HTTP transport binds
// to headers; the tool listed to clients is never changed.
func TestSDKToolStubsSchemasWithoutHeaders(t *testing.T) {
	in := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)
	out := json.RawMessage(`{"type":"object"}`)
	mt := &mcp.Tool{Name: "memory.search", InputSchema: in, OutputSchema: out}
	got := sdkTool(mt)
	if s, ok := got.InputSchema.(map[string]any); !ok || s["type"] != "object" || len(s) != 1 || got.OutputSchema != nil || got.Name != mt.Name {
		t.Errorf("SDK copy: input %#v, output %#v, name %q; want a stub object schema and no output schema", got.InputSchema, got.OutputSchema, got.Name)
	}
	if string(mt.InputSchema.(json.RawMessage)) != string(in) || string(mt.OutputSchema.(json.RawMessage)) != string(out) {
		t.Error("the listed tool was changed")
	}

	hdr := &mcp.Tool{Name: "h", InputSchema: json.RawMessage(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`)}
	if sdkTool(hdr) != hdr {
		t.Error("a schema with x-mcp-header was not given to the SDK as it is")
	}
	// The SDK accepts the stub (AddTool panics on a schema it refuses).
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	srv.AddTool(got, nil)
	srv.AddTool(sdkTool(hdr), nil)
}
