package wasmbin

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// stackProbe is a module exercising every exit the rewrite handles: return at
// several depths, br and br_if and br_table to the function's own label, multi-value
// results, and recursion.
func stackProbe() []byte {
	var b Builder
	b.Memory(1)
	i32 := FuncType{Params: []ValType{I32}, Results: []ValType{I32}}
	two := FuncType{Params: []ValType{I32}, Results: []ValType{I32, I64}}
	// f0 rec(n): if n == 0 return 0; return rec(n-1) + 1
	b.Func("rec", i32, []byte{
		0x20, 0, 0x45, 0x04, 0x40, 0x41, 0, 0x0f, 0x0b, // if (n==0) { return 0 }
		0x20, 0, 0x41, 1, 0x6b, 0x10, 0, 0x41, 1, 0x6a, 0x0f, // return rec(n-1)+1
	})
	// f1 exits(n): n=0 returns 10 from depth 1; n=1 br_if to the function label
	// with 20; else 30 through the final end.
	b.Func("exits", i32, []byte{
		0x02, 0x40, 0x02, 0x40, 0x20, 0, 0x0e, 2, 0, 1, 1, 0x0b,
		0x41, 10, 0x0f, 0x0b,
		0x41, 20, 0x20, 0, 0x41, 1, 0x46, 0x0d, 0,
		0x1a, 0x41, 30,
	})
	// f3 tbl(n): br_table to the function label with 5.
	b.Func("tbl", i32, []byte{0x41, 5, 0x20, 0, 0x0e, 1, 0, 0})
	// f2 pair(n): (n, n*2 as i64) via br to the function label from inside a loop
	b.Func("pair", two, []byte{
		0x03, 0x40, 0x20, 0, 0x20, 0, 0xad, 0x42, 2, 0x7e, 0x0c, 1, 0x0b,
		0x41, 0, 0x42, 0,
	})
	return b.Bytes()
}

func instantiate(t *testing.T, mod []byte) (api.Module, func()) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	cm, err := rt.CompileModule(ctx, mod)
	if err != nil {
		rt.Close(ctx)
		t.Fatalf("compile: %v", err)
	}
	m, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig())
	if err != nil {
		rt.Close(ctx)
		t.Fatalf("instantiate: %v", err)
	}
	return m, func() { rt.Close(ctx) }
}

