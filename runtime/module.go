package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Pool sizes (DESIGN §7).
const (
	maxIdlePerModule = 2
	maxLiveTotal     = 8
	recycleCalls     = 1000
	recycleMemory    = 64 << 20
	statsWindow      = 256
)

// stackBudgetSlots is the wasm call stack one instance may use, in 8-byte
// slots of wazero's compiler engine: 2 Mi slots = 16 MiB, which the engine's
// doubling turns into at most ≈ 42 MiB of Go heap allocated for one call (≈ 31
// MiB live at once: the new stack and the one it copies). Every module is
// instrumented with it before it is compiled (wasmbin.InstrumentStack); a call
// that goes deeper traps with StackExceeded. The Go guests' tests pass at 1/16
// of it (RATIONALE "The wasm call stack"). 0 (tests only) compiles modules
// unchanged.
var stackBudgetSlots uint32 = 1 << 21

// stackUsedExport is the name under which an instrumented module exports its
// stack counter: the host resets it before each call and reads it after a trap.
const stackUsedExport = "openhuman:stack_used"

// module is one loaded tool module: its manifest, grant, compiled code and pool.
type module struct {
	host     *Host
	info     ModuleInfo
	manifest *policy.Manifest
	grant    *policy.Grant
	wasm     []byte
	funcs    *hostFuncs
	// schemasPending is set for a first-party module admitted with its tools'
	// JSON Schemas not compiled yet (loadBuiltin): compile checks them first.
	schemasPending bool
	// smallCode is set for a first-party module whose code is within
	// interpretMaxCodeBytes: it runs on the interpreter (engine.go).
	smallCode bool
	// noCache compiles without the disk cache (set before a retry by compile).
	noCache bool
	// memoryPages is the linear memory limit: memory_mib less the tables
	// (policy.MemoryLimitPages); 0 = memory_mib.
	memoryPages uint32
	// stackFrames is how many frames of its largest function the stack budget
	// holds (set when the module is instrumented; for the trap's reason).
	stackFrames uint32
	// stackExport is the name of the stack counter's export: stackUsedExport,
	// with "_" appended when the module itself exports that name.
	stackExport string

	ready chan struct{} // closed when the module can be called, or has failed
	// settled is closed when all compiling is over (after ready).
	settled    chan struct{}
	settleOnce sync.Once
	readyOnce  sync.Once

	mu       sync.Mutex
	state    string
	err      string
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	plugin   *extism.CompiledPlugin
	closed   bool
	// abandoned is set when compile gave up waiting (deadline or host closing):
	// a compilation that finishes later is closed instead of kept.
	abandoned bool
	inflight  sync.WaitGroup
	stats     statsWindowed
	// toolStats are the same statistics per tool the module serves (guarded by mu).
	toolStats map[string]*statsWindowed

	// Guarded by host.pool.mu.
	idleN   int  // idle instances in the pool
	live    int  // pool slots held
	retired bool // shut down: no new instances
}

// statsWindowed accumulates CallStats with a sliding window of durations.
type statsWindowed struct {
	s      CallStats
	window []float64
	next   int
}

func (w *statsWindowed) add(d time.Duration, err error, now time.Time) {
	w.s.Count++
	ms := float64(d.Microseconds()) / 1000
	if len(w.window) < statsWindow {
		w.window = append(w.window, ms)
	} else {
		w.window[w.next] = ms
		w.next = (w.next + 1) % statsWindow
	}
	if err != nil {
		w.s.Errors++
		w.s.LastError = err.Error()
		w.s.LastErrorAt = now
		w.s.ConsecutiveErrors++
	} else {
		w.s.LastSuccessAt = now
		w.s.ConsecutiveErrors = 0
	}
}

func (w *statsWindowed) snapshot() CallStats {
	s := w.s
	if len(w.window) > 0 {
		sorted := slices.Clone(w.window)
		sort.Float64s(sorted)
		s.P50MS = sorted[(len(sorted)-1)*50/100]
		s.P95MS = sorted[(len(sorted)-1)*95/100]
	}
	return s
}

