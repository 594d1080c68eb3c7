package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// recursionModule is an openhuman/1 module whose oh_call calls rec(0), which
// calls itself without end. With live > 0 each frame keeps live values across
// the recursive call (each in its own spill slot); with locals > 0 it sets that
// many locals before the call and sums them after it.
func recursionModule(live, locals int) []byte {
	var b wasmbin.Builder
	b.Memory(1)
	alloc := wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
	call := wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I64}}
	b.Func(abi.ExportAlloc, alloc, []byte{0x41, 0x80, 0x08}) // i32.const 1024
	var body []byte
	for i := 0; i < live; i++ {
		body = append(body, 0x20, 0, 0x41, byte(i&0x3f), 0x6a) // n + (i mod 64)
	}
	for i := 1; i <= locals; i++ {
		body = append(body, 0x20, 0, 0x21)
		body = appendULEB(body, uint64(i)) // local i = n
	}
	body = append(body, 0x20, 0, 0x41, 1, 0x6a, 0x10, 1) // rec(n+1), function 1
	for i := 0; i < live; i++ {
		body = append(body, 0x6a)
	}
	for i := 1; i <= locals; i++ {
		body = append(body, 0x20)
		body = appendULEB(body, uint64(i))
		body = append(body, 0x6a)
	}
	b.FuncWithLocals("", alloc, uint32(locals), wasmbin.I32, body)
	b.Func(abi.ExportCall, call, []byte{0x41, 0, 0x10, 1, 0x1a, 0x42, 0}) // rec(0); drop; 0
	return b.Bytes()
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// recursionCost loads wasm under memory_mib = 1, makes one call to it and
// returns its error and the Go heap the call allocated (TotalAlloc: every
// stack the engine grew to, collected or not) and the peak of HeapSys.
func recursionCost(t *testing.T, name string, wasm []byte) (err error, alloc, sys uint64) {
	t.Helper()
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{name: wasm}),
		Policy: policyFor(t, entry(name, wasm)), CacheDir: "-"})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	goruntime.GC()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = h.Call(ctx, Call{Tool: "recurse", Arguments: json.RawMessage(`{}`), Client: "mcp:test", RequestID: "r-1"})
	goruntime.ReadMemStats(&after)
	h.Close(context.Background())
	return err, after.TotalAlloc - before.TotalAlloc, after.HeapSys - before.HeapSys
}

// TestStackBounded (finding 3, the call stack): a module that recurses without
// end — with small frames, with 2,000 live values or 2,000 locals per frame —
// fails under memory_mib = 1 with the reason a reviewer reads, after
// allocating at most 48 MiB of Go heap (the budget is 16 MiB of engine stack;
// growing it by doubling allocates ≈ 2.6× that at most, and these frames are
// lighter than their weights).
// Without the instrumentation the same plain module costs ≈ 168 MB (wazero's
// stack doubles to ≈ 84 MB before its 50 MB ceiling stops it).
func TestStackBounded(t *testing.T) {
	man := manifest(abi.Version, nil, "timeout_ms = 10000\nmemory_mib = 1", tool{name: "recurse"})
	const bound = 48 << 20
	for _, c := range []struct {
		name          string
		live, locals  int
		measureEngine bool
	}{
		{"plain", 0, 0, true},
		{"live", 2000, 0, false},
		{"locals", 0, 2000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			wasm := pack(t, recursionModule(c.live, c.locals), man)
			err, alloc, sys := recursionCost(t, c.name+".wasm", wasm)
			var se *StackExceeded
			if !errors.As(err, &se) {
				t.Fatalf("want a StackExceeded, got %v", err)
			}
			want := fmt.Sprintf("tool recurse: wasm call stack exceeded the module's budget (%d frames of its largest function, %d KiB)", se.Frames, stackBudgetSlots/128)
			if !strings.Contains(err.Error(), want) || se.Frames == 0 {
				t.Errorf("error %q\nlacks %q", err, want)
			}
			t.Logf("%s: the call allocated %.1f MiB (HeapSys %+.1f MiB): %v", c.name, float64(alloc)/(1<<20), float64(int64(sys))/(1<<20), err)
			if alloc > bound {
				t.Errorf("the call allocated %d MiB, over %d MiB", alloc>>20, bound>>20)
			}
			if !c.measureEngine {
				return
			}
			saved := stackBudgetSlots
			stackBudgetSlots = 0 // compiled as written
			defer func() { stackBudgetSlots = saved }()
			err, raw, rawSys := recursionCost(t, c.name+".wasm", wasm)
			t.Logf("%s without the bound: %.1f MiB allocated (HeapSys %+.1f MiB): %v", c.name, float64(raw)/(1<<20), float64(int64(rawSys))/(1<<20), err)
			if raw < 4*alloc || !strings.Contains(err.Error(), "wasm call stack overflowed the engine's ceiling") {
				t.Errorf("without the bound the call allocated %d MiB (with it %d MiB), error %v", raw>>20, alloc>>20, err)
			}
		})
	}
}