// The instrumented module gives the original's results on every exit kind,
// the counter is back to 0 after each call, and deep recursion traps.
func TestInstrumentStackSameResults(t *testing.T) {
	orig := stackProbe()
	inst, info, err := InstrumentStack(orig, StackOptions{Budget: 1 << 20, CounterExport: "stack_used"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Functions != 4 || info.AddedTypes != 1 {
		t.Fatalf("info %+v", info)
	}
	mo, closeO := instantiate(t, orig)
	defer closeO()
	mi, closeI := instantiate(t, inst)
	defer closeI()
	ctx := context.Background()
	counter := mi.ExportedGlobal("stack_used")
	if counter == nil {
		t.Fatal("no counter export")
	}
	for _, c := range []struct {
		fn   string
		args []uint64
	}{
		{"rec", []uint64{0}}, {"rec", []uint64{5}}, {"rec", []uint64{100}},
		{"exits", []uint64{0}}, {"exits", []uint64{1}}, {"exits", []uint64{7}},
		{"pair", []uint64{3}}, {"pair", []uint64{0}}, {"tbl", []uint64{0}}, {"tbl", []uint64{9}},
	} {
		want, err := mo.ExportedFunction(c.fn).Call(ctx, c.args...)
		if err != nil {
			t.Fatalf("%s%v original: %v", c.fn, c.args, err)
		}
		got, err := mi.ExportedFunction(c.fn).Call(ctx, c.args...)
		if err != nil {
			t.Fatalf("%s%v instrumented: %v", c.fn, c.args, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s%v = %v, original %v", c.fn, c.args, got, want)
		}
		if v := counter.Get(); v != 0 {
			t.Errorf("%s%v left the counter at %d", c.fn, c.args, v)
		}
	}
	// rec(n) uses n+1 frames of the same weight: the budget stops it.
	w := uint64(info.MaxWeight)
	small, _, err := InstrumentStack(orig, StackOptions{Budget: uint32(10 * w), CounterExport: "stack_used"})
	if err != nil {
		t.Fatal(err)
	}
	ms, closeS := instantiate(t, small)
	defer closeS()
	if _, err := ms.ExportedFunction("rec").Call(ctx, 8); err != nil {
		t.Fatalf("rec(8) in a 10-frame budget: %v", err)
	}
	_, err = ms.ExportedFunction("rec").Call(ctx, 20)
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("rec(20) in a 10-frame budget: %v", err)
	}
	if v := ms.ExportedGlobal("stack_used").Get(); v <= uint64(10*w) {
		t.Fatalf("after the trap the counter is %d, not over the budget %d", v, 10*w)
	}
}

// Code that references the counter's index (invalid before the rewrite) is
// refused; tail calls are refused.
func TestInstrumentStackRefuses(t *testing.T) {
	var b Builder
	b.Func("f", FuncType{}, []byte{0x41, 0, 0x24, 0}) // global.set 0: no globals
	if _, _, err := InstrumentStack(b.Bytes(), StackOptions{Budget: 100}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("global.set of the counter index: %v", err)
	}
	// A module exporting the counter's name keeps its export; the counter's
	// name gets a "_".
	var d Builder
	d.Func("stack_used", FuncType{}, nil)
	out, info, err := InstrumentStack(d.Bytes(), StackOptions{Budget: 100, CounterExport: "stack_used"})
	if err != nil || info.CounterExport != "stack_used_" {
		t.Fatalf("name taken: %q, %v", info.CounterExport, err)
	}
	if m, err := Parse(out); err != nil || len(m.Exports) != 2 || m.Exports[0].Name != "stack_used" || m.Exports[1].Kind != KindGlobal {
		t.Fatalf("exports %+v, %v", m.Exports, err)
	}
	// A code section with bytes after its last body (wazero refuses it) is
	// invalid for Code and for the rewrite alike (found by FuzzInstrumentStack).
	junk := []byte("\x00asm\x01\x00\x00\x00\n\x13\x00000000000000000000")
	if _, _, err := InstrumentStack(junk, StackOptions{Budget: 100}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("trailing code bytes: %v", err)
	}
	if m, err := Parse(junk); err != nil {
		t.Fatal(err)
	} else if _, err := m.Code(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Code with trailing bytes: %v", err)
	}
	var c Builder
	c.Func("f", FuncType{}, []byte{0x12, 0}) // return_call 0
	if _, _, err := InstrumentStack(c.Bytes(), StackOptions{Budget: 100}); !errors.Is(err, ErrStackRewrite) {
		t.Fatalf("tail call: %v", err)
	}
}

// Every module of the repository instruments into a module wazero compiles,
// with the same imports and exports (plus the counter's).
func TestInstrumentStackRepositoryModules(t *testing.T) {
	var files []string
	for _, g := range []string{"../../examples/*/*.wasm", "../../tools-wasm/modules/*.wasm.gz", "../../examples/testdata/*.wasm"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	ctx := context.Background()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			mod := readModule(t, f)
			inst, info, err := InstrumentStack(mod, StackOptions{Budget: 1 << 20, CounterExport: "openhuman_stack"})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := Parse(mod)
			b, err := Parse(inst)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(a.Imports, b.Imports, func(x, y Import) bool { return x.String() == y.String() && x.Kind == y.Kind }) {
				t.Fatalf("imports changed")
			}
			if len(b.Exports) != len(a.Exports)+1 || !slices.Equal(a.Exports, b.Exports[:len(a.Exports)]) {
				t.Fatalf("exports changed: %v -> %v", a.Exports, b.Exports)
			}
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			if _, err := rt.CompileModule(ctx, inst); err != nil {
				t.Fatalf("wazero refuses the instrumented module: %v", err)
			}
			t.Logf("%d functions, largest frame weight %d slots (function %d)", info.Functions, info.MaxWeight, info.MaxWeightFunc)
		})
	}
}

