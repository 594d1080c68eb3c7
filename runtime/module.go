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
	funcs    *hostFuncs

	ready chan struct{} // closed when compilation finished (ok or not)

	mu       sync.Mutex
	state    string
	err      string
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	plugin   *extism.CompiledPlugin
	idle     []*instance
	closed   bool
	inflight sync.WaitGroup
	stats    statsWindowed
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
	defer close(m.ready)
	start := time.Now()
	err := m.doCompile(ctx)
	if err != nil {
		m.setState(StateFailed, err.Error())
		m.host.logger.Error("tool module failed to load", "module", m.info.Name, "err", err)
		return
	}
	m.setState(StateReady, "")
	m.host.logger.Debug("tool module compiled", "module", m.info.Name, "duration", time.Since(start))
	// One warm instance, if a slot is free right now.
	select {
	case m.host.slots <- struct{}{}:
		in, err := m.newInstance(ctx)
		if err != nil {
			<-m.host.slots
			m.host.logger.Warn("warming a tool instance failed", "module", m.info.Name, "err", err)
			return
		}
		m.release(ctx, in, true)
	default:
	}
}

func (m *module) runtimeConfig() wazero.RuntimeConfig {
	pages := uint32(m.info.Limits.MemoryMiB) * 16 // 64 KiB pages
	rc := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(true)
	if m.host.cache != nil {
		rc = rc.WithCompilationCache(m.host.cache)
	}
	return rc
}

func (m *module) doCompile(ctx context.Context) error {
	if m.manifest.ABI == abi.ExtismVersion {
		return m.compileExtism(ctx)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, m.runtimeConfig())
	fail := func(err error) error {
		_ = rt.Close(ctx)
		return err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("linking WASI: %w", err))
	}
	if err := m.funcs.instantiateHostModule(ctx, rt, m.grant.Capabilities); err != nil {
		return fail(fmt.Errorf("linking host functions: %w", err))
	}
	cm, err := rt.CompileModule(ctx, m.wasm)
	if err != nil {
		return fail(fmt.Errorf("compiling %s: %w", m.info.Name, err))
	}
	m.mu.Lock()
	m.rt, m.compiled = rt, cm
	m.wasm = nil // compiled; the bytes are not needed again (Reload compares digests)
	m.mu.Unlock()
	return nil
}

// newInstance makes a fresh, initialized instance. The caller holds a live slot.
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
	return newWazeroInstance(ictx, rt, cm)
}

// acquire takes an idle instance or makes one, waiting for a live slot (and
// evicting idle instances of other modules) when all are in use.
func (m *module) acquire(ctx context.Context) (*instance, bool, error) {
	m.mu.Lock()
	if n := len(m.idle); n > 0 {
		in := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return in, false, nil
	}
	m.mu.Unlock()
	if err := m.host.acquireSlot(ctx, m); err != nil {
		return nil, false, err
	}
	in, err := m.newInstance(ctx)
	if err != nil {
		m.host.releaseSlot()
		return nil, true, err
	}
	return in, true, nil
}

// release returns an instance to the pool after a successful call, or discards it
// (after any error, after recycleCalls calls, or past recycleMemory).
func (m *module) release(ctx context.Context, in *instance, ok bool) {
	if ok && in.calls < recycleCalls && in.memoryBytes() <= recycleMemory {
		m.mu.Lock()
		if !m.closed && len(m.idle) < maxIdlePerModule {
			m.idle = append(m.idle, in)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
	}
	in.close(context.WithoutCancel(ctx))
	m.host.releaseSlot()
}

// evictIdle closes one idle instance, freeing a slot; false when none is idle.
func (m *module) evictIdle(ctx context.Context) bool {
	m.mu.Lock()
	if len(m.idle) == 0 {
		m.mu.Unlock()
		return false
	}
	in := m.idle[0]
	m.idle = m.idle[1:]
	m.mu.Unlock()
	in.close(ctx)
	m.host.releaseSlot()
	return true
}

func (m *module) idleCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.idle)
}

// shutdown closes the pool and the runtime once in-flight calls are done.
func (m *module) shutdown(ctx context.Context) {
	<-m.ready
	m.mu.Lock()
	m.closed = true
	idle := m.idle
	m.idle = nil
	m.mu.Unlock()
	for _, in := range idle {
		in.close(ctx)
		m.host.releaseSlot()
	}
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
	select {
	case <-m.ready:
	case <-ctx.Done():
		return fmt.Errorf("waiting for module %s to compile: %w", m.info.Name, ctx.Err())
	}
	state, msg := m.currentState()
	if state != StateReady {
		return fmt.Errorf("module %s is %s: %s", m.info.Name, state, msg)
	}
	return nil
}

var errClosed = errors.New("runtime host is closed")
