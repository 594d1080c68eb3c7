package rpcserver

import (
	"github.com/openhuman/openhuman-core/internal/rpcwire"

	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/audit"
)

// JSON-RPC 2.0 error codes used by the server. The -3200x codes are server-defined.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeNotFound       = -32001
	CodeUnavailable    = -32002
	CodeDisabled       = -32003
	CodeForbidden      = -32004 // the policy's allowed_agents does not admit the caller
)

// codeMessages are the short phrases sent in error.message.
var codeMessages = map[int]string{
	CodeParseError:     "Parse error",
	CodeInvalidRequest: "Invalid Request",
	CodeMethodNotFound: "Method not found",
	CodeInvalidParams:  "Invalid params",
	CodeInternalError:  "Internal error",
	CodeNotFound:       "Not found",
	CodeUnavailable:    "Tool unavailable",
	CodeDisabled:       "Tool disabled",
	CodeForbidden:      "Agent not allowed",
}

// Error is a JSON-RPC error object; Data is always a readable sentence.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data"`

	// detail is what went wrong when Data is only a stable message with ErrorID:
	// written to the log and the audit line, never sent.
	detail string
	// errorID ties Data to the log and the audit line; "" when Data says it all.
	errorID string
}

// logged is the error's text for the log and the audit line.
func (e *Error) logged() string {
	if e.detail != "" {
		return e.detail
	}
	return e.Data
}

// hiddenErr is an error whose detail must not reach the client: Data is the
// stable message format (given the error id as its last %s), the detail is kept
// for the log and the audit line under the id.
func hiddenErr(code int, detail, format string, args ...any) *Error {
	id := audit.NewErrorID()
	return &Error{Code: code, Message: codeMessages[code], Data: fmt.Sprintf(format, append(args, id)...), detail: detail, errorID: id}
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Message, e.Code, e.Data) }

// rpcErr builds an Error with the standard message for code.
func rpcErr(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: codeMessages[code], Data: fmt.Sprintf(format, args...)}
}

// response is one JSON-RPC response object.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

var nullID = json.RawMessage("null")

func errorResponse(id json.RawMessage, e *Error) *response {
	if id == nil {
		id = nullID
	}
	return &response{JSONRPC: "2.0", ID: id, Error: e}
}

// request is a validated JSON-RPC request. Notification is true when the message had
// no "id" key; no response is sent for it.
type request struct {
	ID           json.RawMessage
	Notification bool
	Method       string
	Params       json.RawMessage // nil when absent or null
}

// parseRequest validates one message of a single request or a batch. On failure it
// returns an error response (with the id when it was usable); a malformed message
// without an id returns (nil, nil): it is a notification, so nothing runs or answers.
func parseRequest(raw json.RawMessage) (*request, *response) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errorResponse(nil, rpcErr(CodeInvalidRequest, "each request must be a JSON object, got %s", jsonType(raw)))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errorResponse(nil, rpcErr(CodeInvalidRequest, "request object is malformed"))
	}
	req := &request{}
	idRaw, hasID := m["id"]
	if !hasID {
		req.Notification = true
	} else if _, err := rpcwire.CanonicalID(idRaw); err != nil { // the MCP servers' rule too
		return nil, errorResponse(nil, rpcErr(CodeInvalidRequest, "id must be a string or integer, got %s", jsonType(idRaw)))
	} else {
		req.ID = idRaw
	}
	fail := func(e *Error) (*request, *response) {
		if req.Notification {
			return nil, nil // a malformed notification gets no answer and runs nothing
		}
		return nil, errorResponse(req.ID, e)
	}
	if v, ok := m["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return fail(rpcErr(CodeInvalidRequest, `jsonrpc must be "2.0"`))
	}
	methodRaw, ok := m["method"]
	if !ok || json.Unmarshal(methodRaw, &req.Method) != nil {
		return fail(rpcErr(CodeInvalidRequest, "method must be a string"))
	}
	if p, ok := m["params"]; ok && string(bytes.TrimSpace(p)) != "null" {
		req.Params = p
	}
	return req, nil
}

// jsonType names the JSON type of raw for error messages.
func jsonType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// paramsObject returns params as an object map; absent or null params are an empty map.
func paramsObject(params json.RawMessage) (map[string]json.RawMessage, *Error) {
	m := map[string]json.RawMessage{}
	if params == nil {
		return m, nil
	}
	if t := jsonType(params); t != "object" {
		return nil, rpcErr(CodeInvalidParams, "params must be an object or null, got %s", t)
	}
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, rpcErr(CodeInvalidParams, "params object is malformed")
	}
	return m, nil
}
