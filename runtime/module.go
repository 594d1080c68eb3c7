package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

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

// module is one loaded tool module: its manifest, grant, compiled code and pool.
type module struct {
	host     *Host
	info     ModuleInfo
	manifest *policy.Manifest
	grant    *policy.Grant
	wasm     []byte
	// load supplies wasm for a first-party module loaded lazily (lazy.go).
	load  func() ([]byte, error)
	funcs *hostFuncs
	// noCache compiles without the disk cache (set before a retry by compile).
	noCache bool
	// memoryPages is the linear memory limit: memory_mib less the tables
	// (policy.MemoryLimitPages); 0 = memory_mib.
	memoryPages uint32

	ready chan struct{} // closed when the module can be called, or has failed
	// settled is closed when all compiling is over: after ready, or for a module
	// first served interpreted (tier.go), once its optimizing compile is kept or failed.
	settled    chan struct{}
	settleOnce sync.Once
	readyOnce  sync.Once
	// caching is set while a module served interpreted compiles into the disk
	// cache (Host.FinishCaching waits for it).
	caching atomic.Bool

	mu       sync.Mutex
	state    string
	err      string
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	plugin   *extism.CompiledPlugin
	// interp serves calls while compiled is not there yet (tier.go).
	interp *interpTier
	// merged is wasm with its data segments merged, as both tiers compile it.
	merged []byte
	closed bool
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
// code and makes one warm instance. A module run tiered (tier.go) is first built
// for the interpreter and served from it while the optimizing compile runs.
func (m *module) compile(ctx context.Context) {
	defer m.settle()
	defer m.markReady()
	start := time.Now()
	if err := m.unpackLazy(); err != nil {
		m.setState(StateRefused, err.Error())
		m.host.logger.Error("tool module refused", "module", m.info.Name, "err", err)
		return
	}
	unpacked := time.Now()
	cctx, cancel := context.WithTimeout(ctx, CompileTimeout)
	defer cancel()
	engine := m.engine()
	optimizing := unpacked
	var err error
	if engine != EngineCompiled {
		err = m.boundedCompile(cctx, true)
		switch {
		case err == nil:
			m.setState(StateReady, "")
			lowered := time.Now()
			if werr := m.host.pool.warm(ctx, m); werr != nil && ctx.Err() == nil {
				m.host.logger.Warn("warming a tool instance failed", "module", m.info.Name, "err", werr)
			}
			m.markReady()
			m.host.logger.Debug("tool module ready in the interpreter", "module", m.info.Name, "engine", engine,
				"unpack_ms", ms(unpacked.Sub(start)), "interp_compile_ms", ms(lowered.Sub(unpacked)), "warm_instance_ms", ms(time.Since(lowered)))
			if engine == EngineInterpreter {
				return
			}
		case engine == EngineInterpreter || cctx.Err() != nil:
			// Nothing else to try (or no time left): report it as a compile failure.
		default:
			m.host.logger.Warn("building the interpreted tier failed; waiting for the optimizing compile", "module", m.info.Name, "err", err)
			err = nil
		}
	}
	if err == nil && engine != EngineInterpreter {
		if engine == EngineTiered && m.host.cache != nil {
			m.caching.Store(true)
			defer m.caching.Store(false)
		}
		if hold := m.host.opt.holdOptimizing; hold != nil && engine == EngineTiered {
			select {
			case <-hold:
			case <-cctx.Done():
			}
		}
		if engine == EngineTiered {
			defer boundCompileHeap()()
		}
		optimizing = time.Now()
		err = m.boundedCompile(cctx, false)
		if err != nil && m.host.cache != nil && cctx.Err() == nil {
			// A cache that cannot be written (full disk) or holds an entry wazero
			// cannot use must not leave the tool failed: compile once more in memory.
			m.host.logger.Warn("compiling with the compilation cache failed; compiling in memory", "module", m.info.Name, "err", err)
			m.noCache = true
			err = m.boundedCompile(cctx, false)
		}
	}
	if err != nil {
		// The module is not served by either tier.
		defer m.dropInterp()
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
	if a := m.host.cacheAuth; a != nil && !m.noCache {
		signed, err := a.sign()
		if err != nil {
			// Unsigned entries are deleted at the next start: only a recompile lost.
			m.host.logger.Warn("compilation cache: signing new entries failed", "err", err)
		} else if err := a.markCompiled(m.info.SHA256, signed); err != nil {
			m.host.logger.Warn("compilation cache: recording the compiled module failed", "module", m.info.Name, "err", err)
		}
	}
	m.setState(StateReady, "")
	m.dropInterp() // new instances are made from the compiled code from now on
	m.host.logger.Debug("tool module compiled", "module", m.info.Name, "engine", engine, "duration", time.Since(start),
		"unpack_ms", ms(unpacked.Sub(start)), "compile_ms", ms(compiled.Sub(optimizing)), "sign_ms", ms(time.Since(compiled)))
	// One warm instance, if a slot is free right now.
	if err := m.host.pool.warm(ctx, m); err != nil {
		if ctx.Err() != nil {
			// The host is closing: not a problem worth a warning on stderr.
			m.host.logger.Debug("warming a tool instance stopped: host closing", "module", m.info.Name)
			return
		}
		m.host.logger.Warn("warming a tool instance failed", "module", m.info.Name, "err", err)
	}
}

// settle closes settled (once): all compiling of m is over, or will never start.
func (m *module) settle() { m.settleOnce.Do(func() { close(m.settled) }) }

// markReady lets the calls waiting for m proceed (once).
func (m *module) markReady() { m.readyOnce.Do(func() { close(m.ready) }) }

// CompileTimeout bounds compiling one module (wazero checks it between functions;
// policy's static limits bound each function). The first-party memory module
// compiles in about 3 s on a loaded 2-core machine.
var CompileTimeout = 60 * time.Second

// boundedCompile runs doCompile until it finishes or ctx is done, whichever comes
// first. wazero stops at the next function once ctx is done, but one function
// cannot be interrupted: when ctx ends first the compilation is abandoned (marked
// so, and closed when it finishes) and ctx's error returned at once, so neither
// the compile worker nor calls waiting for the module wait for it.
//
// interp selects the interpreted tier (doCompileInterp) instead of the compiled one.
func (m *module) boundedCompile(ctx context.Context, interp bool) error {
	done := make(chan error, 1)
	// Close waits for this goroutine even after it is abandoned: the shared
	// compilation cache must not be closed under a compile still running in it.
	m.host.running.Add(1)
	go func() {
		defer m.host.running.Done()
		if interp {
			done <- m.doCompileInterp(ctx)
		} else {
			done <- m.doCompile(ctx)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	m.mu.Lock()
	kept := m.rt != nil || m.plugin != nil
	if interp {
		kept = m.interp != nil
	}
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
		m.wasm, m.merged = nil, nil // compiled; the bytes are not needed again (Reload compares digests)
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

func (m *module) runtimeConfig() wazero.RuntimeConfig { return m.runtimeConfigFor(false) }

// runtimeConfigFor is the runtime configuration of the compiled tier or, with
// interp, of the interpreted one: the limits are the same for both.
func (m *module) runtimeConfigFor(interp bool) wazero.RuntimeConfig {
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
	rt, cm, err := m.linkAndCompile(ctx, false)
	if err != nil {
		return err
	}
	return m.keep(ctx, rt, cm, nil)
}

// linkAndCompile makes a runtime for the module (the interpreter when interp, the
// optimizing compiler otherwise: the same limits either way), links WASI and the
// granted host functions and compiles the module's code; on an error the runtime
// is closed.
func (m *module) linkAndCompile(ctx context.Context, interp bool) (wazero.Runtime, wazero.CompiledModule, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, m.runtimeConfigFor(interp))
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
	cm, err := rt.CompileModule(ctx, m.code())
	if err != nil {
		what := m.info.Name
		if interp {
			what += " for the interpreter"
		}
		return fail(fmt.Errorf("compiling %s: %w", what, err))
	}
	return rt, cm, nil
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
	for {
		m.mu.Lock()
		rt, cm, plugin, closed, interp := m.rt, m.compiled, m.plugin, m.closed, m.interp
		m.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("module %s was unloaded", m.info.Name)
		}
		if plugin != nil {
			return m.newExtismInstance(ictx, plugin)
		}
		if rt != nil && cm != nil {
			return newWazeroInstance(ictx, rt, cm)
		}
		if interp == nil {
			return nil, fmt.Errorf("module %s is not compiled", m.info.Name)
		}
		in, err := interp.newInstance(ictx)
		if errors.Is(err, errTierRetired) {
			continue // the compiled code was kept meanwhile (or the module failed)
		}
		return in, err
	}
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
	rt, plugin, interp := m.rt, m.plugin, m.interp
	m.rt, m.compiled, m.plugin, m.interp = nil, nil, nil, nil
	m.mu.Unlock()
	if interp != nil {
		interp.retire()
	}
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