// A call that completes leaves the counter at 0 and the instance is reused;
// the host resets it before each call regardless.
func TestStackCounterBetweenCalls(t *testing.T) {
	wasm := echoModule(t, "")
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", wasm)}})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := h.Call(ctx, Call{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), Client: "mcp:test"}); err != nil {
			t.Fatal(err)
		}
	}
	m := findModule(h, "echo.wasm")
	in, err := h.pool.acquire(ctx, m, "mcp:test")
	if err != nil {
		t.Fatal(err)
	}
	defer h.pool.release(in, true)
	if in.stack == nil {
		t.Fatal("the instance has no stack counter: the module was not instrumented")
	}
	if in.calls == 0 {
		t.Fatal("a fresh instance: the calls' instance was not kept")
	}
	if v := in.stack.Get(); v != 0 {
		t.Errorf("counter %d after completed calls, want 0", v)
	}
}

// BenchmarkInstrumentStack is the rewrite's cost on the largest Go guest of
// runtime/testdata/guests (what the loader pays per module, before compiling
// or looking up the compilation cache).
func BenchmarkInstrumentStack(b *testing.B) {
	var wasm []byte
	var name string
	for _, g := range []string{"echo", "probe", "sneaky", "websneak"} {
		if w := guest(b, g); len(w) > len(wasm) {
			wasm, name = w, g
		}
	}
	_, info, err := wasmbin.InstrumentStack(wasm, wasmbin.StackOptions{Budget: stackBudgetSlots})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d bytes, %d functions, largest frame weight %d slots (%d frames in the budget)", name, len(wasm), info.Functions, info.MaxWeight, stackBudgetSlots/info.MaxWeight)
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := wasmbin.InstrumentStack(wasm, wasmbin.StackOptions{Budget: stackBudgetSlots, CounterExport: stackUsedExport}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStackCallOverhead is a pooled echo call (Go guest) and a
// memory.search call (first-party C module) with the stack bound and with
// the module compiled as written, alternated.
func BenchmarkStackCallOverhead(b *testing.B) {
	for _, round := range []string{"1", "2"} {
		for _, bounded := range []bool{true, false} {
			mode := "bounded"
			if !bounded {
				mode = "unbounded"
			}
			b.Run("echo/"+mode+"/"+round, func(b *testing.B) {
				saved := stackBudgetSlots
				if !bounded {
					stackBudgetSlots = 0
				}
				defer func() { stackBudgetSlots = saved }()
				h, _ := newHost(b, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(b, ""))}, CacheDir: "-"})
				benchCalls(b, h, Call{Tool: "echo", Arguments: []byte(`{"q":1}`)})
			})
			b.Run("search/"+mode+"/"+round, func(b *testing.B) {
				saved := stackBudgetSlots
				if !bounded {
					stackBudgetSlots = 0
				}
				defer func() { stackBudgetSlots = saved }()
				h, _ := newHost(b, Options{Reader: memory.Default(benchReader(b)), Builtins: firstPartyBuiltins(b), CacheDir: "-"})
				benchCalls(b, h, Call{Tool: "memory.search", Arguments: []byte(`{"query":"` + benchQuery + `","k":10}`), Client: "mcp:bench"})
			})
		}
	}
}

func benchCalls(b *testing.B, h *Host, c Call) {
	ctx := context.Background()
	if err := h.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := h.Call(ctx, c); err != nil {
		b.Fatal(err)
	}
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := h.Call(ctx, c); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, d)
}

