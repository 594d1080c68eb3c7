package runtime

import (
	"context"
	"encoding/json"
	"errors"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// heapInUse is the Go heap in use after a collection: wazero keeps instances,
// their stacks and every error string there.
func heapInUse() uint64 {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestNoHostGuestNesting runs one hostile module per place a capability host
// call must not come from (findings 1, 2, 7): each call fails before its
// deadline with the reason a reviewer reads, the host function is never
// served, the instance is discarded, the Go heap does not grow (on 3656465 the
// start-function and re-entrant-alloc modules recursed in the host to
// gigabytes), and the refused attempt is in the failed call's usage.
func TestNoHostGuestNesting(t *testing.T) {
	cases := []struct {
		name   string
		kind   wasmgen.NestingKind
		phase  string
		served int // memory_search calls served (oh_call's own, before the re-entry)
	}{
		{"initialize", wasmgen.FromInitialize, "from _initialize", 0},
		{"allocreq", wasmgen.FromAllocRequest, "from oh_alloc (while the host wrote the call request)", 0},
		{"allocreply", wasmgen.FromAllocReply, "from oh_alloc (while the host delivered a host function's reply)", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wasm := pack(t, wasmgen.Nesting(c.kind), manifest(abi.Version, []string{abi.CapMemoryRead}, "timeout_ms = 1000\nmemory_mib = 4", tool{name: c.name}))
			h, logs := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{c.name + ".wasm": wasm}),
				Policy: policyFor(t, entry(c.name+".wasm", wasm, abi.CapMemoryRead)), CacheDir: "-"})
			if err := h.WaitReady(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := heapInUse()
			// The call's own context is 10× its deadline: a host that recursed (as
			// 3656465 did) would be stopped by it, and fail the test below.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := h.Call(ctx, Call{Tool: c.name, Arguments: json.RawMessage(`{}`), Client: "mcp:test", RequestID: "r-1"})
			if ctx.Err() != nil {
				t.Fatalf("the call outlived 10× its 1000 ms deadline: %v", err)
			}
			var v *ABIViolation
			if !errors.As(err, &v) || v.Func != abi.FnMemorySearch {
				t.Fatalf("want an ABIViolation of memory_search, got %v", err)
			}
			want := "module " + c.name + ".wasm called host function memory_search " + c.phase + ": capability host functions may be called only while the host is inside oh_call"
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q\nlacks %q", err, want)
			}
			if len(err.Error()) > 2*maxErrorText || strings.Contains(err.Error(), "wasm stack trace") {
				t.Errorf("error text is not bounded (%d bytes): %q", len(err.Error()), err)
			}
			if got := UsageOf(err).HostCalls[abi.FnMemorySearch]; got != c.served {
				t.Errorf("memory_search served %d times, want %d", got, c.served)
			}
			if u := UsageOf(err); u.Refused[abi.FnMemorySearch] != 1 {
				t.Errorf("failed call's usage %+v lacks the refused memory_search", u)
			}
			if n := h.pool.instances.Load(); n != 0 {
				t.Errorf("%d instances open after the trap; the trapped instance must be discarded (and none can be made)", n)
			}
			if grew := int64(heapInUse()) - int64(before); grew > 64<<20 {
				t.Errorf("the Go heap grew by %d MiB during one call", grew>>20)
			}
			if c.kind == wasmgen.FromInitialize && !strings.Contains(logs.String(), "host call outside oh_call refused") {
				t.Errorf("the warm instance's refused host call was not logged:\n%s", logs)
			}
		})
	}
}

