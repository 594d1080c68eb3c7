package runtime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// stderrBytes is how much of a module's stderr is kept for error reports.
const stderrBytes = 4096

// headBuffer keeps the first n bytes written to it (a Go guest's fatal error
// message comes first, its goroutine dump after) and counts the rest.
type headBuffer struct {
	mu      sync.Mutex
	buf     []byte
	n       int
	dropped int
}

func newHeadBuffer(n int) *headBuffer { return &headBuffer{n: n} }

func (r *headBuffer) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	room := r.n - len(r.buf)
	if room > len(p) {
		room = len(p)
	}
	r.buf = append(r.buf, p[:room]...)
	r.dropped += len(p) - room
	return len(p), nil
}

func (r *headBuffer) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}

// summary is the start of the buffer up to the first blank line, at most 512 bytes.
func (r *headBuffer) summary() string {
	s := strings.TrimSpace(r.String())
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

// sandboxModuleConfig is the WASI configuration every guest instance gets: no
// filesystem and no preopens, no environment, no arguments, stdout discarded, stderr
// into a small buffer, real clocks and crypto/rand, and no start functions (the host
// calls _initialize itself).
func sandboxModuleConfig(stderr io.Writer) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithStdin(emptyReader{}).
		WithStdout(io.Discard).
		WithStderr(stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStartFunctions()
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

// instance is one live, initialized guest instance, used by one call at a time.
type instance struct {
	// initMem is the linear memory right after _initialize (0 for Extism).
	initMem uint64

	m      *module // set by the pool
	mod    api.Module
	alloc  api.Function
	call   api.Function
	plugin *extism.Plugin // extism/1 modules
	stderr *headBuffer
	// stack is the module's stack counter (wasmbin.InstrumentStack), nil for
	// Extism instances: reset before each call, read after a trap.
	stack api.MutableGlobal
	calls int
	// owner is the client label of the calls the instance served ("" until its
	// first call): the pool never gives it to another client (pool.acquire).
	owner string
}

func (in *instance) close(ctx context.Context) {
	if in.plugin != nil {
		_ = in.plugin.Close(ctx)
		return
	}
	if in.mod != nil {
		_ = in.mod.Close(ctx)
	}
}

// memoryBytes is the guest's current linear memory size.
func (in *instance) memoryBytes() uint64 {
	if in.mod != nil && in.mod.Memory() != nil {
		return uint64(in.mod.Memory().Size())
	}
	return 0
}

// grown reports whether the instance's linear memory has reached twice its size
// after _initialize (or recycleMemory), so that it is closed after its call
// instead of going back to the pool. A Go guest's memory only grows (its heap
// goal follows the largest replies it decoded) and wazero keeps it in the Go
// heap, where the collector's goal doubles it: over 1,000 mixed calls the idle
// memory instance grew from 3.3 to 8 MiB, ≈ 3 MB of live heap more
// (BenchmarkMixedRSS; closed at 2× it was replaced 8 times in 999 calls).
func (in *instance) grown() bool {
	n := in.memoryBytes()
	return n > recycleMemory || in.initMem > 0 && n > 2*in.initMem
}

// newWazeroInstance instantiates a compiled openhuman/1 module and runs _initialize.
// ctx may carry the callState of the call the instance is made for (its usage
// then records capability host calls the start function or _initialize attempt:
// they trap, see abiphase.go).
func newWazeroInstance(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule) (*instance, error) {
	cs := callStateFrom(ctx)
	if cs == nil {
		cs = &callState{}
		ctx = withCallState(ctx, cs)
	}
	prev := cs.phase.set(phaseStart)
	defer cs.phase.set(prev)
	stderr := newHeadBuffer(stderrBytes)
	mod, err := rt.InstantiateModule(ctx, cm, sandboxModuleConfig(stderr))
	if err != nil {
		return nil, withStderr(fmt.Errorf("instantiating: %w", bound(err)), stderr)
	}
	in := &instance{mod: mod, stderr: stderr, alloc: mod.ExportedFunction(abi.ExportAlloc), call: mod.ExportedFunction(abi.ExportCall)}
	in.stack, _ = mod.ExportedGlobal(stackUsedExport).(api.MutableGlobal)
	if in.alloc == nil || in.call == nil || mod.Memory() == nil {
		_ = mod.Close(ctx)
		return nil, errors.New("module lacks oh_alloc, oh_call or memory exports")
	}
	if init := mod.ExportedFunction(abi.ExportInitialize); init != nil {
		cs.phase.set(phaseInitialize)
		if _, err := init.Call(ctx); err != nil {
			err = in.stackTrap(err)
			_ = mod.Close(ctx)
			return nil, withStderr(fmt.Errorf("running _initialize: %w", bound(err)), stderr)
		}
	}
	in.initMem = in.memoryBytes()
	return in, nil
}

func withStderr(err error, stderr *headBuffer) error {
	if s := stderr.summary(); s != "" {
		return fmt.Errorf("%w (module stderr: %q)", err, s)
	}
	return err
}

// invoke runs one oh_call: write the request through oh_alloc, call, and copy out
// the result after checking its size.
//
// ctx carries the call's callState: its phase is phaseAlloc while oh_alloc makes
// room for the request and phaseCall while oh_call runs (abiphase.go).
func (in *instance) invoke(ctx context.Context, req []byte, maxResult int) ([]byte, error) {
	cs := callStateFrom(ctx)
	if cs == nil {
		cs = &callState{}
		ctx = withCallState(ctx, cs)
	}
	if cs.alloc == nil {
		cs.alloc = in.alloc
	}
	cs.phase.set(phaseAlloc)
	defer cs.phase.set(phaseNone)
	if in.stack != nil {
		in.stack.Set(0) // no guest frame is active between calls
	}
	res, err := in.alloc.Call(ctx, uint64(len(req)))
	if err != nil {
		return nil, fmt.Errorf("oh_alloc(%d): %w", len(req), bound(in.stackTrap(err)))
	}
	mem := in.mod.Memory()
	ptr := uint32(res[0])
	if !mem.Write(ptr, req) {
		return nil, fmt.Errorf("oh_alloc(%d) returned %d, outside the module's %d-byte memory", len(req), ptr, mem.Size())
	}
	cs.phase.set(phaseCall)
	res, err = in.call.Call(ctx, uint64(ptr), uint64(len(req)))
	cs.phase.set(phaseNone)
	if err != nil {
		return nil, bound(in.stackTrap(err))
	}
	optr, olen := uint32(res[0]>>32), uint32(res[0])
	if int64(olen) > int64(maxResult) {
		return nil, &oversizeError{n: int64(olen), limit: maxResult}
	}
	out, ok := mem.Read(optr, olen)
	if !ok {
		return nil, fmt.Errorf("oh_call returned a result at %d+%d, outside the module's %d-byte memory", optr, olen, mem.Size())
	}
	return append([]byte(nil), out...), nil
}

type oversizeError struct {
	n     int64
	limit int
}

func (e *oversizeError) Error() string {
	return fmt.Sprintf("result of %d bytes exceeds the %d-byte limit", e.n, e.limit)
}

// StackExceeded is the trap of a call whose wasm call stack passed the budget
// every module is instrumented with (stackBudgetSlots): the guest recursed too
// deep or without end. The instance is discarded.
type StackExceeded struct {
	// KiB is the budget in KiB of engine stack; Frames is how many frames of
	// the module's largest function it holds (0 when not known).
	KiB, Frames uint32
	err         error
}

func (e *StackExceeded) Error() string {
	frames := ""
	if e.Frames > 0 {
		frames = fmt.Sprintf("%d frames of its largest function, ", e.Frames)
	}
	return fmt.Sprintf("wasm call stack exceeded the module's budget (%s%d KiB): it recursed too deep or without end; the instance was stopped", frames, e.KiB)
}

// Unwrap returns the engine's trap.
func (e *StackExceeded) Unwrap() error { return e.err }

// stackTrap returns a *StackExceeded for err when the instance's stack counter
// is over the budget (the prologue that trapped left it there), else err.
func (in *instance) stackTrap(err error) error {
	if in.stack == nil || err == nil {
		return err
	}
	if used := in.stack.Get(); uint32(used) > stackBudgetSlots {
		return &StackExceeded{KiB: stackBudgetSlots / 128, err: err}
	}
	return err
}
