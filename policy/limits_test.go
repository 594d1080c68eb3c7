package policy

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

var (
	allocT = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
	callT  = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I64}}
	growOp = []byte{0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x1a} // ref.null func; i32.const 1; table.grow 0; drop
)

// limitModule is an openhuman/1 module with an optional table and oh_call's body.
func limitModule(t *testing.T, table func(*wasmbin.Builder), locals uint32, body []byte) *wasmbin.Module {
	t.Helper()
	var b wasmbin.Builder
	if table != nil {
		table(&b)
	}
	b.Memory(1)
	b.Func("oh_alloc", allocT, []byte{0x41, 0})
	b.FuncWithLocals("oh_call", callT, locals, wasmbin.I32, append(body, 0x42, 0))
	m, err := wasmbin.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func nested(depth int) []byte {
	var b []byte
	for i := 0; i < depth; i++ {
		b = append(b, 0x02, 0x40)
	}
	for i := 0; i < depth; i++ {
		b = append(b, 0x0b)
	}
	return b
}

func loops(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, 0x03, 0x40, 0x0b)
	}
	return b
}

// CheckLoad bounds tables (a growable table needs a maximum; tables count against
// memory_mib beside linear memory) and the cost of compiling (nesting depth, loops
// × locals, locals, body size), each refusal naming the limit.
func TestCheckLoadTablesAndCode(t *testing.T) {
	man := &Manifest{ABI: abi.Version, Tools: []ToolSpec{{Name: "x", Export: abi.ExportCall}}}
	grant := &Grant{Limits: Limits{MemoryMiB: 4}}
	cases := []struct {
		name string
		mod  *wasmbin.Module
		want string // "" = loads
	}{
		{"fixed table, no growth", limitModule(t, func(b *wasmbin.Builder) { b.Table(100, 0, false) }, 0, nil), ""},
		{"growable table with a maximum", limitModule(t, func(b *wasmbin.Builder) { b.Table(0, 65536, true) }, 0, growOp), ""},
		{"growable table without a maximum", limitModule(t, func(b *wasmbin.Builder) { b.Table(0, 0, false) }, 0, growOp),
			"table 0 declares no maximum size and the module grows tables (table.grow)"},
		{"table maximum above memory_mib", limitModule(t, func(b *wasmbin.Builder) { b.Table(0, 100_000_000, true) }, 0, growOp),
			"the tables can hold 100000000 entries (763 MiB at 8 bytes each) but memory_mib = 4"},
		{"table minimum above memory_mib", limitModule(t, func(b *wasmbin.Builder) { b.Table(1<<27, 0, false) }, 0, nil),
			"the tables can hold 134217728 entries"},
		{"memory and tables together", limitModule(t, func(b *wasmbin.Builder) { b.Table(0, 3<<17, true) }, 0, growOp), ""},
		{"nesting", limitModule(t, nil, 0, nested(MaxNestingDepth+1)), "function 1 nests blocks 4097 deep; the limit is 4096"},
		{"nesting at the limit", limitModule(t, nil, 0, nested(MaxNestingDepth)), ""},
		{"loops over locals", limitModule(t, nil, 40_000, loops(200)), "function 1 has 200 loops over 40002 locals"},
		{"locals", limitModule(t, nil, MaxLocals+1, nil), "function 1 declares 50001 locals; the limit is 50000"},
		{"body size", limitModule(t, nil, 0, loops(MaxFunctionBytes/3)), "function 1 has a body of"},
	}
	for _, c := range cases {
		err := CheckLoad(c.mod, man, grant, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal containing %q", c.name, err, c.want)
		}
	}
	// 3·2^17 entries take 3 MiB of the 4: the memory limit keeps one MiB (16 pages).
	withTable := limitModule(t, func(b *wasmbin.Builder) { b.Table(0, 3<<17, true) }, 0, growOp)
	if got := MemoryLimitPages(withTable, 4); got != 16 {
		t.Errorf("MemoryLimitPages = %d, want 16", got)
	}
	if got := MemoryLimitPages(limitModule(t, nil, 0, nil), 4); got != 64 {
		t.Errorf("MemoryLimitPages without tables = %d, want 64", got)
	}
	// A memory of 32 initial pages does not fit beside 3 MiB of tables in 4 MiB.
	var b wasmbin.Builder
	b.Table(0, 3<<17, true)
	b.Memory(32)
	b.Func("oh_alloc", allocT, []byte{0x41, 0})
	b.Func("oh_call", callT, append(append([]byte{}, growOp...), 0x42, 0))
	m, err := wasmbin.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckLoad(m, man, grant, nil); err == nil || !strings.Contains(err.Error(), "memory 0 declares 32 initial pages (2 MiB) but memory_mib = 4 allows 16 pages beside the tables' 3072 KiB") {
		t.Errorf("memory beside tables: %v", err)
	}
}