// TestFailedCallUsage: a call that read through a host function and then
// trapped reports its reads (finding 7: they were logged as host_calls {}).
func TestFailedCallUsage(t *testing.T) {
	wasm := pack(t, wasmgen.Nesting(wasmgen.AfterHostCall), manifest(abi.Version, []string{abi.CapMemoryRead}, "timeout_ms = 1000\nmemory_mib = 4", tool{name: "readtrap"}))
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"readtrap.wasm": wasm}),
		Policy: policyFor(t, entry("readtrap.wasm", wasm, abi.CapMemoryRead)), CacheDir: "-"})
	_, err := call(t, h, "readtrap", `{}`)
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("want a trap, got %v", err)
	}
	u := UsageOf(err)
	if u.HostCalls[abi.FnMemorySearch] != 1 || u.BytesOut != 2 || u.BytesIn == 0 {
		t.Errorf("failed call's usage %+v; want one memory_search of 2 bytes and its reply", u)
	}
}

// TestStartFunctionHostCall (finding 2): the loader and `tools audit` refuse a
// module whose start function calls a capability (TestAuditAndLoaderAgreeOnFinding9);
// should one get past them, instantiating it traps at the host call with the
// reason, without serving it and without nesting.
func TestStartFunctionHostCall(t *testing.T) {
	raw := wasmgen.Nesting(wasmgen.FromStart)
	wasm := pack(t, raw, manifest(abi.Version, []string{abi.CapMemoryRead}, "timeout_ms = 1000\nmemory_mib = 4", tool{name: "start"}))
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"start.wasm": wasm}),
		Policy: policyFor(t, entry("start.wasm", wasm, abi.CapMemoryRead)), CacheDir: "-"})
	if st := statusOf(t, h, "start.wasm"); st.State != StateRefused || !strings.Contains(st.Error, "the start function (function 3) calls capability host function openhuman.memory_search") {
		t.Errorf("loader: %s %q", st.State, st.Error)
	}

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithMemoryLimitPages(64))
	defer rt.Close(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	reader := newFakeReader()
	hf := &hostFuncs{module: "start.wasm", reader: reader, logger: h.logger, limiter: newRateLimiter(logLinesPerSecond)}
	if err := hf.instantiateHostModule(ctx, rt, []string{abi.CapMemoryRead}); err != nil {
		t.Fatal(err)
	}
	cm, err := rt.CompileModule(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	cs := &callState{tool: "start"}
	_, err = newWazeroInstance(withCallState(ctx, cs), rt, cm)
	var v *ABIViolation
	if !errors.As(err, &v) || !strings.Contains(err.Error(), "called host function memory_search from its start function: capability host functions may be called only while the host is inside oh_call") {
		t.Fatalf("instantiating: %v", err)
	}
	if len(err.Error()) > 2*maxErrorText || strings.Contains(err.Error(), "wasm stack trace") {
		t.Errorf("error text is not bounded: %q", err)
	}
	if cs.usage.Refused[abi.FnMemorySearch] != 1 || cs.usage.HostCalls[abi.FnMemorySearch] != 0 {
		t.Errorf("usage %+v: want one refused, none served", cs.usage)
	}
}

// TestRefusedHostCallOutsideAnyCallReported (finding 7): the instance warmed
// before any client connects runs _initialize, which calls memory_search: the
// refusal reaches OnRefusedHostCall (the servers write it to the audit log).
func TestRefusedHostCallOutsideAnyCallReported(t *testing.T) {
	wasm := pack(t, wasmgen.Nesting(wasmgen.FromInitialize), manifest(abi.Version, []string{abi.CapMemoryRead}, "timeout_ms = 1000\nmemory_mib = 4", tool{name: "init"}))
	hold := make(chan struct{})
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"init.wasm": wasm}),
		Policy: policyFor(t, entry("init.wasm", wasm, abi.CapMemoryRead)), CacheDir: "-", Hold: hold})
	events := make(chan RefusedHostCall, 4)
	h.OnRefusedHostCall(func(ev RefusedHostCall) { events <- ev })
	close(hold)
	select {
	case ev := <-events:
		if ev.Module != "init.wasm" || ev.Func != abi.FnMemorySearch || !strings.Contains(ev.Reason, "from _initialize") {
			t.Errorf("event %+v", ev)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no refused host call reported for the warm instance")
	}
}
