package rpcwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/jsoncheck"
)

// The JSON-RPC 2.0 error codes both servers answer envelope failures with.
const (
	CodeParseError     = -32700 // not JSON, or not UTF-8
	CodeInvalidRequest = -32600 // JSON, but not a JSON-RPC 2.0 request
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Message is the standard error.message of a JSON-RPC 2.0 code ("" for a code
// the specification does not name; servers name their own -32000…-32099 codes).
func Message(code int) string {
	switch code {
	case CodeParseError:
		return "Parse error"
	case CodeInvalidRequest:
		return "Invalid Request"
	case CodeMethodNotFound:
		return "Method not found"
	case CodeInvalidParams:
		return "Invalid params"
	case CodeInternalError:
		return "Internal error"
	}
	return ""
}

// Error is the error member of a JSON-RPC response. Data is a readable sentence
// saying what was wrong and where.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Message, e.Code, e.Data) }

// Errorf builds an Error with the standard message of code and data from format.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: Message(code), Data: fmt.Sprintf(format, args...)}
}

// AppendErrorResponse appends the encoded response {"jsonrpc":"2.0","id":id,
// "error":e} to dst; a nil id is written as null (an id that could not be read).
// The id must be one the envelope accepted (CanonicalID) or nil.
func AppendErrorResponse(dst []byte, id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *Error          `json:"error"`
	}{"2.0", id, e})
	if err != nil { // cannot happen: id is valid JSON and e holds a string and ints
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	return append(dst, b...)
}

// CheckJSON is the parse check of one message (a request, a notification or a
// batch): nil when b is valid JSON in UTF-8, else a -32700 error saying where it
// fails. Blank input is the caller's to handle (a line server skips it, /rpc
// answers it).
func CheckJSON(b []byte) *Error {
	if !utf8.Valid(b) {
		return Errorf(CodeParseError, "message is not valid UTF-8")
	}
	if jsoncheck.Valid(b) { // json.Valid's verdict, several times faster
		return nil
	}
	var se *json.SyntaxError
	if err := json.Unmarshal(b, new(any)); errors.As(err, &se) {
		return Errorf(CodeParseError, "message is not valid JSON: %v (at byte %d)", se, se.Offset)
	}
	return Errorf(CodeParseError, "message is not valid JSON")
}

// Kind tells what a valid JSON-RPC message is.
type Kind int

// Kinds of a decoded message.
const (
	KindRequest      Kind = iota // has an id and a method: it is answered
	KindNotification             // has a method and no id: it is never answered
	KindResponse                 // has an id, result or error, no method (only with AllowResponses)
)

// Msg is one JSON-RPC 2.0 message that passed the envelope checks.
type Msg struct {
	Members map[string]json.RawMessage // every member as sent
	ID      json.RawMessage            // as sent; nil for a notification
	Key     string                     // CanonicalID(ID); "" for a notification
	Method  string                     // "" for a response
	Params  json.RawMessage            // an object or an array; nil when absent or null
	Kind    Kind
}

// Rejection is the answer to a message that failed the envelope checks: Err
// under the id ID (nil is written as null). Silent rejections (a notification
// whose params are not structured: JSON-RPC never answers a notification's
// method-level errors) are logged, not answered.
type Rejection struct {
	ID     json.RawMessage
	Err    *Error
	Silent bool
}

// AllowResponses makes Decode accept responses (id plus result or error, no
// method): the MCP server receives answers to its own requests; /rpc does not.
const AllowResponses = true

