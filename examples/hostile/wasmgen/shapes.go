package wasmgen

import "github.com/openhuman/openhuman-core/internal/wasmbin"

// Shape is a kind of module whose cost lies in section entries rather than in
// linear memory (issue 29, finding 3).
type Shape string

// The shapes Entries builds.
const (
	ShapeGlobals Shape = "globals"
	ShapeData    Shape = "data segments"
	ShapeElems   Shape = "element segments"
	ShapeTypes   Shape = "types"
)

// Entries is a minimal openhuman/1 module (oh_alloc returns 1024, oh_call
// returns 0) with n entries of shape (n ≥ 2 for types: its own two count): immutable i32 globals, empty passive data
// segments, empty passive element segments, or () -> () types. Each entry is
// 2–5 bytes, so 12 M globals fit in 60 MB.
func Entries(shape Shape, n int) []byte {
	if shape == ShapeTypes {
		return manyTypes(n)
	}
	var b wasmbin.Builder
	b.Memory(1)
	b.Func("oh_alloc", allocType, []byte{0x41, 0x80, 0x08})
	b.Func("oh_call", callType, []byte{0x42, 0})
	mod := b.Bytes()
	c := wasmbin.AppendULEB(nil, uint64(n))
	var id byte
	var entry []byte
	switch shape {
	case ShapeGlobals:
		id, entry = wasmbin.SectionGlobal, []byte{0x7f, 0, 0x41, 0, 0x0b} // i32 const, i32.const 0
	case ShapeData:
		id, entry = wasmbin.SectionData, []byte{1, 0} // passive, no bytes
	case ShapeElems:
		id, entry = wasmbin.SectionElement, []byte{1, 0, 0} // passive, funcref, no entries
	default:
		panic("unknown shape " + string(shape))
	}
	for i := 0; i < n; i++ {
		c = append(c, entry...)
	}
	return Section(mod, id, c)
}

// manyTypes is Entries' types shape, encoded by hand (wasmbin.Builder merges
// equal types).
func manyTypes(n int) []byte {
	out := newRawModule()
	section := out.section
	n = max(n, 2) - 2 // the two types of oh_alloc and oh_call count
	c := wasmbin.AppendULEB(nil, uint64(n+2))
	for i := 0; i < n; i++ {
		c = append(c, 0x60, 0, 0)
	}
	c = append(c, 0x60, 1, 0x7f, 1, 0x7f)       // (i32) -> i32
	c = append(c, 0x60, 2, 0x7f, 0x7f, 1, 0x7e) // (i32, i32) -> i64
	section(wasmbin.SectionType, c)
	fs := wasmbin.AppendULEB([]byte{2}, uint64(n))
	fs = wasmbin.AppendULEB(fs, uint64(n+1))
	section(wasmbin.SectionFunction, fs)
	section(wasmbin.SectionMemory, []byte{1, 0, 1})
	section(wasmbin.SectionExport, abiExports(0))
	code := []byte{2, 5, 0, 0x41, 0x80, 0x08, 0x0b, 4, 0, 0x42, 0, 0x0b}
	section(wasmbin.SectionCode, code)
	return out
}

// FuncsAndTypes is a minimal openhuman/1 module (oh_alloc returns 1024,
// oh_call returns 0) with funcs further empty () -> () functions and types
// types in all, the unused ones () -> () too (issue 39, finding 4: compile
// time grows with functions × types, in wazero and in the stack rewrite; 99k
// functions and 10k types, each within its own limit, took 15–32 s).
func FuncsAndTypes(funcs, types int) []byte {
	out := newRawModule()
	section := out.section
	types = max(types, 3)
	c := wasmbin.AppendULEB(nil, uint64(types))
	c = append(c, 0x60, 1, 0x7f, 1, 0x7f)       // 0: (i32) -> i32
	c = append(c, 0x60, 2, 0x7f, 0x7f, 1, 0x7e) // 1: (i32, i32) -> i64
	for i := 2; i < types; i++ {
		c = append(c, 0x60, 0, 0) // 2…: () -> ()
	}
	section(wasmbin.SectionType, c)
	fs := wasmbin.AppendULEB(nil, uint64(funcs+2))
	fs = append(fs, 0, 1)
	for i := 0; i < funcs; i++ {
		fs = append(fs, 2)
	}
	section(wasmbin.SectionFunction, fs)
	section(wasmbin.SectionMemory, []byte{1, 0, 1})
	section(wasmbin.SectionExport, abiExports(0))
	code := wasmbin.AppendULEB(nil, uint64(funcs+2))
	code = append(code, 5, 0, 0x41, 0x80, 0x08, 0x0b, 4, 0, 0x42, 0, 0x0b)
	for i := 0; i < funcs; i++ {
		code = append(code, 2, 0, 0x0b)
	}
	section(wasmbin.SectionCode, code)
	return out
}
