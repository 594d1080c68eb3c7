package rpcserver

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/rpcwire"
)

// JSON-RPC 2.0 error codes used by the server: the standard ones are
// internal/rpcwire's (shared with the MCP servers); the -3200x codes are
// server-defined.
const (
	CodeParseError     = rpcwire.CodeParseError
	CodeInvalidRequest = rpcwire.CodeInvalidRequest
	CodeMethodNotFound = rpcwire.CodeMethodNotFound
	CodeInvalidParams  = rpcwire.CodeInvalidParams
	CodeInternalError  = rpcwire.CodeInternalError
	CodeNotFound       = -32001
	CodeUnavailable    = -32002
	CodeDisabled       = -32003
	CodeForbidden      = -32004 // the policy's allowed_agents does not admit the caller
)

// codeMessages are the short phrases sent in error.message.
var codeMessages = map[int]string{
	CodeParseError:     rpcwire.Message(CodeParseError),
	CodeInvalidRequest: rpcwire.Message(CodeInvalidRequest),
	CodeMethodNotFound: rpcwire.Message(CodeMethodNotFound),
	CodeInvalidParams:  rpcwire.Message(CodeInvalidParams),
	CodeInternalError:  rpcwire.Message(CodeInternalError),
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

// fromWire is the Error of an envelope failure found by internal/rpcwire.
func fromWire(e *rpcwire.Error) *Error {
	return &Error{Code: e.Code, Message: e.Message, Data: e.Data}
}

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
	Params       json.RawMessage // an object or an array; nil when absent or null
}

// parseRequest validates one message of a single request or a batch with the
// envelope rules the MCP servers apply too (rpcwire.Decode). On failure it
// returns the error response (with the id when it was usable, else null); a
// notification whose params are not structured returns (nil, nil): nothing
// runs or answers.
func parseRequest(raw json.RawMessage) (*request, *response) {
	m, rej := rpcwire.Decode(raw, !rpcwire.AllowResponses)
	if rej != nil {
		if rej.Silent {
			return nil, nil
		}
		return nil, errorResponse(rej.ID, fromWire(rej.Err))
	}
	return &request{ID: m.ID, Notification: m.Kind == rpcwire.KindNotification, Method: m.Method, Params: m.Params}, nil
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

// paramsObject returns the params of method as an object map; absent or null
// params are an empty map, positional (array) params are refused as by the MCP
// servers (rpcwire.ObjectParams).
func paramsObject(method string, params json.RawMessage) (map[string]json.RawMessage, *Error) {
	m := map[string]json.RawMessage{}
	if params == nil {
		return m, nil
	}
	if perr := rpcwire.ObjectParams(method, params); perr != nil {
		return nil, fromWire(perr)
	}
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, rpcErr(CodeInvalidParams, "params object is malformed")
	}
	return m, nil
}
