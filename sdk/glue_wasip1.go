//go:build wasip1

package sdk

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

// pins keeps every buffer handed out by oh_alloc reachable (so the garbage collector
// cannot reclaim memory the host is writing into), keyed by its address. Buffers are
// released once read: the request when oh_call starts, a host reply when its call
// returns.
var pins = map[int32][]byte{}

// lastOut keeps the previous oh_call output alive until the next call.
var lastOut []byte

func addr(b []byte) int32 {
	if len(b) == 0 {
		return 0
	}
	return int32(uintptr(unsafe.Pointer(&b[0])))
}

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

// take returns the pinned buffer at ptr (truncated to n bytes) and unpins it.
func take(ptr, n int32) ([]byte, bool) {
	b, ok := pins[ptr]
	if !ok || n < 0 || int(n) > len(b) {
		return nil, false
	}
	delete(pins, ptr)
	return b[:n], true
}

//go:wasmexport oh_call
func ohCall(ptr, n int32) int64 {
	req, ok := take(ptr, n)
	var out []byte
	if !ok {
		out = []byte(`{"error":{"code":"internal","message":"oh_call: the request was not written into a buffer from oh_alloc"}}`)
	} else {
		// Anything still pinned belongs to an abandoned earlier exchange.
		clear(pins)
		out = Dispatch(req)
	}
	lastOut = out
	return int64(addr(out))<<32 | int64(uint32(len(out)))
}

//go:wasmimport openhuman log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

// Log writes msg to the host's log (stderr, prefixed with the tool name and
// rate-limited by the host) at level abi.LogDebug, LogInfo, LogWarn or LogError.
func Log(level int32, msg string) {
	if msg == "" {
		return
	}
	b := []byte(msg)
	hostLog(level, unsafe.Pointer(&b[0]), int32(len(b)))
}

// Logf formats and logs a message at level.
func Logf(level int32, format string, args ...any) {
	Log(level, fmt.Sprintf(format, args...))
}

// CallHost sends the JSON request req to a host function (through call, the raw
// wasm import) and decodes its reply into out (see DecodeReply). Capability packages
// (sdk/memory, sdk/searxng) use it; tool code calls their typed functions instead.
func CallHost(fn string, call func(ptr unsafe.Pointer, n int32) int64, req any, out any) error {
	ok, err := CallHostRaw(fn, call, req)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(ok, out); err != nil {
		return Internal("host function %s returned a result of the wrong shape: %v", fn, err)
	}
	return nil
}

// CallHostRaw is CallHost returning the reply's "ok" value undecoded (see ReplyOK),
// for tools that pass a host result through without reshaping it.
func CallHostRaw(fn string, call func(ptr unsafe.Pointer, n int32) int64, req any) (json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, Internal("encoding the %s request: %v", fn, err)
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	packed := call(unsafe.Pointer(&body[0]), int32(len(body)))
	ptr, n := int32(uint64(packed)>>32), int32(uint32(packed))
	reply, ok := take(ptr, n)
	if !ok {
		return nil, Internal("host function %s returned a reply outside the buffers this module allocated", fn)
	}
	return ReplyOK(fn, reply)
}