func (m *module) setState(state, msg string) {
	m.mu.Lock()
	m.state, m.err = state, msg
	m.mu.Unlock()
}

func (m *module) currentState() (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.err
}

// compile builds the module's runtime (memory limit, close on context done, shared
// compilation cache), links WASI and the granted host functions, compiles the
// code and makes one warm instance.
func (m *module) compile(ctx context.Context) {
	defer m.settle()
	defer m.markReady()
	start := time.Now()
	if m.schemasPending {
		if err := policy.CheckSchemas(m.manifest, m.info.Name+"["+policy.ManifestSection+"]"); err != nil {
			m.setState(StateRefused, err.Error())
			m.host.logger.Error("tool module refused", "module", m.info.Name, "err", err)
			return
		}
	}
	checked := time.Now()
	cctx, cancel := context.WithTimeout(ctx, CompileTimeout)
	defer cancel()
	err := m.boundedCompile(cctx)
	if err != nil && m.host.cache != nil && !m.interpreted() && cctx.Err() == nil {
		// A cache that cannot be written (full disk) or holds an entry wazero
		// cannot use must not leave the tool failed: compile once more in memory.
		m.host.logger.Warn("compiling with the compilation cache failed; compiling in memory", "module", m.info.Name, "err", err)
		m.noCache = true
		err = m.boundedCompile(cctx)
	}
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		msg := fmt.Sprintf("refused %s: compiling it took longer than %s, the limit for any module; it is too large or too complex to compile (see the static limits in `openhuman-core tools audit`)", m.info.Name, CompileTimeout)
		m.setState(StateRefused, msg)
		m.host.logger.Error("tool module refused", "module", m.info.Name, "err", msg)
		return
	}
	if err != nil && ctx.Err() != nil {
		// Stopped because the host is closing, not because the module is bad.
		m.setState(StateFailed, "the tool host was closed while the module compiled")
		m.host.logger.Debug("tool module not loaded: the tool host closed while it compiled", "module", m.info.Name)
		return
	}
	if err != nil {
		m.setState(StateFailed, err.Error())
		m.host.logger.Error("tool module failed to load", "module", m.info.Name, "err", err)
		return
	}
	compiled := time.Now()
	m.setState(StateReady, "")
	// One warm instance, if a slot is free right now.
	if err := m.host.pool.warm(ctx, m); err != nil {
		if ctx.Err() != nil {
			// The host is closing: not a problem worth a warning on stderr.
			m.host.logger.Debug("warming a tool instance stopped: host closing", "module", m.info.Name)
			return
		}
		m.host.logger.Warn("warming a tool instance failed", "module", m.info.Name, "err", err)
	}
	m.markReady()
	warmed := time.Now()
	// Signing the new cache entries is for the next start: off the first call's path.
	if a := m.host.cacheAuth; a != nil && !m.noCache && !m.interpreted() {
		if _, err := a.sign(); err != nil {
			// Unsigned entries are deleted at the next start: only a recompile lost.
			m.host.logger.Warn("compilation cache: signing new entries failed", "err", err)
		}
	}
	m.host.logger.Debug("tool module compiled", "module", m.info.Name, "interpreter", m.interpreted(), "duration", time.Since(start),
		"schemas_ms", ms(checked.Sub(start)), "compile_ms", ms(compiled.Sub(checked)), "warm_instance_ms", ms(warmed.Sub(compiled)), "sign_ms", ms(time.Since(warmed)))
}

// settle closes settled (once): all compiling of m is over, or will never start.
func (m *module) settle() { m.settleOnce.Do(func() { close(m.settled) }) }

// markReady lets the calls waiting for m proceed (once).
func (m *module) markReady() { m.readyOnce.Do(func() { close(m.ready) }) }