func readModule(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(f, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// frameShape is a recursive function body whose frame the engine sizes in a
// particular way; rec is function 0 (param i32) (result i32) and counts its depth
// in global 0 (exported as "depth").
type frameShape struct {
	name   string
	locals uint32
	body   []byte
	// helper, when set, is function 1: () -> helperResults i32 values.
	helper        []byte
	helperResults int
}

func frameShapes() []frameShape {
	depth := []byte{0x23, 0, 0x41, 1, 0x6a, 0x24, 0} // depth++
	recur := []byte{0x20, 0, 0x41, 1, 0x6a, 0x10, 0} // rec(n+1)
	var shapes []frameShape
	// Plain recursion.
	shapes = append(shapes, frameShape{name: "plain", body: append(append(slices.Clone(depth), recur...), 0x41, 1, 0x6a)})
	// 2,000 values live across the call (each spilled to its own slot).
	wide := slices.Clone(depth)
	for i := 0; i < 2000; i++ {
		wide = append(wide, 0x20, 0, 0x41)
		wide = AppendSLEB(wide, int64(i))
		wide = append(wide, 0x6a)
	}
	wide = append(wide, recur...)
	for i := 0; i < 2000; i++ {
		wide = append(wide, 0x6a)
	}
	shapes = append(shapes, frameShape{name: "2000 live values", body: wide})
	// 2,000 locals set before the call and summed after it.
	const nl = 2000
	loc := slices.Clone(depth)
	for i := 1; i <= nl; i++ {
		loc = append(loc, 0x20, 0, 0x41)
		loc = AppendSLEB(loc, int64(i))
		loc = append(loc, 0x6a, 0x21)
		loc = AppendULEB(loc, uint64(i))
	}
	loc = append(loc, recur...)
	for i := 1; i <= nl; i++ {
		loc = append(loc, 0x20)
		loc = AppendULEB(loc, uint64(i))
		loc = append(loc, 0x6a)
	}
	shapes = append(shapes, frameShape{name: "2000 locals", locals: nl, body: loc})
	// Block parameters: K locals changed inside B nested loops that may repeat
	// (global 1 is 0 at run time, which the compiler cannot know), then live
	// across the call: each loop header holds a value of every local.
	const k, bl = 150, 60
	phi := slices.Clone(depth)
	for j := 0; j < bl; j++ {
		phi = append(phi, 0x03, 0x40)
	}
	for i := 1; i <= k; i++ {
		phi = append(phi, 0x20)
		phi = AppendULEB(phi, uint64(i))
		phi = append(phi, 0x20, 0, 0x6a, 0x21)
		phi = AppendULEB(phi, uint64(i))
	}
	for j := 0; j < bl; j++ {
		phi = append(phi, 0x23, 1, 0x0d, 0, 0x0b) // br_if 0 (global 1); end
	}
	phi = append(phi, recur...)
	for i := 1; i <= k; i++ {
		phi = append(phi, 0x20)
		phi = AppendULEB(phi, uint64(i))
		phi = append(phi, 0x6a)
	}
	shapes = append(shapes, frameShape{name: "150 locals in 60 loops", locals: k, body: phi})
	// 1,000 v128 values live across the call (16-byte spill slots).
	vec := slices.Clone(depth)
	for i := 0; i < 1000; i++ {
		vec = append(vec, 0x20, 0, 0x41)
		vec = AppendSLEB(vec, int64(i))
		vec = append(vec, 0x6a, 0xfd, 17) // i32x4.splat
	}
	vec = append(vec, recur...)
	vec = append(vec, 0x21, 1) // local.set 1
	for i := 1; i < 1000; i++ {
		vec = append(vec, 0xfd, 81) // v128.xor
	}
	vec = append(vec, 0xfd, 27, 0, 0x20, 1, 0x6a) // i32x4.extract_lane 0; + local 1
	shapes = append(shapes, frameShape{name: "1000 live v128 values", locals: 1, body: vec})
	// 2,000 loads (each a bounds check and an address: several machine values)
	// live across the call, and 2,000 divisions (i32.div_u: fixed registers).
	ld := slices.Clone(depth)
	for i := 0; i < 2000; i++ {
		ld = append(ld, 0x41, 0, 0x28, 2)
		ld = AppendULEB(ld, uint64(4*i))              // i32.load offset=4i
		ld = append(ld, 0x20, 0, 0x41, 3, 0x6a, 0x6e) // (n+3); i32.div_u
	}
	ld = append(ld, recur...)
	for i := 0; i < 2000; i++ {
		ld = append(ld, 0x6a)
	}
	shapes = append(shapes, frameShape{name: "2000 loads and divisions", body: ld})
	// 20 calls of a function with 100 results: 2,000 values from 20
	// instructions, live across the call.
	var helper []byte
	for i := 0; i < 100; i++ {
		helper = append(helper, 0x41, byte(i))
	}
	mv := slices.Clone(depth)
	for i := 0; i < 20; i++ {
		mv = append(mv, 0x10, 1)
	}
	mv = append(mv, recur...)
	for i := 0; i < 2000; i++ {
		mv = append(mv, 0x6a)
	}
	shapes = append(shapes, frameShape{name: "20 calls of 100 results", body: mv, helper: helper, helperResults: 100})
	return shapes
}

// frameModule is a module of one recursive function of the shape, with two
// mutable globals (depth, and a zero) and rec exported.
func frameModule(s frameShape) []byte {
	var b Builder
	b.Memory(1)
	i32 := FuncType{Params: []ValType{I32}, Results: []ValType{I32}}
	b.FuncWithLocals("rec", i32, s.locals, I32, s.body)
	if s.helper != nil {
		b.Func("", FuncType{Results: slices.Repeat([]ValType{I32}, s.helperResults)}, s.helper)
	}
	mod := b.Bytes()
	// Add the globals section (two mutable i32) and export global 0 as "depth".
	m, _ := Parse(mod)
	var out []byte
	out = append(out, mod[:8]...)
	for _, sec := range m.Sections {
		if sec.ID == SectionExport {
			g := []byte{2, byte(I32), 1, 0x41, 0, 0x0b, byte(I32), 1, 0x41, 0, 0x0b}
			out = append(out, SectionGlobal)
			out = AppendULEB(out, uint64(len(g)))
			out = append(out, g...)
			c := AppendULEB(nil, uint64(len(m.Exports)+1))
			r := &reader{b: mod, pos: sec.Start, end: sec.End}
			_, _ = r.u32("")
			c = append(c, mod[r.pos:sec.End]...)
			c = append(c, 5, 'd', 'e', 'p', 't', 'h', byte(KindGlobal), 0)
			out = append(out, SectionExport)
			out = AppendULEB(out, uint64(len(c)))
			out = append(out, c...)
			continue
		}
		out = append(out, mod[sec.Offset:sec.End]...)
	}
	return out
}

// TestFrameWeightBoundsEngineFrames measures the engine's real frame for each
// shape — wazero's stack (≈ 84 MB when it refuses to grow past its 50 MB
// ceiling) over the depth reached — and checks the weight InstrumentStack gives
// the function bounds it. It allocates ≈ 170 MB per shape.
func TestFrameWeightBoundsEngineFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs each shape to the engine's 50 MB stack ceiling")
	}
	ctx := context.Background()
	for _, s := range frameShapes() {
		mod := frameModule(s)
		_, info, err := InstrumentStack(mod, StackOptions{Budget: 1 << 30})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		m, closeM := instantiate(t, mod)
		_, err = m.ExportedFunction("rec").Call(ctx, 0)
		depth := m.ExportedGlobal("depth").Get()
		closeM()
		if err == nil || !strings.Contains(err.Error(), "stack overflow") {
			t.Fatalf("%s: %v", s.name, err)
		}
		// The stack that overflowed: 10240 bytes doubled until past 50,000,000.
		stack := uint64(10240)
		for stack <= 50_000_000 {
			stack *= 2
		}
		frame := float64(stack) / float64(depth)
		weight := float64(info.MaxWeight) * 8
		t.Logf("%-24s depth %8d: engine frame ≈ %7.0f bytes, weight %7.0f bytes (%.1f×)", s.name, depth, frame, weight, weight/frame)
		if frame > weight {
			t.Errorf("%s: the engine's frame (≈ %.0f bytes) is larger than its weight (%.0f bytes)", s.name, frame, weight)
		}
	}
}

