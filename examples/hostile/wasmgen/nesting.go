package wasmgen

import (
	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// hostType is the type of a capability host function.
var hostType = callType

// Section inserts a raw section (id and contents) into mod at the position the
// binary format requires. mod must be a valid module without a section of that id.
func Section(mod []byte, id byte, content []byte) []byte {
	parsed, err := wasmbin.Parse(mod)
	if err != nil {
		panic(err) // the builders here only pass modules they built
	}
	at := len(mod)
	for _, s := range parsed.Sections {
		if s.ID != wasmbin.SectionCustom && sectionOrder(s.ID) > sectionOrder(id) {
			at = s.Offset
			break
		}
	}
	out := append([]byte{}, mod[:at]...)
	out = append(out, id)
	out = wasmbin.AppendULEB(out, uint64(len(content)))
	out = append(out, content...)
	return append(out, mod[at:]...)
}

func sectionOrder(id byte) int {
	switch id {
	case wasmbin.SectionTag:
		return 55
	case wasmbin.SectionDataCount:
		return 95
	}
	return int(id) * 10
}

// callHost is the instructions of memory_search(0, 2) with its reply dropped
// (function 0 is the import).
var callHost = []byte{0x41, 0, 0x41, 2, 0x10, 0, 0x1a}

// NestingKind says where a Nesting module calls the host from.
type NestingKind int

// Where Nesting calls memory_search from.
const (
	// FromStart: the module's start function.
	FromStart NestingKind = iota
	// FromInitialize: its _initialize export.
	FromInitialize
	// FromAllocRequest: oh_alloc, the first time it runs (the host writing the
	// call request).
	FromAllocRequest
	// FromAllocReply: oh_alloc from its second run on, while oh_call calls
	// memory_search: the host delivering that reply enters oh_alloc, which calls
	// the host again (re-entry; on 3656465 the host recursed to gigabytes).
	FromAllocReply
	// AfterHostCall: oh_call calls memory_search legally, then traps
	// (unreachable): a failed call whose read must still be audited.
	AfterHostCall
)

// Nesting is an openhuman/1 module importing openhuman.memory_search that calls
// it from where kind says. Its oh_alloc returns 1024; its oh_call (when it gets
// that far) returns an empty result at 0 (which a valid module never does:
// the call fails as malformed).
func Nesting(kind NestingKind) []byte {
	var b wasmbin.Builder
	b.ImportFunc("openhuman", "memory_search", hostType)
	b.Memory(1)
	alloc := []byte{}
	switch kind {
	case FromAllocRequest:
		alloc = append(alloc, callHost...)
	case FromAllocReply:
		// mem[100]++; if mem[100] > 1 { memory_search(0, 2) }
		alloc = append(alloc,
			0x41, 0xe4, 0x00, 0x41, 0xe4, 0x00, 0x28, 2, 0, 0x41, 1, 0x6a, 0x36, 2, 0,
			0x41, 0xe4, 0x00, 0x28, 2, 0, 0x41, 1, 0x4b, 0x04, 0x40)
		alloc = append(alloc, callHost...)
		alloc = append(alloc, 0x0b)
	}
	alloc = append(alloc, 0x41, 0x80, 0x08) // i32.const 1024
	b.Func("oh_alloc", allocType, alloc)
	call := []byte{}
	switch kind {
	case FromAllocReply:
		call = append(call, callHost...)
	case AfterHostCall:
		call = append(call, callHost...)
		call = append(call, 0x00) // unreachable
	}
	call = append(call, 0x42, 0) // i64.const 0
	b.Func("oh_call", callType, call)
	var start uint32
	switch kind {
	case FromStart:
		start = b.Func("", wasmbin.FuncType{}, callHost)
	case FromInitialize:
		b.Func("_initialize", wasmbin.FuncType{}, callHost)
	}
	mod := b.Bytes()
	if kind == FromStart {
		mod = Section(mod, wasmbin.SectionStart, wasmbin.AppendULEB(nil, uint64(start)))
	}
	return mod
}

// HostLoop is an openhuman/1 module importing openhuman.<fn> whose oh_call
// calls it n times in a loop (request: two zero bytes at 0), then returns an
// empty result at 0. With fn = memory_recall and an embedder configured, every
// served call is a request to the embedding endpoint (finding 5).
func HostLoop(fn string, n int) []byte {
	var b wasmbin.Builder
	b.ImportFunc("openhuman", fn, hostType)
	b.Memory(1)
	b.Func("oh_alloc", allocType, []byte{0x41, 0x80, 0x08})
	body := []byte{0x03, 0x40} // loop
	body = append(body, callHost...)
	body = append(body, 0x20, 2, 0x41, 1, 0x6a, 0x22, 2, 0x41) // local.get 2 (after the two parameters); +1; local.tee 2; i32.const n
	body = wasmbin.AppendSLEB(body, int64(n))
	body = append(body, 0x49, 0x0d, 0, 0x0b, 0x42, 0) // i32.lt_u; br_if 0; end; i64.const 0
	b.FuncWithLocals("oh_call", callType, 1, wasmbin.I32, body)
	return b.Bytes()
}