// TestInstrumentStackGuests: the rewrite of every Go guest and generated
// hostile module validates in wazero (compiled by the interpreter, which
// validates as the compiler does) and keeps the module's imports and exports;
// the features the loader refuses are refused by the rewrite too when they
// would skip an epilogue (tail calls, exceptions).
func TestInstrumentStackGuests(t *testing.T) {
	mods := map[string][]byte{}
	for _, g := range []string{"echo", "probe", "sneaky", "websneak", "extism_search", "fswrite"} {
		mods["guest "+g] = guest(t, g)
	}
	for _, k := range []wasmgen.NestingKind{wasmgen.FromStart, wasmgen.FromInitialize, wasmgen.FromAllocRequest, wasmgen.FromAllocReply} {
		mods[fmt.Sprintf("nesting %d", k)] = wasmgen.Nesting(k)
	}
	mods["table grow"] = wasmgen.TableGrow()
	mods["slow compile"] = wasmgen.SlowCompile(3, 50, 50)
	mods["deep blocks"] = wasmgen.DeepBlocks(4000)
	mods["loop locals"] = wasmgen.LoopLocals(100, 100)
	mods["host loop"] = wasmgen.HostLoop(abi.FnMemorySearch, 10)
	mods["recursion"] = recursionModule(10, 10)
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	for name, mod := range mods {
		inst, info, err := wasmbin.InstrumentStack(mod, wasmbin.StackOptions{Budget: stackBudgetSlots, CounterExport: stackUsedExport})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		a, _ := wasmbin.Parse(mod)
		b, err := wasmbin.Parse(inst)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fmt.Sprint(a.Imports) != fmt.Sprint(b.Imports) || fmt.Sprint(a.Exports) != fmt.Sprint(b.Exports[:len(b.Exports)-1]) ||
			b.Exports[len(b.Exports)-1].Name != stackUsedExport {
			t.Errorf("%s: imports or exports changed", name)
		}
		cm, err := rt.CompileModule(ctx, inst)
		if err != nil {
			t.Errorf("%s: wazero refuses the instrumented module: %v", name, err)
			continue
		}
		cm.Close(ctx)
		t.Logf("%-22s %6d functions, largest frame %6d slots (%d frames in the budget)", name, info.Functions, info.MaxWeight, stackBudgetSlots/max(info.MaxWeight, 1))
	}
	for _, f := range []wasmgen.Feature{wasmgen.TailCalls, wasmgen.Exceptions} {
		if _, _, err := wasmbin.InstrumentStack(wasmgen.Uses(f), wasmbin.StackOptions{Budget: stackBudgetSlots}); !errors.Is(err, wasmbin.ErrStackRewrite) {
			t.Errorf("%s: %v, want ErrStackRewrite", f, err)
		}
	}
}

// Under the interpreter (EngineInterpreter) the budget stops a module with
// large frames, with the same reason: the interpreter's own ceiling is 2,000
// frames whatever their size, and a frame holds its locals (8 bytes each) on
// a []uint64 stack — 5,000 locals per frame reached ≈ 80 MB at that ceiling.
// Small frames meet the 2,000-frame ceiling first ("overflowed the engine's
// ceiling").
func TestStackBoundedUnderTheInterpreter(t *testing.T) {
	saved := testEngine
	testEngine = EngineInterpreter
	defer func() { testEngine = saved }()
	man := manifest(abi.Version, nil, "timeout_ms = 10000\nmemory_mib = 1", tool{name: "recurse"})
	wasm := pack(t, recursionModule(0, 5000), man)
	err, alloc, _ := recursionCost(t, "interp.wasm", wasm)
	var se *StackExceeded
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "wasm call stack exceeded the module's budget") {
		t.Fatalf("want a StackExceeded, got %v", err)
	}
	t.Logf("interpreter: the call allocated %.1f MiB: %v", float64(alloc)/(1<<20), err)
	if alloc > 48<<20 {
		t.Errorf("the call allocated %d MiB", alloc>>20)
	}
	budget := stackBudgetSlots
	stackBudgetSlots = 0
	defer func() { stackBudgetSlots = budget }()
	err, raw, _ := recursionCost(t, "interp.wasm", wasm)
	t.Logf("interpreter without the bound: %.1f MiB allocated: %v", float64(raw)/(1<<20), err)
	if raw < 4*alloc {
		t.Errorf("without the bound the call allocated %d MiB (with it %d MiB)", raw>>20, alloc>>20)
	}
}
