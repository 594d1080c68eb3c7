package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// fuzzRT is one interpreter runtime with WASI and the memory.read host
// functions linked, shared by the fuzz executions of a process (a module is
// compiled, run and closed per input).
var fuzzRT struct {
	once   sync.Once
	rt     wazero.Runtime
	reader *fakeReader
	err    error
}

func fuzzRuntime(tb testing.TB) wazero.Runtime {
	fuzzRT.once.Do(func() {
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(16).WithCloseOnContextDone(true))
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			fuzzRT.err = err
			return
		}
		fuzzRT.reader = newFakeReader()
		hf := &hostFuncs{module: "fuzz.wasm", reader: fuzzRT.reader, logger: discardLogger(), limiter: newRateLimiter(logLinesPerSecond)}
		fuzzRT.err = hf.instantiateHostModule(ctx, rt, []string{abi.CapMemoryRead})
		fuzzRT.rt = rt
	})
	if fuzzRT.err != nil {
		tb.Fatal(fuzzRT.err)
	}
	return fuzzRT.rt
}

func sleb32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// guestProgram builds a module from fuzz bytes: data[0] picks what oh_alloc
// does (return a pointer, an out-of-bounds one, call the host, trap, call
// oh_call), data[1] a start function or _initialize (none, log, memory_search),
// and each following pair (op, arg) one step of oh_call: a memory_search with
// a pointer and length from arg, an internal oh_alloc, a store, a log, a trap,
// an endless loop; the last step returns a packed pointer/length from arg.
// Function indices: 0 memory_search, 1 log, 2 oh_alloc, 3 oh_call, 4 start or
// _initialize.
func guestProgram(data []byte) []byte {
	at := func(i int) byte {
		if i >= 0 && i < len(data) {
			return data[i]
		}
		return 0
	}
	i32 := wasmbin.I32
	search := func(p, n int32) []byte {
		b := sleb32([]byte{0x41}, p)
		b = sleb32(append(b, 0x41), n)
		return append(b, 0x10, 0, 0x1a)
	}
	var b wasmbin.Builder
	b.ImportFunc("openhuman", "memory_search", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{wasmbin.I64}})
	b.ImportFunc("openhuman", "log", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32, i32}})
	b.Memory(1)
	var alloc []byte
	switch at(0) % 5 {
	case 1:
		alloc = sleb32([]byte{0x41}, -65536) // out of bounds
	case 2:
		alloc = append(search(0, 2), 0x41, 0x80, 0x08)
	case 3:
		alloc = []byte{0x00}
	case 4:
		alloc = []byte{0x41, 0, 0x41, 2, 0x10, 3, 0x1a, 0x41, 0x80, 0x08} // oh_call(0, 2)
	default:
		alloc = []byte{0x41, 0x80, 0x08}
	}
	b.Func("oh_alloc", allocType, alloc)
	var call []byte
	rest := data[min(2, len(data)):]
	for i := 0; i+1 < len(rest) && i < 64; i += 2 {
		op, arg := rest[i], rest[i+1]
		switch op % 7 {
		case 0:
			call = append(call, search(int32(arg)*257, int32(arg%32))...)
		case 1:
			call = append(sleb32(append(call, 0x41), int32(arg)*1000), 0x10, 2, 0x1a)
		case 2:
			call = sleb32(append(call, 0x41), int32(arg)*256)
			call = sleb32(append(call, 0x41), int32(arg))
			call = append(call, 0x36, 2, 0)
		case 3:
			call = sleb32(append(call, 0x41, 1, 0x41), int32(arg)*255)
			call = sleb32(append(call, 0x41), int32(arg)*4)
			call = append(call, 0x10, 1)
		case 4:
			if arg == 0 {
				call = append(call, 0x00)
			}
		case 5:
			if arg == 0xff {
				call = append(call, 0x03, 0x40, 0x0c, 0x00, 0x0b) // loop br 0 end
			}
		case 6:
			call = append(call, search(-int32(arg)-1, 1<<20)...) // negative pointer, huge length
		}
	}
	out := uint64(at(len(data)-2))<<40 | uint64(at(len(data)-1))<<4
	call = append(call, 0x42)
	call = appendSLEB64(call, int64(out))
	b.Func("oh_call", callType, call)
	startFn := -1
	switch at(1) % 4 {
	case 1:
		startFn = int(b.Func("", wasmbin.FuncType{}, []byte{0x41, 1, 0x41, 0, 0x41, 4, 0x10, 1}))
	case 2:
		startFn = int(b.Func("", wasmbin.FuncType{}, search(0, 2)))
	case 3:
		b.Func("_initialize", wasmbin.FuncType{}, search(0, 2))
	}
	mod := b.Bytes()
	if startFn >= 0 {
		mod = wasmgen.Section(mod, wasmbin.SectionStart, []byte{byte(startFn)})
	}
	return mod
}

func appendSLEB64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

var (
	allocType = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
	callType  = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I64}}
)

// FuzzGuestABI drives the host↔guest boundary with generated guests
// (guestProgram): host-call sequences, pointers and lengths in and out of
// memory, re-entry from oh_alloc and from a start function or _initialize. It
// checks the host never panics, never serves a capability outside oh_call,
// ends every call near its deadline, and keeps its error text bounded.
func FuzzGuestABI(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 1}, {2, 0, 0, 1, 0, 2}, {4, 0, 0, 3}, {0, 2}, {0, 3}, {0, 1, 3, 7, 0, 9},
		{1, 0, 0, 5}, {3, 0}, {0, 0, 5, 0xff}, {0, 0, 6, 9, 4, 0}, {0, 0, 2, 3, 1, 4, 0, 200, 0, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rt := fuzzRuntime(t)
		ctx := context.Background()
		cm, err := rt.CompileModule(ctx, guestProgram(data))
		if err != nil {
			t.Fatalf("generated module does not compile: %v", err)
		}
		defer cm.Close(ctx)
		const deadline = 100 * time.Millisecond
		cs := &callState{tool: "fuzz"}
		start := time.Now()
		ictx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		in, err := newWazeroInstance(withCallState(ictx, cs), rt, cm)
		if err == nil {
			defer in.close(ctx)
			cctx, ccancel := context.WithTimeout(ctx, deadline)
			defer ccancel()
			_, err = in.invoke(withCallState(cctx, cs), []byte(`{"tool":"fuzz","arguments":{}}`), MaxMessageBytes)
			err = bound(err)
		}
		if el := time.Since(start); el > 2*deadline+time.Second {
			t.Errorf("instantiate and call took %v; deadline %v each", el, deadline)
		}
		if err != nil && len(err.Error()) > 2*maxErrorText+200 {
			t.Errorf("error text of %d bytes: %.300q", len(err.Error()), err)
		}
		var v *ABIViolation
		if errors.As(err, &v) && strings.Contains(v.Phase, "oh_call") && !strings.Contains(v.Phase, "oh_alloc") {
			t.Errorf("a host call inside oh_call was refused: %v", err)
		}
		if cs.phase.get() != phaseNone && cs.phase.get() != phaseStart {
			t.Errorf("phase left at %v", cs.phase.get())
		}
		// Served host calls happened only inside oh_call: oh_alloc, start and
		// _initialize variants that call the host must show as refused.
		if cs.usage.Refused[abi.FnMemorySearch] > 1 {
			t.Errorf("%d refused calls in one instance: the first must stop it", cs.usage.Refused[abi.FnMemorySearch])
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
