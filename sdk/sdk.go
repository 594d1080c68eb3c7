// Package sdk is the Go guest SDK for openhuman-core tool modules: it hides the
// "openhuman/1" ABI behind a handler registration, argument helpers and error types.
//
// A tool module is a Go `package main` built with
// `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`. It registers its handler in
// init (or main) with Handle, and calls host functions through the capability
// packages sdk/memory (memory.read) and sdk/searxng (web.searxng). Importing only the
// package of a granted capability keeps the module's import list within its grant.
//
// The argument helpers (ParseArgs and the Args accessors) and the error constructors
// are plain Go, so host code and tests can use them too; only the ABI glue
// (the oh_alloc/oh_call exports and the log import) is built for wasip1 alone.
package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Request is one tool invocation as the host sent it.
type Request struct {
	// Tool is the name of the tool being called (a module may serve several).
	Tool string
	// Arguments is the JSON arguments object from the client (may be empty or null).
	Arguments json.RawMessage
	// Client is the caller's provenance label, e.g. "mcp:claude-ai".
	Client string
	// RequestID identifies the call in the host's audit log.
	RequestID string
}

// Args parses the request's arguments, allowing only the given keys (see ParseArgs).
func (r *Request) Args(allowed ...string) (*Args, error) {
	return ParseArgs(r.Arguments, allowed...)
}

// Handler serves one tool call. It returns a value that encodes to a JSON object
// (a struct, a map, or json.RawMessage), or an error. Return an *abi.Error (e.g.
// from InvalidParams, NotFound, Unavailable) to choose the error code; any other
// error is reported as "internal".
type Handler func(req *Request) (any, error)

var (
	mu       sync.Mutex
	fallback Handler
	byTool   = map[string]Handler{}
)

// Handle registers h as the handler for every tool the module serves that has no
// handler of its own (see HandleTool). Call it from init or main.
func Handle(h Handler) {
	mu.Lock()
	defer mu.Unlock()
	fallback = h
}

// HandleTool registers h for the tool named name (for modules that serve several tools).
func HandleTool(name string, h Handler) {
	mu.Lock()
	defer mu.Unlock()
	byTool[name] = h
}

// HandleTools registers each handler of m for its tool name.
func HandleTools(m map[string]Handler) {
	for name, h := range m {
		HandleTool(name, h)
	}
}

func handlerFor(tool string) Handler {
	mu.Lock()
	defer mu.Unlock()
	if h, ok := byTool[tool]; ok {
		return h
	}
	return fallback
}

// Dispatch decodes one request (an abi.CallRequest in JSON), runs the registered
// handler and returns the encoded abi.CallResponse. It never panics: a panic inside
// the handler becomes an "internal" error that carries the panic value. The ABI glue
// calls it from oh_call; tests may call it directly.
func Dispatch(request []byte) []byte {
	resp := dispatch(request)
	if resp.Error == nil {
		// The result is already compact, valid JSON (or passed through as the
		// handler's json.RawMessage): wrap it without scanning it again.
		out := make([]byte, 0, len(resp.Result)+11)
		out = append(out, `{"result":`...)
		out = append(out, resp.Result...)
		return append(out, '}')
	}
	out, err := json.Marshal(resp)
	if err != nil {
		out, _ = json.Marshal(abi.CallResponse{Error: Internal("encoding the tool response: %v", err)})
	}
	return out
}

func dispatch(request []byte) (resp abi.CallResponse) {
	var call abi.CallRequest
	if err := json.Unmarshal(request, &call); err != nil {
		return abi.CallResponse{Error: Internal("the host sent a request that is not an openhuman/1 call request: %v", err)}
	}
	h := handlerFor(call.Tool)
	if h == nil {
		return abi.CallResponse{Error: Internal("this module has no handler for tool %q; register one with sdk.Handle or sdk.HandleTool", call.Tool)}
	}
	defer func() {
		if p := recover(); p != nil {
			resp = abi.CallResponse{Error: Internal("tool %s panicked: %v", call.Tool, p)}
		}
	}()
	result, err := h(&Request{Tool: call.Tool, Arguments: call.Arguments, Client: call.Client, RequestID: call.RequestID})
	if err != nil {
		return abi.CallResponse{Error: AsError(err)}
	}
	raw, err := encodeResult(result)
	if err != nil {
		return abi.CallResponse{Error: Internal("tool %s: encoding its result: %v", call.Tool, err)}
	}
	return abi.CallResponse{Result: raw}
}

// encodeResult encodes a handler's result. A json.RawMessage is passed through after
// a check that it looks like an object (the host validates the JSON itself): this
// keeps the guest's work thin when a tool returns what a host function returned.
func encodeResult(result any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch r := result.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw = bytes.TrimSpace(r)
		if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
			return nil, fmt.Errorf("a tool result must be a JSON object, got %s", jsonType(raw))
		}
		return raw, nil
	default:
		b, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if jsonType(raw) != "object" {
		return nil, fmt.Errorf("a tool result must be a JSON object, got %s", jsonType(raw))
	}
	return raw, nil
}

// AsError converts err to the *abi.Error a tool returns: an *abi.Error (also when
// wrapped) is kept as is, anything else becomes an "internal" error.
func AsError(err error) *abi.Error {
	if err == nil {
		return nil
	}
	var e *abi.Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	return Internal("%v", err)
}

// DecodeReply decodes a host function reply (an abi.HostReply in JSON) into out. A
// reply carrying an error is returned as that *abi.Error, so a handler can return it
// as is; a malformed reply is an "internal" error naming fn.
func DecodeReply(fn string, reply []byte, out any) error {
	ok, err := ReplyOK(fn, reply)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(ok, out); err != nil {
		return Internal("host function %s returned a result of the wrong shape: %v", fn, err)
	}
	return nil
}

// okPrefix is how the host encodes a successful reply ({"ok":…}).
var okPrefix = []byte(`{"ok":`)

// ReplyOK returns the "ok" value of a host function reply without decoding it, or
// the reply's error as an *abi.Error. The host's canonical encoding, {"ok":…}, is
// recognised without scanning the value (the host produced it with encoding/json);
// any other form is decoded in full.
func ReplyOK(fn string, reply []byte) (json.RawMessage, error) {
	if len(reply) > len(okPrefix)+1 && bytes.HasPrefix(reply, okPrefix) && reply[len(reply)-1] == '}' {
		ok := bytes.TrimSpace(reply[len(okPrefix) : len(reply)-1])
		if len(ok) > 0 && (ok[0] == '{' || ok[0] == '[') {
			return json.RawMessage(ok), nil
		}
	}
	var r abi.HostReply
	if err := json.Unmarshal(reply, &r); err != nil {
		return nil, Internal("host function %s returned a reply that is not valid JSON: %v", fn, err)
	}
	if r.Error != nil {
		if r.Error.Code == "" {
			r.Error.Code = abi.CodeInternal
		}
		return nil, r.Error
	}
	if len(r.OK) == 0 {
		return nil, Internal("host function %s returned neither ok nor error", fn)
	}
	return r.OK, nil
}
