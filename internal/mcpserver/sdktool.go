package mcpserver

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkTool is the copy of mt registered with the SDK's AddTool. This server
// answers tools/list itself (listInOrder, from mt with its schemas as the
// manifest wrote them), so the SDK's copy serves only to route tools/call by
// name and, on the HTTP transport, to bind x-mcp-header annotations of the input
// schema to request headers. AddTool re-marshals a raw schema into nested maps
// to check it (the output schema, then the input schema twice): ≈ 1 ms of CPU
// for the six memory tools' 27 KB of schemas on the path to the initialize
// answer. A schema without x-mcp-header is given to the SDK as the one-key
// object schema it has been checked to be (convertTool); AddTool checks that in
// microseconds (a *jsonschema.Schema would cost more: the SDK marshals it by
// reflection over its sixty fields).
func sdkTool(mt *mcp.Tool) *mcp.Tool {
	in, ok := mt.InputSchema.(json.RawMessage)
	if !ok || bytes.Contains(in, []byte("x-mcp-header")) {
		return mt
	}
	c := *mt
	c.InputSchema = map[string]any{"type": "object"}
	c.OutputSchema = nil
	return &c
}

// toolPrint is the fingerprint Refresh compares to find changed tools: the tool
// as JSON without its schemas, then the schemas' bytes. Marshalling the whole
// tool re-validated and compacted the raw schemas (≈ 0.3 ms of a start for the
// six memory tools); convertTool has already compacted them.
func toolPrint(mt *mcp.Tool) []byte {
	c := *mt
	c.InputSchema, c.OutputSchema = nil, nil
	b, _ := json.Marshal(&c)
	for _, s := range []any{mt.InputSchema, mt.OutputSchema} {
		b = append(b, 0)
		switch s := s.(type) {
		case json.RawMessage:
			b = append(b, s...)
		case nil:
		default:
			j, _ := json.Marshal(s)
			b = append(b, j...)
		}
	}
	return b
}
