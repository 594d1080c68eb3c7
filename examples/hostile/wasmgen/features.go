package wasmgen

import "github.com/openhuman/openhuman-core/internal/wasmbin"

// Feature is a WebAssembly proposal wazero does not run with this host's
// settings (issue 29, finding 9: the audit said WOULD LOAD for each).
type Feature string

// The features Uses builds a module for.
const (
	MultiMemory Feature = "multi-memory"
	Memory64    Feature = "memory64"
	Threads     Feature = "threads"
	TailCalls   Feature = "tail calls"
	Exceptions  Feature = "exceptions"
	// WASIWrongType imports wasi_snapshot_preview1.fd_write as (i32) -> i32.
	WASIWrongType Feature = "a WASI import of the wrong type"
)

// Uses is a minimal openhuman/1 module (oh_alloc returns 1024, oh_call returns
// 0) that uses feature, encoded by hand (wasmbin.Builder only makes what every
// engine runs).
func Uses(feature Feature) []byte {
	out := newRawModule()
	section := out.section
	// Types: 0 (i32) -> i32, 1 (i32, i32) -> i64.
	section(wasmbin.SectionType, []byte{2, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 2, 0x7f, 0x7f, 1, 0x7e})
	imports := 0
	if feature == WASIWrongType {
		imp := []byte{1}
		for _, s := range []string{"wasi_snapshot_preview1", "fd_write"} {
			imp = wasmbin.AppendULEB(imp, uint64(len(s)))
			imp = append(imp, s...)
		}
		section(wasmbin.SectionImport, append(imp, byte(wasmbin.KindFunc), 0))
		imports = 1
	}
	section(wasmbin.SectionFunction, []byte{2, 0, 1})
	mem := []byte{1, 0, 1} // one memory of one page
	switch feature {
	case MultiMemory:
		mem = []byte{2, 0, 1, 0, 1}
	case Memory64:
		mem = []byte{1, 0x04, 1}
	case Threads:
		mem = []byte{1, 0x03, 1, 1} // shared, 1..1 pages
	}
	section(wasmbin.SectionMemory, mem)
	section(wasmbin.SectionExport, abiExports(imports))
	call := []byte{0x42, 0} // i64.const 0
	switch feature {
	case Threads:
		call = []byte{0x41, 0, 0xfe, 0x10, 2, 0, 0x1a, 0x42, 0} // i32.atomic.load; drop
	case TailCalls:
		call = []byte{0x41, 0, 0x41, 0, 0x12, byte(imports + 1)} // return_call oh_call
	case Exceptions:
		call = []byte{0x06, 0x40, 0x0b, 0x42, 0} // try end
	}
	body := func(instrs []byte) []byte {
		b := append([]byte{0}, instrs...)
		b = append(b, 0x0b)
		return append(wasmbin.AppendULEB(nil, uint64(len(b))), b...)
	}
	code := []byte{2}
	code = append(code, body([]byte{0x41, 0x80, 0x08})...)
	code = append(code, body(call)...)
	section(wasmbin.SectionCode, code)
	return out
}