// CompileTimeout bounds compiling one module (wazero checks it between functions;
// policy's static limits bound each function, and functions × types bounds the
// whole; RATIONALE "Compile-time bounds: statically per function, by a deadline
// per module").
var CompileTimeout = 60 * time.Second

// boundedCompile runs doCompile until it finishes or ctx is done, whichever comes
// first. wazero stops at the next function once ctx is done, but one function
// cannot be interrupted: when ctx ends first the compilation is abandoned (marked
// so, and closed when it finishes) and ctx's error returned at once, so neither
// the compile worker nor calls waiting for the module wait for it.
func (m *module) boundedCompile(ctx context.Context) error {
	done := make(chan error, 1)
	// Close waits for this goroutine even after it is abandoned: the shared
	// compilation cache must not be closed under a compile still running in it.
	m.host.running.Add(1)
	go func() {
		defer m.host.running.Done()
		done <- m.doCompile(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	m.mu.Lock()
	kept := m.rt != nil || m.plugin != nil
	if !kept {
		m.abandoned = true
	}
	m.mu.Unlock()
	if kept {
		return nil // finished just as ctx ended
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		m.host.logger.Warn("abandoned a compilation that outlived its deadline; it is closed when it finishes", "module", m.info.Name, "err", ctx.Err())
	} else {
		// The host is closing (the client went away while the module compiled):
		// nothing the user needs to act on.
		m.host.logger.Debug("compilation stopped: the tool host is closing", "module", m.info.Name)
	}
	return fmt.Errorf("compiling %s: %w", m.info.Name, ctx.Err())
}

// keep stores a finished compilation unless boundedCompile abandoned it, in which
// case it is closed and an error returned.
func (m *module) keep(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule, plugin *extism.CompiledPlugin) error {
	m.mu.Lock()
	if !m.abandoned {
		m.rt, m.compiled, m.plugin = rt, cm, plugin
		m.wasm = nil // compiled; the bytes are not needed again (Reload compares digests)
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	if rt != nil {
		_ = rt.Close(ctx)
	}
	if plugin != nil {
		_ = plugin.Close(ctx)
	}
	return fmt.Errorf("compiling %s: abandoned after its deadline", m.info.Name)
}

// runtimeConfig is the module's runtime configuration: the optimizing compiler
// (the interpreter under EngineInterpreter, with the same limits) and the cache.
func (m *module) runtimeConfig() wazero.RuntimeConfig {
	interp := m.interpreted()
	pages := m.memoryLimitPages()
	rc := wazero.NewRuntimeConfig()
	if interp {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rc = rc.WithMemoryLimitPages(pages).
		WithCloseOnContextDone(true)
	if m.host.cache != nil && !m.noCache && !interp {
		rc = rc.WithCompilationCache(m.host.cache)
	}
	return rc
}

func (m *module) doCompile(ctx context.Context) error {
	if m.manifest.ABI == abi.ExtismVersion {
		return m.compileExtism(ctx)
	}
	rt, cm, err := m.linkAndCompile(ctx)
	if err != nil {
		return err
	}
	return m.keep(ctx, rt, cm, nil)
}

// linkAndCompile makes a runtime for the module (runtimeConfig), links WASI and the
// granted host functions and compiles the module's code; on an error the runtime
// is closed.
func (m *module) linkAndCompile(ctx context.Context) (wazero.Runtime, wazero.CompiledModule, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, m.runtimeConfig())
	fail := func(err error) (wazero.Runtime, wazero.CompiledModule, error) {
		_ = rt.Close(ctx)
		return nil, nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("linking WASI: %w", err))
	}
	if err := m.funcs.instantiateHostModule(ctx, rt, m.grant.Capabilities); err != nil {
		return fail(fmt.Errorf("linking host functions: %w", err))
	}
	m.mu.Lock()
	wasm := m.wasm
	m.mu.Unlock()
	wasm, err := m.instrumentStack(wasm)
	if err != nil {
		return fail(err)
	}
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return fail(fmt.Errorf("compiling %s: %w", m.info.Name, err))
	}
	return rt, cm, nil
}

// instrumentStack bounds the module's wasm call stack (stackBudgetSlots) by
// rewriting its code before it is compiled: the pin covers the file as
// written, and the compilation cache is keyed on the bytes wazero compiles, so
// a changed budget or rewrite compiles afresh.
func (m *module) instrumentStack(wasm []byte) ([]byte, error) {
	if stackBudgetSlots == 0 {
		return wasm, nil // tests measuring the engine without the bound
	}
	out, info, err := wasmbin.InstrumentStack(wasm, wasmbin.StackOptions{Budget: stackBudgetSlots, CounterExport: stackUsedExport})
	if err != nil {
		return nil, fmt.Errorf("bounding the call stack of %s: %w", m.info.Name, err)
	}
	if info.MaxWeight > 0 {
		m.stackFrames = stackBudgetSlots / info.MaxWeight
	}
	m.stackExport = info.CounterExport
	return out, nil
}

// memoryLimitPages is the linear memory limit in 64 KiB pages.
func (m *module) memoryLimitPages() uint32 {
	if m.memoryPages > 0 {
		return m.memoryPages
	}
	return uint32(m.info.Limits.MemoryMiB) * 16
}

// newInstance makes a fresh, initialized instance. The caller holds a pool slot.
func (m *module) newInstance(ctx context.Context) (*instance, error) {
	ictx, cancel := context.WithTimeout(ctx, time.Duration(m.info.Limits.TimeoutMS)*time.Millisecond)
	defer cancel()
	m.mu.Lock()
	rt, cm, plugin, closed := m.rt, m.compiled, m.plugin, m.closed
	m.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("module %s was unloaded", m.info.Name)
	}
	if plugin != nil {
		return m.newExtismInstance(ictx, plugin)
	}
	if rt == nil || cm == nil {
		return nil, fmt.Errorf("module %s is not compiled", m.info.Name)
	}
	in, err := newWazeroInstance(ictx, rt, cm)
	if err == nil && m.stackExport != stackUsedExport {
		// Not under the usual name (or not instrumented: stackBudgetSlots 0).
		in.stack, _ = in.mod.ExportedGlobal(m.stackExport).(api.MutableGlobal)
	}
	return in, err
}

