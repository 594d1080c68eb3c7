// Package wasmgen builds the hostile modules that are not written in C: clang
// cannot express them (table.grow of funcref) or they are too large to commit
// (a million nested blocks). Each builder is the module's source; the committed
// .wasm files are these bytes packed with their .toml manifests, and
// examples/hostile_test.go checks they still match. The .toml manifests and .wasm
// files live in examples/hostile beside the C ones.
package wasmgen

import "github.com/openhuman/openhuman-core/internal/wasmbin"

var (
	allocType = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
	callType  = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I64}}
)

// TableGrowEntries is how many entries each table.grow of TableGrow asks for.
const TableGrowEntries = 100_000_000

// TableGrow is table_grow.wasm before packing: an openhuman/1 module with one
// funcref table of no declared maximum, whose oh_call runs
// table.grow(ref.null func, 100000000) three times (800 MB of host memory each
// in wazero, outside linear memory) and then returns 0.
func TableGrow() []byte {
	var b wasmbin.Builder
	b.Table(0, 0, false)
	b.Memory(1)
	b.Func("oh_alloc", allocType, []byte{0x41, 0}) // i32.const 0
	grow := []byte{0xd0, 0x70, 0x41}               // ref.null func; i32.const N
	grow = wasmbin.AppendSLEB(grow, TableGrowEntries)
	grow = append(grow, 0xfc, 0x0f, 0x00, 0x1a) // table.grow 0; drop
	var body []byte
	for i := 0; i < 3; i++ {
		body = append(body, grow...)
	}
	body = append(body, 0x42, 0) // i64.const 0
	b.Func("oh_call", callType, body)
	return b.Bytes()
}

// TableGrowBounded is TableGrow with a declared table maximum of max entries:
// each table.grow beyond it fails (returns -1) and oh_call traps (unreachable) if
// one ever succeeds, so a call that returns proves the maximum held.
func TableGrowBounded(max uint32) []byte {
	var b wasmbin.Builder
	b.Table(0, max, true)
	b.Memory(1)
	b.Func("oh_alloc", allocType, []byte{0x41, 0})
	grow := []byte{0xd0, 0x70, 0x41} // ref.null func; i32.const N
	grow = wasmbin.AppendSLEB(grow, TableGrowEntries)
	// table.grow 0; i32.const -1; i32.ne; if; unreachable; end
	grow = append(grow, 0xfc, 0x0f, 0x00, 0x41, 0x7f, 0x47, 0x04, 0x40, 0x00, 0x0b)
	var body []byte
	for i := 0; i < 3; i++ {
		body = append(body, grow...)
	}
	body = append(body, 0x42, 0)
	b.Func("oh_call", callType, body)
	return b.Bytes()
}

// SlowCompile is an openhuman/1 module of funcs functions that each pass the
// static limits (loops sequential loops over locals locals) but together take
// wazero's compiler a long time: the compile deadline, not the static gate, has to
// stop it.
func SlowCompile(funcs, loops, locals int) []byte {
	var b wasmbin.Builder
	b.Memory(1)
	b.Func("oh_alloc", allocType, []byte{0x41, 0})
	body := make([]byte, 0, 8*loops)
	for i := 0; i < loops; i++ {
		body = append(body, 0x03, 0x40, 0x20)
		body = wasmbin.AppendULEB(body, uint64(i%locals))
		body = append(body, 0x0d, 0x00, 0x0b)
	}
	for i := 0; i < funcs; i++ {
		b.FuncWithLocals("", wasmbin.FuncType{}, uint32(locals), wasmbin.I32, body)
	}
	b.Func("oh_call", callType, []byte{0x42, 0})
	return b.Bytes()
}

// DeepBlocks is deep_blocks.wasm before packing: an openhuman/1 module whose
// oh_call is depth nested empty blocks, then returns 0. A million levels make a
// 3 MB module that takes wazero's compiler minutes and a gigabyte; it is built
// by the tests rather than committed.
func DeepBlocks(depth int) []byte {
	var b wasmbin.Builder
	b.Memory(1)
	b.Func("oh_alloc", allocType, []byte{0x41, 0})
	body := make([]byte, 0, 3*depth+2)
	for i := 0; i < depth; i++ {
		body = append(body, 0x02, 0x40) // block (empty)
	}
	for i := 0; i < depth; i++ {
		body = append(body, 0x0b) // end
	}
	body = append(body, 0x42, 0)
	b.Func("oh_call", callType, body)
	return b.Bytes()
}

// LoopLocals is loop_locals.wasm before packing: an openhuman/1 module whose
// oh_call declares locals i32 locals and runs loops sequential loops, each
// reading another local: small (5 bytes a loop) but wazero's compiler takes time
// that grows with loops² × locals (50,000 × 50,000 did not finish in 9 minutes).
func LoopLocals(loops, locals int) []byte {
	var b wasmbin.Builder
	b.Memory(1)
	b.Func("oh_alloc", allocType, []byte{0x41, 0})
	body := make([]byte, 0, 8*loops+2)
	for i := 0; i < loops; i++ {
		body = append(body, 0x03, 0x40, 0x20) // loop; local.get
		body = wasmbin.AppendULEB(body, uint64(i%locals))
		body = append(body, 0x0d, 0x00, 0x0b) // br_if 0; end
	}
	body = append(body, 0x42, 0)
	b.FuncWithLocals("oh_call", callType, uint32(locals), wasmbin.I32, body)
	return b.Bytes()
}

// abiExports is the content of an export section naming what openhuman/1
// requires a module to export: memory 0, and oh_alloc and oh_call as
// functions first and first+1.
func abiExports(first int) []byte {
	ex := []byte{3}
	for i, name := range []string{"memory", "oh_alloc", "oh_call"} {
		ex = wasmbin.AppendULEB(ex, uint64(len(name)))
		ex = append(ex, name...)
		if i == 0 {
			ex = append(ex, byte(wasmbin.KindMemory), 0)
		} else {
			ex = append(ex, byte(wasmbin.KindFunc), byte(first+i-1))
		}
	}
	return ex
}

// rawModule is a module encoded by hand, section by section, for what
// wasmbin.Builder does not make.
type rawModule []byte

// newRawModule is the header of a WebAssembly 1 module.
func newRawModule() rawModule {
	return append(append(rawModule{}, wasmbin.Magic...), wasmbin.Version1...)
}

// section appends section id holding content c.
func (m *rawModule) section(id byte, c []byte) {
	*m = append(*m, id)
	*m = wasmbin.AppendULEB(*m, uint64(len(c)))
	*m = append(*m, c...)
}