// FuzzInstrumentStack: for any module, the rewrite either refuses it or gives a
// module that parses, and wazero (validating, interpreter) accepts the
// instrumented module exactly when it accepts the original.
func FuzzInstrumentStack(f *testing.F) {
	f.Add(stackProbe())
	for _, s := range frameShapes() {
		f.Add(frameModule(s))
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, mod []byte) {
		inst, _, err := InstrumentStack(mod, StackOptions{Budget: 1000, CounterExport: "c"})
		if err != nil {
			return
		}
		if _, err := Parse(inst); err != nil {
			t.Fatalf("the instrumented module does not parse: %v", err)
		}
		// What the loader's static limits refuse before wazero sees it (a
		// billion locals) is not compiled here either.
		m, _ := Parse(mod)
		if cs, err := m.Code(); err != nil || cs.MaxLocals > 50_000 || cs.MaxDepth > 4096 || m.Counts.Globals > 10_000 ||
			m.Counts.Data > 10_000 || m.Counts.Elements > 10_000 || len(m.Types) > 10_000 {
			return
		}
		for _, l := range m.Memories {
			if l.Min > 1000 {
				return
			}
		}
		for _, tb := range m.Tables {
			if tb.Min > 100_000 {
				return
			}
		}
		a, errA := rt.CompileModule(ctx, mod)
		b, errB := rt.CompileModule(ctx, inst)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("wazero: original %v, instrumented %v", errA, errB)
		}
		if a != nil {
			a.Close(ctx)
		}
		if b != nil {
			b.Close(ctx)
		}
	})
}

// BenchmarkInstrumentStackFirstParty is the rewrite's cost on the first-party
// memory module (C).
func BenchmarkInstrumentStackFirstParty(b *testing.B) {
	mod := readModule(&testing.T{}, "../../tools-wasm/modules/memory.wasm.gz")
	b.SetBytes(int64(len(mod)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := InstrumentStack(mod, StackOptions{Budget: 1 << 21, CounterExport: "c"}); err != nil {
			b.Fatal(err)
		}
	}
}

// The rewrite is deterministic: the compilation cache's key (the bytes wazero
// compiles) is the same at every start.
func TestInstrumentStackDeterministic(t *testing.T) {
	mod := readModule(t, "../../tools-wasm/modules/memory.wasm.gz")
	a, _, err := InstrumentStack(mod, StackOptions{Budget: 1 << 21, CounterExport: "c"})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := InstrumentStack(mod, StackOptions{Budget: 1 << 21, CounterExport: "c"})
	c, _, _ := InstrumentStack(mod, StackOptions{Budget: 1 << 20, CounterExport: "c"})
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatal("the same budget must give the same bytes, another budget other bytes")
	}
}
