package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// A module within every static limit whose functions together take longer to
// compile than CompileTimeout is refused with the reason when the deadline passes;
// a call waiting for it honours its own deadline, and closing the host does not
// wait for the abandoned compilation.
func TestCompileDeadline(t *testing.T) {
	old := CompileTimeout
	CompileTimeout = time.Second
	t.Cleanup(func() { CompileTimeout = old })
	// 100 functions of 500 loops over 500 locals: ~0.4 s each on a 2-core machine.
	slow := pack(t, wasmgen.SlowCompile(100, 500, 500), manifest(abi.Version, nil, "", tool{name: "slow"}))
	pol := policyFor(t, entry("slow.wasm", slow))
	h, logs := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"slow.wasm": slow}), Policy: pol, CacheDir: "-"})

	cctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := h.Call(cctx, Call{Tool: "slow", Arguments: []byte(`{}`), Client: "mcp:test"})
	cancel()
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for module slow.wasm to compile") {
		t.Fatalf("call while compiling: %v, want its own deadline while waiting for the compile", err)
	}

	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer wcancel()
	_ = h.WaitReady(wctx)
	st := statusOf(t, h, "slow.wasm")
	if st.State != StateRefused || !strings.Contains(st.Error, "compiling it took longer than 1s") {
		t.Fatalf("slow.wasm: %s %q, want refused for the compile deadline\n%s", st.State, st.Error, logs)
	}
	if _, err := h.Call(context.Background(), Call{Tool: "slow", Arguments: []byte(`{}`), Client: "mcp:test"}); err == nil || !strings.Contains(err.Error(), "compiling it took longer") {
		t.Fatalf("call after the refusal: %v", err)
	}
	if m := findModule(h, "slow.wasm"); m.rt != nil || m.compiled != nil {
		t.Error("the abandoned compilation was kept")
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Tables count against memory_mib: with 3 MiB of table (3·2^17 entries) and
// memory_mib = 4, linear memory may grow to 1 MiB (16 pages) only. The module's
// oh_call grows memory by 20 pages and traps if that succeeds.
func TestTablesShareTheMemoryBudget(t *testing.T) {
	var b wasmbin.Builder
	i32, i64 := wasmbin.I32, wasmbin.I64
	b.Table(0, 3<<17, true)
	b.Memory(1)
	b.Func("oh_alloc", wasmbin.FuncType{Params: []wasmbin.ValType{i32}, Results: []wasmbin.ValType{i32}}, []byte{0x41, 0})
	// i32.const 20; memory.grow 0; i32.const -1; i32.ne; if; unreachable; end; i64.const 0
	body := []byte{0x41, 20, 0x40, 0x00, 0x41, 0x7f, 0x47, 0x04, 0x40, 0x00, 0x0b,
		0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x1a, 0x42, 0}
	b.Func("oh_call", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}}, body)
	mod := pack(t, b.Bytes(), manifest(abi.Version, nil, "memory_mib = 4", tool{name: "tables"}))
	h, logs := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"tables.wasm": mod}), Policy: policyFor(t, entry("tables.wasm", mod)), CacheDir: "-"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := h.WaitReady(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	_, err := h.Call(ctx, Call{Tool: "tables", Arguments: []byte(`{}`), Client: "mcp:test"})
	if err == nil || !strings.Contains(err.Error(), "malformed response") {
		t.Fatalf("call: %v; want the malformed-response error (a trap means memory grew past memory_mib less the tables)", err)
	}
}

// After StopWaitingForCompiles (the MCP server calls it when stdin closes), a
// call waiting for its module's compile gives up while the compile is still
// running, and so does a later call; the compile itself is not disturbed.
func TestStopWaitingForCompiles(t *testing.T) {
	// 100 functions of 500 loops over 500 locals: tens of seconds to compile.
	slow := pack(t, wasmgen.SlowCompile(100, 500, 500), manifest(abi.Version, nil, "", tool{name: "slow"}))
	pol := policyFor(t, entry("slow.wasm", slow))
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"slow.wasm": slow}), Policy: pol, CacheDir: "-"})
	t.Cleanup(func() { _ = h.Close(context.Background()) })

	errc := make(chan error, 1)
	go func() {
		_, err := h.Call(context.Background(), Call{Tool: "slow", Arguments: []byte(`{}`), Client: "mcp:test"})
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the call reach the wait (it gives up either way)
	h.StopWaitingForCompiles(200 * time.Millisecond)
	h.StopWaitingForCompiles(0) // a second call changes nothing
	err := <-errc
	if !errors.Is(err, ErrStoppedWaiting) || !strings.Contains(err.Error(), "slow.wasm is still compiling") {
		t.Fatalf("waiting call: %v, want ErrStoppedWaiting naming the module", err)
	}
	if st := statusOf(t, h, "slow.wasm"); st.State != StateCompiling {
		t.Fatalf("slow.wasm is %s when the waiting call gave up; the test needs a compile still running", st.State)
	}
	if _, err := h.Call(context.Background(), Call{Tool: "slow", Arguments: []byte(`{}`), Client: "mcp:test"}); !errors.Is(err, ErrStoppedWaiting) {
		t.Fatalf("later call: %v, want ErrStoppedWaiting", err)
	}
}

// Closing the host while a module compiles (the compile worker has abandoned it
// on the host's cancelled context) waits for the compile to stop before the
// shared compilation cache is closed under it (or leaves the cache open when the
// compile runs on); before, wazero panicked in the
// still-running compile ("assignment to entry in nil map") and took the process
// down at exit.
func TestCloseDuringACompile(t *testing.T) {
	slow := pack(t, wasmgen.SlowCompile(40, 500, 500), manifest(abi.Version, nil, "", tool{name: "slow"}))
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"slow.wasm": slow}), Policy: policyFor(t, entry("slow.wasm", slow)), CacheDir: t.TempDir()})
	for st := statusOf(t, h, "slow.wasm"); st.State != StateCompiling; st = statusOf(t, h, "slow.wasm") {
		t.Fatalf("slow.wasm is %s, want compiling", st.State)
	}
	time.Sleep(300 * time.Millisecond) // the compile is inside wazero now
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.running.Wait() // the abandoned compile finishes here: a panic would end the test binary
	if m := findModule(h, "slow.wasm"); m.rt != nil || m.compiled != nil {
		t.Error("a compile stopped by Close was kept")
	}
}
