//go:build wasip1

// Package glue implements the "openhuman/1" ABI directly for the runtime's test
// guests (deliberately independent of the SDK, so the runtime is tested against
// the contract rather than against one implementation of it).
package glue

import (
	"encoding/json"
	"unsafe"
)

// Request is the CallRequest a guest receives.
type Request struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Client    string          `json:"client"`
	RequestID string          `json:"request_id"`
}

// Handler answers one call with a result object or an error (code, message).
var Handler func(r *Request) (result any, code, message string)

var pins = map[int32][]byte{}
var lastOut []byte

func addr(b []byte) int32 { return int32(uintptr(unsafe.Pointer(&b[0]))) }

//go:wasmexport oh_alloc
func ohAlloc(size int32) int32 {
	if size <= 0 {
		size = 1
	}
	b := make([]byte, size)
	p := addr(b)
	pins[p] = b
	return p
}

func take(ptr, n int32) []byte {
	b := pins[ptr]
	delete(pins, ptr)
	if n < 0 || int(n) > len(b) {
		return nil
	}
	return b[:n]
}

// Raw makes oh_call return these exact bytes (for malformed/oversized results).
var Raw []byte

//go:wasmexport oh_call
func ohCall(ptr, n int32) int64 {
	var req Request
	var out []byte
	if err := json.Unmarshal(take(ptr, n), &req); err != nil {
		out, _ = json.Marshal(map[string]any{"error": map[string]string{"code": "internal", "message": err.Error()}})
	} else {
		Raw = nil
		res, code, msg := Handler(&req)
		switch {
		case Raw != nil:
			out = Raw
		case code != "":
			out, _ = json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
		default:
			r, _ := json.Marshal(res)
			out, _ = json.Marshal(map[string]json.RawMessage{"result": r})
		}
	}
	lastOut = out
	return int64(addr(out))<<32 | int64(uint32(len(out)))
}

// Call sends a JSON request through a raw host import and returns the reply bytes.
func Call(fn func(ptr unsafe.Pointer, n int32) int64, req []byte) []byte {
	if len(req) == 0 {
		req = []byte("{}")
	}
	p := fn(unsafe.Pointer(&req[0]), int32(len(req)))
	return take(int32(uint64(p)>>32), int32(uint32(p)))
}
