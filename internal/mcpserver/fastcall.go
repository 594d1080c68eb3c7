package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/rpcwire"
)

// A tools/call is answered without the go-sdk's request path.
//
// The line filter has already decoded and checked every request's envelope
// (rpcwire). For a plain tools/call — after the session's first initialize was
// answered, params holding only a known tool's name and an arguments object, an
// id of the ordinary kind — handing the line to the SDK meant decoding it again
// (segmentio's decoder and its buffers, _meta validation), two goroutines started
// and woken per request (jsonrpc2's queue worker, then the handler goroutine it
// starts) and the middleware, for a call whose answer is the one runCall returns. So the filter runs such a call itself, on a
// goroutine of its own, and writes the frame the SDK would have written:
// jsonrpc.EncodeMessage of the same response, through the same writer
// (writeFromSDK: pending ids, cancelled answers, result placeholders, error
// clean-up). Everything else — other params members, _meta (progress tokens, the
// per-request protocol), unknown tools, ids with escapes or beyond 15 digits,
// batches, a session on a protocol version the SDK answers differently — takes
// the SDK's path as before. notifications/cancelled cancels the call's context
// as the SDK would. Options.NoFastCalls turns this off;
// TestFastCallFramesMatchTheSDK checks that both paths write the same bytes.

// fastCallParams are the only params members a fast call may have.
var fastCallParams = map[string]bool{"name": true, "arguments": true}

// tryFastCall starts m (a tools/call request whose id key is key, already
// checked by filter) on the fast path and reports whether it did; false leaves
// the line to the SDK.
func (c *stdioConn) tryFastCall(m rpcwire.Msg, key string) bool {
	c.mu.Lock()
	ready := c.initResult != nil && c.version < "2026"
	c.mu.Unlock()
	if !ready {
		return false
	}
	// The SDK answered initialize inside Connect's session; Serve sets the
	// session for this path as soon as Connect returns.
	select {
	case <-c.sessionSet:
	case <-c.ctx.Done():
		return false
	}
	c.mu.Lock()
	srv, ss := c.srv, c.ss
	c.mu.Unlock()
	if srv == nil || ss == nil || len(m.Members) != 4 || len(m.Params) == 0 || m.Params[0] != '{' {
		return false
	}
	id, ok := plainRequestID(m.ID)
	if !ok {
		return false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		return false
	}
	for k := range params {
		if !fastCallParams[k] {
			return false
		}
	}
	name, ok := plainString(params["name"])
	if !ok {
		return false
	}
	args, has := params["arguments"]
	if has && (len(args) == 0 || args[0] != '{') {
		return false
	}
	canon, ok := srv.toolFor(name)
	if !ok {
		return false // the SDK's path words the unknown tool's error
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	c.pending[key]++
	c.holdBytes(key, len(args))
	c.calls[key] = cancel
	c.mu.Unlock()
	c.log.Debug("mcp: request", "id", string(m.ID), "method", m.Method)
	srv.fastCallsRun.Add(1)
	go func() {
		defer cancel()
		res, err := srv.runCall(ctx, ss, nil, canon, args, idLabel(key))
		frame := encodeCallResponse(id, res, err)
		c.mu.Lock()
		delete(c.calls, key) // before the answer: the client may reuse the id at once
		c.mu.Unlock()
		c.writeFromSDK(frame)
	}()
	return true
}

// encodeCallResponse is the frame the SDK writes for a tools/call answered with
// res or err (jsonrpc2's processResult and ioConn.Write).
func encodeCallResponse(id jsonrpc.ID, res *mcp.CallToolResult, err error) []byte {
	resp := &jsonrpc.Response{ID: id, Error: err}
	if err == nil {
		if res.Content == nil {
			res.Content = []mcp.Content{} // as the SDK's callTool: never "null"
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // jsonrpc2's marshalToRaw
		if e := enc.Encode(res); e != nil {
			resp.Error = &jsonrpc.Error{Code: codeInternalError, Message: e.Error()}
		} else {
			resp.Result = bytes.TrimRight(buf.Bytes(), "\n")
		}
	}
	frame, e := jsonrpc.EncodeMessage(resp)
	if e != nil { // cannot happen: an id, a RawMessage and a wire error
		frame, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeInternalError, Message: e.Error()}})
	}
	return append(frame, '\n')
}

// plainRequestID returns the SDK's form of a request id that the SDK decodes
// and writes back exactly as sent: an integer of at most 15 digits without
// leading zeros, or a string of at most 128 bytes of printable ASCII with no
// escapes and nothing HTML-escaped.
func plainRequestID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if s, ok := plainString(raw); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return jsonrpc.ID{}, false
	}
	n := int64(0)
	for _, b := range digits {
		if b < '0' || b > '9' {
			return jsonrpc.ID{}, false
		}
		n = n*10 + int64(b-'0')
	}
	if raw[0] == '-' {
		if n == 0 {
			return jsonrpc.ID{}, false // -0
		}
		n = -n
	}
	id, err := jsonrpc.MakeID(float64(n)) // the SDK decodes numbers as float64
	return id, err == nil
}

// plainString returns the value of a JSON string of at most 128 bytes of
// printable ASCII without escapes and without the bytes json escapes for HTML.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || len(raw) > 130 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	for _, b := range raw[1 : len(raw)-1] {
		if b < 0x20 || b >= 0x7f || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' {
			return "", false
		}
	}
	return string(raw[1 : len(raw)-1]), true
}

// toolFor returns the canonical name of the tool a tools/call names (as the
// names middleware resolves it), and whether it is served.
func (s *Server) toolFor(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		return name, true
	}
	canon, ok := s.names.canonicalOf[name]
	return canon, ok
}
