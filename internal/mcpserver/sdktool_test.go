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

// The fingerprint changes with every field a client lists, schemas included.
func TestToolPrintSeesEveryListedField(t *testing.T) {
	base := func() *mcp.Tool {
		return &mcp.Tool{Name: "a", Title: "T", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	}
	p0 := string(toolPrint(base()))
	if p0 != string(toolPrint(base())) {
		t.Fatal("the fingerprint of the same tool differs")
	}
	for name, change := range map[string]func(*mcp.Tool){
		"name":          func(m *mcp.Tool) { m.Name = "b" },
		"title":         func(m *mcp.Tool) { m.Title = "U" },
		"description":   func(m *mcp.Tool) { m.Description = "e" },
		"input schema":  func(m *mcp.Tool) { m.InputSchema = json.RawMessage(`{"type":"object","required":["q"]}`) },
		"output schema": func(m *mcp.Tool) { m.OutputSchema = nil },
		"annotations":   func(m *mcp.Tool) { m.Annotations.IdempotentHint = true },
		"swap schemas": func(m *mcp.Tool) {
			m.InputSchema, m.OutputSchema = json.RawMessage(`{"type":"object"}`), json.RawMessage(`{"type":"object","x":1}`)
		},
	} {
		m := base()
		change(m)
		if string(toolPrint(m)) == p0 {
			t.Errorf("changing the %s leaves the fingerprint unchanged", name)
		}
	}
}