// Decode validates one element of a message (a request object, or one element
// of a batch) against JSON-RPC 2.0. raw must have passed CheckJSON. The checks
// run in this order, each answering with the first failure:
//
//   - not an object: -32600 "message must be a JSON object, got <kind>", id null;
//   - an id that CanonicalID refuses: -32600 with its reason, id null;
//   - "jsonrpc" absent or not "2.0": -32600 `jsonrpc must be "2.0"`;
//   - "method" absent (and, with allowResponses, not a response): -32600
//     "missing method"; not a string: -32600 "method must be a string, got <kind>";
//   - "params" present, not null, and neither an object nor an array: -32602
//     "<method> params must be an object, got <kind>" (silent for a notification).
//
// From the id check on, the answer carries the id when it was valid (null
// otherwise), and a malformed message without an id is still answered with id
// null, as JSON-RPC 2.0 §5 shows for {"jsonrpc":"2.0","method":1}.
func Decode(raw []byte, allowResponses bool) (Msg, *Rejection) {
	var m Msg
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return m, &Rejection{Err: Errorf(CodeInvalidRequest, "message must be a JSON object, got %s", JSONKind(raw))}
	}
	if err := json.Unmarshal(raw, &m.Members); err != nil || m.Members == nil {
		return m, &Rejection{Err: Errorf(CodeInvalidRequest, "message must be a JSON object")}
	}
	idRaw, hasID := m.Members["id"]
	if hasID {
		key, err := CanonicalID(idRaw)
		if err != nil {
			return m, &Rejection{Err: Errorf(CodeInvalidRequest, "%s", err.Error())}
		}
		m.ID, m.Key = idRaw, key
	}
	if v, ok := m.Members["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return m, &Rejection{ID: m.ID, Err: Errorf(CodeInvalidRequest, `jsonrpc must be "2.0"`)}
	}
	methodRaw, hasMethod := m.Members["method"]
	if !hasMethod {
		_, hasResult := m.Members["result"]
		_, hasError := m.Members["error"]
		if allowResponses && hasID && (hasResult || hasError) {
			m.Kind = KindResponse
			return m, nil
		}
		return m, &Rejection{ID: m.ID, Err: Errorf(CodeInvalidRequest, "missing method")}
	}
	if !isString(methodRaw) || json.Unmarshal(methodRaw, &m.Method) != nil {
		return m, &Rejection{ID: m.ID, Err: Errorf(CodeInvalidRequest, "method must be a string, got %s", JSONKind(methodRaw))}
	}
	if p, ok := m.Members["params"]; ok {
		p = bytes.TrimSpace(p)
		switch {
		case len(p) > 0 && (p[0] == '{' || p[0] == '['):
			m.Params = p
		case string(p) == "null":
		default:
			return m, &Rejection{ID: m.ID, Err: Errorf(CodeInvalidParams, "%s params must be an object, got %s", Clip(m.Method), JSONKind(p)), Silent: !hasID}
		}
	}
	if !hasID {
		m.Kind = KindNotification
	}
	return m, nil
}

// ObjectParams is the params check of every method both servers serve (they
// all take named params): nil for an object or absent params, else -32602
// "<method> params must be an object, got an array".
func ObjectParams(method string, params json.RawMessage) *Error {
	params = bytes.TrimSpace(params)
	if len(params) == 0 || params[0] == '{' || string(params) == "null" {
		return nil
	}
	return Errorf(CodeInvalidParams, "%s params must be an object, got %s", Clip(method), JSONKind(params))
}

// SplitBatch returns the elements of a batch (a JSON array that passed
// CheckJSON). It stops at the first element beyond limit, so nothing of an
// oversized batch is kept or run. The error is the answer to send for the whole
// batch: -32600 "batch must not be empty", or -32600 "batch has more than
// <limit> messages; …".
func SplitBatch(b []byte, limit int) ([]json.RawMessage, *Error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, Errorf(CodeInvalidRequest, "batch must be a JSON array of request objects")
	}
	var elems []json.RawMessage
	for dec.More() {
		if len(elems) == limit {
			return nil, Errorf(CodeInvalidRequest, "batch has more than %d messages; at most %d are accepted in one batch, split it", limit, limit)
		}
		var e json.RawMessage
		if err := dec.Decode(&e); err != nil {
			return nil, Errorf(CodeParseError, "batch element %d is not valid JSON: %v", len(elems), err)
		}
		elems = append(elems, e)
	}
	if len(elems) == 0 {
		return nil, EmptyBatchError()
	}
	return elems, nil
}

// EmptyBatch reports whether b, a batch that passed CheckJSON, has no elements
// ("[]" with any whitespace). An empty batch is refused in every protocol
// version, before any server-specific batch rule.
func EmptyBatch(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '[' && len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// EmptyBatchError is the answer to an empty batch: -32600 "batch must not be empty".
func EmptyBatchError() *Error { return Errorf(CodeInvalidRequest, "batch must not be empty") }

// JSONKind names the JSON kind of raw for messages: "an object", "an array",
// "a string", "a boolean", "null", "a number" or "nothing".
func JSONKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// Clip shortens a client-chosen name (a method, an id) for messages and logs
// to at most 64 bytes, cut at a rune boundary, with "…" when cut.
func Clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isString(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}