func (m *module) idleCount() int { return m.host.pool.idleOf(m) }

// shutdown closes the pool and the runtime once in-flight calls are done.
func (m *module) shutdown(ctx context.Context) {
	<-m.settled
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.host.pool.drain(m, true)
	m.inflight.Wait()
	m.mu.Lock()
	rt, plugin := m.rt, m.plugin
	m.rt, m.compiled, m.plugin = nil, nil, nil
	m.mu.Unlock()
	if rt != nil {
		_ = rt.Close(ctx)
	}
	if plugin != nil {
		_ = plugin.Close(ctx)
	}
}

// waitReady waits for the module's compilation.
func (m *module) waitReady(ctx context.Context) error {
	var stop chan struct{}
	if m.host != nil {
		stop = m.host.stopWaiting
	}
	select {
	case <-m.ready:
	case <-ctx.Done():
		return fmt.Errorf("waiting for module %s to compile: %w", m.info.Name, ctx.Err())
	case <-stop:
		select {
		case <-m.ready: // finished after all
		default:
			return fmt.Errorf("module %s is still compiling and the client has gone: %w", m.info.Name, ErrStoppedWaiting)
		}
	}
	state, msg := m.currentState()
	if state != StateReady {
		return fmt.Errorf("module %s is %s: %s", m.info.Name, state, msg)
	}
	return nil
}

var errClosed = errors.New("runtime host is closed")

// ErrStoppedWaiting is the error of a call that gave up waiting for its module's
// compile after StopWaitingForCompiles.
var ErrStoppedWaiting = errors.New("stopped waiting for the compile")
