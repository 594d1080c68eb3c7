package wasmbin

import (
	"errors"
	"strings"
	"testing"
)

var (
	allocT = FuncType{Params: []ValType{I32}, Results: []ValType{I32}}
	callT  = FuncType{Params: []ValType{I32, I32}, Results: []ValType{I64}}
)

// Code counts nesting depth, loops, locals and body sizes, finds table.grow, and
// Parse records the tables with their limits.
func TestCodeStats(t *testing.T) {
	var b Builder
	b.Table(2, 10, true)
	b.Memory(1)
	b.Func("oh_alloc", allocT, []byte{0x41, 0})
	// block { loop { if (i32.const 0) { } } } ; ref.null func; i32.const 5;
	// table.grow 0; drop; v128.const; drop; i64.const 0
	body := []byte{0x02, 0x40, 0x03, 0x40, 0x41, 0x00, 0x04, 0x40, 0x0b, 0x0b, 0x0b,
		0xd0, 0x70, 0x41, 0x05, 0xfc, 0x0f, 0x00, 0x1a,
		0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0x1a,
		0x42, 0x00}
	b.FuncWithLocals("oh_call", callT, 7, I64, body)
	m, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tables) != 1 || m.Tables[0].Min != 2 || m.Tables[0].Max != 10 || !m.Tables[0].HasMax || m.Tables[0].Elem != FuncRef {
		t.Fatalf("tables %+v", m.Tables)
	}
	cs, err := m.Code()
	if err != nil {
		t.Fatal(err)
	}
	if cs.Functions != 2 || cs.MaxDepth != 3 || cs.MaxDepthFunc != 1 || !cs.TableGrow || cs.MaxLocals != 7 || cs.MaxLocalsFunc != 1 {
		t.Fatalf("stats %+v", cs)
	}
	// One loop over 7 locals + 2 parameters: 1² × (9 + 10).
	if cs.MaxLoopCost != 19 || cs.MaxLoopCostLoops != 1 || cs.MaxLoopCostLocals != 9 {
		t.Fatalf("loop cost %+v", cs)
	}
	if cs.MaxBodyBytes != len(body)+1+3 || cs.MaxBodyFunc != 1 { // + local decls and the final end
		t.Fatalf("body size %d (func %d), want %d", cs.MaxBodyBytes, cs.MaxBodyFunc, len(body)+4)
	}

	// A million nested blocks decode in one pass.
	deep := make([]byte, 0, 3<<20)
	for i := 0; i < 1<<20; i++ {
		deep = append(deep, 0x02, 0x40)
	}
	for i := 0; i < 1<<20; i++ {
		deep = append(deep, 0x0b)
	}
	var d Builder
	d.Func("f", FuncType{}, deep)
	dm, err := Parse(d.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := dm.Code(); err != nil || cs.MaxDepth != 1<<20 || cs.TableGrow {
		t.Fatalf("deep: %+v %v", cs, err)
	}
}

// A body Code cannot decode is an error naming the function and offset; Parse
// itself (which tools that only edit custom sections use) still succeeds.
func TestCodeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"unknown opcode", []byte{0x27}, "unknown opcode 0x27"},
		{"unknown 0xfc", []byte{0xfc, 0x40}, "unknown opcode 0xfc 64"},
		{"unclosed block", []byte{0x02, 0x40}, "ends without its final end"},
		{"end too many", []byte{0x0b, 0x0b}, "bytes after its final end"},
		{"truncated const", []byte{0x44, 0, 0}, "truncated f64.const"},
		{"br_table count", []byte{0x0e, 0xff, 0xff, 0x03}, "br_table label count"},
	} {
		var b Builder
		b.Func("f", FuncType{}, c.body)
		m, err := Parse(b.Bytes())
		if err != nil {
			t.Fatalf("%s: Parse: %v", c.name, err)
		}
		_, err = m.Code()
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "function 0") {
			t.Errorf("%s: %v, want an ErrInvalid naming function 0 and %q", c.name, err, c.want)
		}
	}
}
