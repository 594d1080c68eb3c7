package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Engines (Options.Engine): how a module's code is run.
const (
	// EngineTiered (the default) serves a first-party module from wazero's
	// interpreter while its optimizing compile runs, when the compilation cache
	// does not hold that module's compiled code (a cold cache, a new binary, no
	// usable cache), and moves new calls to the compiled code once it is ready.
	// Third-party modules and modules found in the cache are compiled only.
	EngineTiered = ""
	// EngineCompiled always waits for the optimizing compile (or the cache).
	EngineCompiled = "compiled"
	// EngineInterpreter serves every openhuman/1 module from the interpreter only
	// and never compiles it: calls are slower but nothing waits for a compile.
	// The sandbox tests run under it to show the limits do not depend on the tier.
	EngineInterpreter = "interpreter"
)

// interpTier is a module's interpreted form. It serves calls until the
// optimizing compile is kept (or fails); then it is retired: no new instances,
// its instances are closed when their calls end, and its runtime when the last
// one is closed.
type interpTier struct {
	rt wazero.Runtime
	cm wazero.CompiledModule

	mu      sync.Mutex
	live    int // open instances made from it
	retired bool
	closed  bool
}

var errTierRetired = errors.New("the interpreted tier was retired")

// newInstance makes a fresh instance from the interpreted code.
func (t *interpTier) newInstance(ctx context.Context) (*instance, error) {
	t.mu.Lock()
	if t.retired {
		t.mu.Unlock()
		return nil, errTierRetired
	}
	t.live++
	t.mu.Unlock()
	in, err := newWazeroInstance(ctx, t.rt, t.cm)
	if err != nil {
		t.instanceClosed()
		return nil, err
	}
	in.tier = t
	return in, nil
}

// instanceClosed counts one of its instances closed.
func (t *interpTier) instanceClosed() {
	t.mu.Lock()
	t.live--
	closeNow := t.retired && t.live == 0 && !t.closed
	if closeNow {
		t.closed = true
	}
	t.mu.Unlock()
	if closeNow {
		_ = t.rt.Close(context.Background())
	}
}

// retire stops new instances and closes the runtime once none is open.
func (t *interpTier) retire() {
	t.mu.Lock()
	t.retired = true
	closeNow := t.live == 0 && !t.closed
	if closeNow {
		t.closed = true
	}
	t.mu.Unlock()
	if closeNow {
		_ = t.rt.Close(context.Background())
	}
}

func (t *interpTier) isRetired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.retired
}

// stale reports an instance of a retired tier: it is closed after its call
// instead of going back to the pool, so later calls run the compiled code.
func (in *instance) stale() bool { return in.tier != nil && in.tier.isRetired() }

// FinishCaching waits, until ctx is done, for the optimizing compiles of the
// modules being served interpreted (tier.go), so that their compiled code lands
// in the compilation cache and the next start loads it instead of interpreting.
// It waits only for modules that have served a call (a command that calls no
// tool exits at once) and are compiling now. The MCP server calls it when the
// client has gone, before Close (which stops compiles).
func (h *Host) FinishCaching(ctx context.Context) error {
	h.mu.RLock()
	mods := slices.Clone(h.builtins)
	h.mu.RUnlock()
	for _, m := range mods {
		m.mu.Lock()
		used := m.stats.s.Count > 0
		m.mu.Unlock()
		if !used || !m.caching.Load() {
			continue
		}
		select {
		case <-m.settled:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to compile into the cache: %w", m.info.Name, ctx.Err())
		}
	}
	return nil
}

// engine decides how m is run (Options.Engine, and for the default whether the
// compilation cache already holds m's compiled code).
func (m *module) engine() string {
	if m.manifest == nil || m.manifest.ABI == abi.ExtismVersion {
		return EngineCompiled
	}
	switch m.host.opt.Engine {
	case EngineInterpreter, EngineCompiled:
		return m.host.opt.Engine
	}
	if m.info.Origin != OriginBuiltin {
		// A third-party module may yet be refused at the compile deadline: it
		// is not served before its optimizing compile has finished.
		return EngineCompiled
	}
	if a := m.host.cacheAuth; a != nil && !m.noCache && a.compiledBefore(m.info.SHA256) {
		return EngineCompiled // loading from the cache is faster than interpreting
	}
	return EngineTiered
}

// doCompileInterp builds the interpreted tier: the same memory limit, close on
// context done, WASI and granted host functions as the compiled tier (only the
// engine differs), kept in m.interp unless boundedCompile abandoned it.
func (m *module) doCompileInterp(ctx context.Context) error {
	rt, cm, err := m.linkAndCompile(ctx, true)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if !m.abandoned {
		m.interp = &interpTier{rt: rt, cm: cm}
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	_ = rt.Close(context.WithoutCancel(ctx))
	return fmt.Errorf("compiling %s: abandoned after its deadline", m.info.Name)
}

// dropInterp retires the interpreted tier (the compiled code is kept, or the
// module failed) and closes its idle instances.
func (m *module) dropInterp() {
	m.mu.Lock()
	t := m.interp
	m.interp = nil
	m.mu.Unlock()
	if t == nil {
		return
	}
	t.retire()
	m.host.pool.drain(m, false)
}

// code is the module's code as it is compiled (data segments merged), made once
// for both tiers.
func (m *module) code() []byte {
	m.mu.Lock()
	merged, wasm := m.merged, m.wasm
	m.mu.Unlock()
	if merged == nil {
		merged = mergeDataSegments(wasm)
		m.mu.Lock()
		m.merged = merged
		m.mu.Unlock()
	}
	return merged
}

// compileGCPercent is the GOGC of the optimizing compiles that run beside an
// interpreted tier (boundCompileHeap).
const compileGCPercent = 40

// tierGC counts the optimizing compiles running beside an interpreted tier and
// keeps the GOGC that was in force before the first of them.
var tierGC struct {
	sync.Mutex
	n    int
	prev int
}

// boundCompileHeap lowers GOGC to compileGCPercent for the optimizing compile of
// a module served interpreted, and returns the function that restores it. The
// interpreted tier holds ≈ 74 MB of Go heap for the memory module, so at the
// default GOGC the compile's garbage could pile up to that much again before a
// collection.
func boundCompileHeap() (restore func()) {
	tierGC.Lock()
	defer tierGC.Unlock()
	tierGC.n++
	if tierGC.n == 1 {
		tierGC.prev = debug.SetGCPercent(compileGCPercent)
		if tierGC.prev < 0 || tierGC.prev < compileGCPercent {
			debug.SetGCPercent(tierGC.prev) // GOGC=off or lower already: leave it
		}
	}
	return func() {
		tierGC.Lock()
		defer tierGC.Unlock()
		tierGC.n--
		if tierGC.n == 0 {
			debug.SetGCPercent(tierGC.prev)
		}
	}
}

// ms is d in milliseconds, for logs.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
