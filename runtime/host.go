// Package runtime runs MCP tool modules in wazero sandboxes: it loads and admits
// modules, compiles them in the background into per-module runtimes sharing a disk
// cache, links only the granted capability host functions, pools warm instances
// and enforces per-call deadlines, memory and size limits.
package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/openhuman/openhuman-core/internal/builtin"
	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/toolname"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// MaxModuleBytes bounds a module file read from the tools directory.
const MaxModuleBytes = policy.MaxModuleBytes

// BuiltinModule is a first-party module embedded in the binary, its digest pinned
// at build time.
type BuiltinModule struct {
	Name   string // e.g. "memory.wasm" (one module may serve several tools)
	SHA256 string // hex sha256 of Wasm
	Wasm   []byte
	// SchemasChecked says that the build which pinned SHA256 compiled the tools'
	// JSON Schemas of the manifest packed in Wasm (tools-wasm/gen does, before it
	// computes the digest), so the host does not compile them again: ≈ 4 ms of CPU
	// on the path to the first call, 90 % of a first-party module's load.
	// Otherwise the compile worker checks them before compiling the module.
	SchemasChecked bool
}

// Reader is the memory tree's read API as the host functions of memory.read
// consume it: one method per host function. The host defines it and links no
// store; internal/memory implements it over the ranking engine and a backend.
// A malformed request is reported wrapping abi.ErrInvalid and an unknown id
// wrapping abi.ErrNotFound (the host answers invalid_params and not_found);
// implementations are safe for concurrent use.
type Reader interface {
	Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error)
	Recall(ctx context.Context, req abi.RecallRequest) (*abi.RecallResult, error)
	GetChunk(ctx context.Context, req abi.ChunkGetRequest) (*abi.ChunkResult, error)
	ListChunks(ctx context.Context, req abi.ChunksListRequest) (*abi.ListResult, error)
	TopEntities(ctx context.Context, req abi.EntitiesTopRequest) (*abi.EntitiesResult, error)
	ListSources(ctx context.Context, req abi.SourcesListRequest) (*abi.SourcesResult, error)
}

// Options configure a Host.
type Options struct {
	Reader         Reader          // the memory tree's read API; required
	SearXNG        SearxngClient   // nil when disabled
	SearXNGEnabled bool            // serve modules that need web.searxng only when true
	Builtins       []BuiltinModule // first-party modules in catalogue order
	ToolsDir       string          // third-party modules ("" = none)
	Policy         *policy.Policy  // nil = defaults, no third-party grants
	CacheDir       string          // "" = os.UserCacheDir()/openhuman/wazero (0700); "-" = no disk cache
	Autonomy       string          // read gate level
	Logger         *slog.Logger
	// Hold, when set, holds the compile workers (opening the compilation cache,
	// compiling, the warm instances) until it is closed, so that they do not
	// compete for the CPU with work on the path to a first answer (RATIONALE
	// "Start-up: the path to initialize and the first call"). A call that
	// needs a module waits for it as before.
	Hold <-chan struct{}
	// AfterStart, when set, also delays the full collections the host makes once
	// every module loaded at start has its warm instance (returning the compile
	// garbage to the OS, LimitGoMemory) until it is closed: `mcp` closes it once its
	// first call has been answered, so that they do not run beside that call.
	AfterStart <-chan struct{}
	// Engine is how modules are run: EngineDefault (first-party modules on the
	// interpreter, the others compiled), EngineCompiled or EngineInterpreter
	// (engine.go).
	Engine string
}

// Host owns every loaded tool module.
type Host struct {
	opt    Options
	logger *slog.Logger
	pol    *policy.Policy
	cache  wazero.CompilationCache
	// cacheAuth signs the entries wazero writes (nil without a disk cache).
	cacheAuth *cacheAuth
	// cacheOnce opens cache and cacheAuth the first time a compile worker is
	// about to compile a module with the optimizing compiler (ensureCache); read
	// them only after it.
	cacheOnce sync.Once
	pool      *pool // live instances, all modules

	compileQueue chan *module
	compileWG    sync.WaitGroup
	// running counts compiles in progress, including ones boundedCompile
	// abandoned (wazero stops them at the next function once their context ends).
	running    sync.WaitGroup
	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu        sync.RWMutex
	builtins  []*module
	third     []*module // sorted by file name, including refused
	tools     map[string]*servedTool
	closed    bool
	onChange  []func()
	reloadMu  sync.Mutex
	toolOrder []string

	// stopWaiting is closed by StopWaitingForCompiles, grace after it is called.
	stopWaiting     chan struct{}
	stopWaitingOnce sync.Once

	refusedHook atomic.Pointer[func(RefusedHostCall)] // OnRefusedHostCall

	// limitFrees is set when LimitGoMemory will return the memory to the OS
	// itself, so freeAfterCompile does not make a second full collection.
	limitFrees atomic.Bool
}

// EOFCompileGrace is how long calls already waiting for their module's compile
// may still wait once the client has closed stdin: long enough for any module
// within the static limits to compile on a loaded machine (a Go guest of the SDK,
// 3-4 MB, takes seconds; the first-party C modules run on the interpreter and
// take microseconds), far shorter than CompileTimeout.
var EOFCompileGrace = 15 * time.Second

// StopWaitingForCompiles bounds the wait of calls for their module's compile:
// after grace, every call still waiting, and every later call that would wait,
// gives up with ErrStoppedWaiting instead of waiting up to CompileTimeout. The
// MCP server calls it when stdin closes (with EOFCompileGrace): the requests
// already read are still answered when their module compiles in time (a client
// that pipes its requests and closes stdin), but a compile that runs towards the
// deadline no longer keeps the process alive. Compiles themselves go on (Close
// stops them).
func (h *Host) StopWaitingForCompiles(grace time.Duration) {
	h.stopWaitingOnce.Do(func() {
		if grace <= 0 {
			close(h.stopWaiting)
			return
		}
		time.AfterFunc(grace, func() { close(h.stopWaiting) })
	})
}

type servedTool struct {
	tool   Tool
	spec   policy.ToolSpec
	module *module
}

// New loads the builtins and the tools directory, reading and checking every
// manifest now, and compiles the admitted modules in the background.
func New(ctx context.Context, opt Options) (*Host, error) {
	if opt.Reader == nil {
		return nil, errors.New("runtime: Options.Reader is required (open the memory tree read-only first)")
	}
	if err := policy.ReadGate(opt.Autonomy, abi.CapMemoryRead); err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	switch opt.Engine {
	case EngineDefault, EngineCompiled, EngineInterpreter:
	default:
		return nil, fmt.Errorf("runtime: unknown engine %q (want %q, %q or the default)", opt.Engine, EngineCompiled, EngineInterpreter)
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if v, ok := os.LookupEnv("EXTISM_ENABLE_WASI_OUTPUT"); ok {
		// Extism would send guest stdout to our stdout, which carries MCP frames.
		opt.Logger.Warn("ignoring EXTISM_ENABLE_WASI_OUTPUT: guest output never reaches stdout", "value", v)
		_ = os.Unsetenv("EXTISM_ENABLE_WASI_OUTPUT")
	}
	pol := opt.Policy
	if pol == nil {
		pol = policy.Default("")
	}
	h := &Host{
		opt:          opt,
		logger:       opt.Logger,
		pol:          pol,
		pool:         newPool(maxLiveTotal),
		compileQueue: make(chan *module, 256),
		tools:        map[string]*servedTool{},
		stopWaiting:  make(chan struct{}),
	}
	h.baseCtx, h.cancelBase = context.WithCancel(context.WithoutCancel(ctx))
	workers := min(max(goruntime.GOMAXPROCS(0), 1), 4)
	for i := 0; i < workers; i++ {
		go h.compileWorker()
	}
	for _, b := range opt.Builtins {
		h.builtins = append(h.builtins, h.loadBuiltin(b))
	}
	h.opt.Builtins = nil // each module keeps its own bytes until it is compiled
	third, err := h.scanDir()
	if err != nil {
		h.logger.Warn("reading the tools directory failed", "dir", opt.ToolsDir, "err", err)
	}
	h.mu.Lock()
	h.third = third
	h.rebuildToolsLocked()
	h.mu.Unlock()
	for _, m := range append(slices.Clone(h.builtins), third...) {
		h.enqueue(m)
	}
	go h.freeAfterCompile(append(slices.Clone(h.builtins), third...))
	return h, nil
}

// freeAfterCompile returns the compile-time garbage (decoding and compiling a Go
// guest allocates several times its size) to the OS once every module has its
// warm instance, so the resident size settles at what the modules keep.
func (h *Host) freeAfterCompile(mods []*module) {
	if !h.settledAfterStart(mods) || h.limitFrees.Load() {
		return
	}
	debug.FreeOSMemory()
}

// settledAfterStart waits until every module of mods has settled and
// Options.AfterStart (when set) is closed. It reports false when the host closed
// first.
func (h *Host) settledAfterStart(mods []*module) bool {
	for _, m := range mods {
		select {
		case <-m.settled:
		case <-h.baseCtx.Done():
			return false
		}
	}
	if h.opt.AfterStart != nil {
		select {
		case <-h.opt.AfterStart:
		case <-h.baseCtx.Done():
			return false
		}
	}
	return true
}

// LimitGoMemory sets the Go runtime's soft memory limit (debug.SetMemoryLimit) to the
// Go memory the process holds once every module loaded at start has its warm
// instance (and Options.AfterStart is closed), plus headroom — unless GOMEMLIMIT is set in the environment, which
// wins. It returns at once; the limit is set in the background and reported on
// done (0 when it was left alone, or when the host closed first). Without a limit
// the Go heap grows to twice its live size between collections and instances
// recycled under load leave their memories behind: 21,000 calls over the seven
// first-party tools (then seven modules) took VmRSS to ≈ 270 MB; with a limit 36 MB
// above the warm Go memory, ≈ 210 MB at the same speed (RATIONALE "Memory: limits
// and resident size"). Wasm compiled code is outside the Go runtime and is not
// counted against the limit.
// Its collection also returns the compile garbage to the OS, in place of the one
// New would make.
func (h *Host) LimitGoMemory(headroom int64) (done <-chan int64) {
	ch := make(chan int64, 1)
	h.mu.RLock()
	mods := append(slices.Clone(h.builtins), h.third...)
	h.mu.RUnlock()
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		ch <- 0
		return ch
	}
	h.limitFrees.Store(true)
	go func() {
		if !h.settledAfterStart(mods) {
			ch <- 0
			return
		}
		debug.FreeOSMemory()
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		limit := int64(ms.Sys-ms.HeapReleased) + headroom
		debug.SetMemoryLimit(limit)
		h.logger.Debug("Go memory limit set", "limit_bytes", limit)
		ch <- limit
	}()
	return ch
}

// ensureCache opens the compilation cache (once, unless Options.CacheDir is "-").
// Opening it checks the MAC of every entry, so it is done by the first compile
// that uses it, in a compile worker: a host whose modules all run on the
// interpreter (the first-party ones, engine.go) never opens it.
func (h *Host) ensureCache() {
	h.cacheOnce.Do(func() {
		if h.opt.CacheDir != "-" && h.baseCtx.Err() == nil {
			h.cache, h.cacheAuth = openCache(h.opt.CacheDir, h.logger)
		}
	})
}

func (h *Host) compileWorker() {
	if h.opt.Hold != nil {
		select {
		case <-h.opt.Hold:
		case <-h.baseCtx.Done():
		}
	}
	for m := range h.compileQueue {
		if h.baseCtx.Err() == nil && !m.interpreted() {
			h.ensureCache()
		}
		if h.baseCtx.Err() != nil {
			// Closed before its turn (a held host closed before initialize was
			// answered): Close waits for the queue, so compiling now would only
			// delay the exit by the whole compile.
			m.setState(StateFailed, "the tool host was closed before the module was compiled")
			m.markReady()
			m.settle()
			h.compileWG.Done()
			continue
		}
		m.compile(h.baseCtx)
		// Collect each module's decode and instantiation garbage before the next one
		// adds its own: the startup peak with seven modules (the first-party set before
		// the memory tools shared one module) from the cache drops from
		// ≈ 226 to ≈ 207 MB VmHWM for a few ms of GC per module (RATIONALE "Compiling:
		// engines, cache, workers, deadlines").
		// After the last queued module freeAfterCompile collects anyway: a second
		// full GC here would only compete with the first calls for the CPU.
		if len(h.compileQueue) > 0 {
			goruntime.GC()
		}
		h.compileWG.Done()
	}
}

func (h *Host) enqueue(m *module) {
	if state, _ := m.currentState(); state != StateCompiling {
		// A fresh module that rebuildToolsLocked refused (a tool name another
		// module serves) is never compiled: settle it here, or Close waits forever.
		select {
		case <-m.settled:
		default:
			m.markReady()
			close(m.settled)
		}
		return
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return
	}
	h.compileWG.Add(1)
	select {
	case h.compileQueue <- m:
	default:
		// The queue is full (the workers may be held until initialize is
		// answered, and New runs before that): never block the caller, or 256
		// modules deadlock the server before initialize.
		go func() { h.compileQueue <- m }()
	}
}

func newModule(h *Host, info ModuleInfo, wasm []byte) *module {
	return &module{host: h, info: info, wasm: wasm, ready: make(chan struct{}), settled: make(chan struct{}), state: StateCompiling}
}

// refuse marks a module refused (or disabled/failed) so it is listed but never served.
func refuse(m *module, state, msg string) *module {
	m.state, m.err = state, msg
	m.markReady()
	m.settle()
	return m
}

func (h *Host) newHostFuncs(name string) *hostFuncs {
	return &hostFuncs{module: name, reader: h.opt.Reader, searxng: h.opt.SearXNG, autonomy: h.opt.Autonomy, logger: h.logger, limiter: newRateLimiter(logLinesPerSecond), refusedHook: &h.refusedHook}
}

// loadBuiltin admits a first-party module: its digest against the pinned one, its
// manifest and the static gate, all before anything of it is compiled. Its tools'
// JSON Schemas (≈ 4 ms of CPU for the memory module's twelve) are compiled by
// compile, before the code, so that the answer to initialize does not wait for
// them — unless b.SchemasChecked says the build that pinned its digest did.
func (h *Host) loadBuiltin(b BuiltinModule) *module {
	sum := sha256.Sum256(b.Wasm)
	digest := hex.EncodeToString(sum[:])
	m := newModule(h, ModuleInfo{Name: b.Name, SHA256: digest, Origin: OriginBuiltin}, b.Wasm)
	if !strings.EqualFold(digest, b.SHA256) {
		h.logger.Error("first-party module digest mismatch", "module", b.Name)
		return refuse(m, StateRefused, fmt.Sprintf("first-party module %s has sha256 %s but the build pinned %s; the binary is corrupt or was built from modified modules — rebuild with `go generate ./tools-wasm/...`", b.Name, digest, b.SHA256))
	}
	mod, err := wasmbin.Parse(b.Wasm)
	if err != nil {
		return refuse(m, StateRefused, fmt.Sprintf("first-party module %s: %v", b.Name, err))
	}
	// policy.ReadManifestNamed, with the schemas deferred (and in its words).
	section, found, err := wasmbin.CustomSection(b.Wasm, policy.ManifestSection)
	switch {
	case err != nil:
		return refuse(m, StateRefused, fmt.Sprintf("reading the manifest of %s: %v", b.Name, err))
	case !found:
		return refuse(m, StateRefused, fmt.Sprintf("%s has no %s custom section; pack it with `openhuman-core tools pack %s --manifest tool.toml -o OUT.wasm`", b.Name, policy.ManifestSection, b.Name))
	case len(section) > policy.MaxManifestBytes:
		return refuse(m, StateRefused, fmt.Sprintf("%s: manifest of %d bytes exceeds the %d-byte limit", b.Name, len(section), policy.MaxManifestBytes))
	}
	man, err := policy.ParseManifestDeferred(section, b.Name+"["+policy.ManifestSection+"]")
	if err != nil {
		return refuse(m, StateRefused, err.Error())
	}
	m.schemasPending = !b.SchemasChecked
	grant := h.pol.Builtin(man)
	h.fill(m, man, grant)
	if err := policy.CheckLoad(mod, man, grant, nil); err != nil {
		return refuse(m, StateRefused, fmt.Sprintf("%s: %v", b.Name, err))
	}
	m.memoryPages = policy.MemoryLimitPages(mod, grant.Limits.MemoryMiB)
	if st, err := mod.Code(); err == nil && st.CodeBytes <= interpretMaxCodeBytes { // scanned by CheckLoad
		m.smallCode = true
	}
	if slices.Contains(man.Capabilities, abi.CapWebSearXNG) && !h.opt.SearXNGEnabled {
		return refuse(m, StateDisabled, "SearXNG is disabled; set [searxng] enabled = true in config.toml to serve this tool")
	}
	return m
}

func (h *Host) fill(m *module, man *policy.Manifest, grant *policy.Grant) {
	m.manifest, m.grant = man, grant
	m.info.ABI = man.ABI
	m.info.Capabilities = slices.Clone(grant.Capabilities)
	m.info.Limits = grant.Limits
	m.funcs = h.newHostFuncs(m.info.Name)
}

// scanDir reads and admits every *.wasm in the tools directory, sorted by name.
func (h *Host) scanDir() ([]*module, error) {
	if h.opt.ToolsDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(h.opt.ToolsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", h.opt.ToolsDir, err)
	}
	if err := policy.CheckNotWritableByOthers(h.opt.ToolsDir, "tools directory"); err != nil {
		return nil, err // others could add, remove or swap its files
	}
	var out []*module
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".wasm") {
			continue
		}
		out = append(out, h.loadFile(filepath.Join(h.opt.ToolsDir, e.Name())))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].info.Name < out[j].info.Name })
	return out, nil
}

func (h *Host) loadFile(path string) *module {
	name := filepath.Base(path)
	m := newModule(h, ModuleInfo{Name: name, File: path, Origin: OriginDirectory}, nil)
	// Type, size and pin are checked before anything parses the bytes: an
	// unpinned file costs one read and one hash (policy.ReadModuleFile).
	data, sum, err := policy.ReadModuleFile(path)
	if err != nil {
		return refuse(m, StateRefused, err.Error())
	}
	m.info.SHA256 = sum
	if !h.pol.Pinned(sum) {
		return refuse(m, StateRefused, h.pol.UnpinnedRefusal(name, sum))
	}
	m.wasm = data
	mod, err := wasmbin.Parse(data)
	if err != nil {
		return refuse(m, StateRefused, fmt.Sprintf("refused %s: %v", name, err))
	}
	man, err := policy.ReadManifestNamed(data, name)
	if err != nil {
		return refuse(m, StateRefused, fmt.Sprintf("refused %s: %v", name, err))
	}
	m.info.ABI = man.ABI
	st, err := signature.Check(data, h.pol.Trust.Keys, h.pol.Trust.RequireSignature)
	if err != nil {
		return refuse(m, StateRefused, fmt.Sprintf("refused %s: %v", name, err))
	}
	if st != nil && st.State == signature.StateValid {
		m.info.Signer = st.KeyID
	}
	grant, err := h.pol.Admit(name, m.info.SHA256, man)
	if err != nil {
		return refuse(m, StateRefused, err.Error())
	}
	h.fill(m, man, grant)
	if err := policy.CheckLoad(mod, man, grant, builtin.Catalogue); err != nil {
		return refuse(m, StateRefused, fmt.Sprintf("refused %s: %v", name, err))
	}
	m.memoryPages = policy.MemoryLimitPages(mod, grant.Limits.MemoryMiB)
	if slices.Contains(man.Capabilities, abi.CapWebSearXNG) && !h.opt.SearXNGEnabled {
		return refuse(m, StateDisabled, "SearXNG is disabled; set [searxng] enabled = true in config.toml to serve this tool")
	}
	return m
}

// rebuildToolsLocked recomputes the served tool set; a third-party tool whose name
// is already served refuses its whole module.
func (h *Host) rebuildToolsLocked() {
	tools := map[string]*servedTool{}
	portable := map[string]*servedTool{} // toolname.Portable -> tool
	var order []string
	add := func(m *module) {
		state, _ := m.currentState()
		if state == StateRefused || state == StateDisabled || m.manifest == nil {
			return
		}
		mine := map[string]string{} // this module's portable names -> tool name
		for _, t := range m.manifest.Tools {
			if prev, ok := tools[t.Name]; ok {
				m.setState(StateRefused, fmt.Sprintf("refused %s: tool name %q is already served by %s; rename the tool in this module's manifest", m.info.Name, t.Name, prev.module.info.Name))
				m.markReady() // never compiled: Close must not wait for it
				m.settle()
				return
			}
			// Every session may list the portable spelling (internal/toolname).
			if err := toolname.Check(t.Name); err != nil {
				m.setState(StateRefused, fmt.Sprintf("refused %s: %v", m.info.Name, err))
				return
			}
			p := toolname.Portable(t.Name)
			other, ok := mine[p]
			if prev, served := portable[p]; served && !ok {
				other, ok = prev.spec.Name+" of "+prev.module.info.Name, true
			}
			if ok && other != t.Name {
				m.setState(StateRefused, fmt.Sprintf("refused %s: tool name %q has the portable name %q (served to clients that refuse dots), which is also that of %s; rename the tool in this module's manifest", m.info.Name, t.Name, p, other))
				return
			}
			mine[p] = t.Name
		}
		for _, t := range m.manifest.Tools {
			tools[t.Name] = &servedTool{module: m, spec: t, tool: Tool{
				Name: t.Name, Title: t.Title, Description: t.Description,
				InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
				Annotations: t.Annotations, AllowedAgents: slices.Clone(m.grant.AllowedAgents),
				Module: m.info,
			}}
			portable[toolname.Portable(t.Name)] = tools[t.Name]
			order = append(order, t.Name)
		}
	}
	for _, m := range h.builtins {
		add(m)
	}
	firstThird := len(order)
	for _, m := range h.third {
		add(m)
	}
	sort.Strings(order[firstThird:])
	h.tools, h.toolOrder = tools, order
}

// Tools lists the served tools: first-party in catalogue order, then third-party
// by name. It answers from manifests and never waits for compilation.
func (h *Host) Tools() []Tool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]Tool, 0, len(h.toolOrder))
	for _, name := range h.toolOrder {
		out = append(out, h.tools[name].tool)
	}
	return out
}

// Status reports every module, served or not, with its live state and stats.
func (h *Host) Status() []ModuleStatus {
	h.mu.RLock()
	mods := append(slices.Clone(h.builtins), h.third...)
	h.mu.RUnlock()
	out := make([]ModuleStatus, 0, len(mods))
	for _, m := range mods {
		m.mu.Lock()
		st := ModuleStatus{Module: m.info, State: m.state, Error: m.err, Stats: m.stats.snapshot()}
		if len(m.toolStats) > 0 {
			st.ToolStats = make(map[string]CallStats, len(m.toolStats))
			for name, ts := range m.toolStats {
				st.ToolStats[name] = ts.snapshot()
			}
		}
		m.mu.Unlock()
		if m.manifest != nil {
			for _, t := range m.manifest.Tools {
				st.Tools = append(st.Tools, t.Name)
			}
		}
		out = append(out, st)
	}
	return out
}

// WaitReady waits until every admitted module has finished compiling (ready or
// failed). It reports modules that failed.
func (h *Host) WaitReady(ctx context.Context) error {
	done := make(chan struct{})
	go func() { h.compileWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for tool modules to compile: %w", ctx.Err())
	}
	var failed []string
	for _, st := range h.Status() {
		if st.State == StateFailed {
			failed = append(failed, st.Module.Name+": "+st.Error)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("tool modules failed to load: %s", strings.Join(failed, "; "))
	}
	return nil
}

// SetPolicy replaces the policy that later Reloads admit third-party modules
// with (the tools-directory watcher calls it when policy.toml changes). A nil
// policy means the defaults with no third-party grants.
func (h *Host) SetPolicy(p *policy.Policy) {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	if p == nil {
		p = policy.Default("")
	}
	h.pol = p
}

// OnChange registers fn to be called after the served tool set changes.
func (h *Host) OnChange(fn func()) {
	h.mu.Lock()
	h.onChange = append(h.onChange, fn)
	h.mu.Unlock()
}

// Reload re-scans the tools directory and swaps the third-party module set
// atomically. Unchanged files (same name and sha256) keep their compiled module;
// removed or replaced modules are closed once their in-flight calls finish.
func (h *Host) Reload(ctx context.Context) error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	fresh, err := h.scanDir()
	if err != nil {
		return fmt.Errorf("reloading tools: %w", err)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errClosed
	}
	old := h.third
	keep := map[*module]bool{}
	for i, m := range fresh {
		if mstate, _ := m.currentState(); mstate == StateRefused || mstate == StateDisabled {
			continue // the current policy refuses it: never keep an older admission
		}
		for _, o := range old {
			ostate, _ := o.currentState()
			if o.info.File == m.info.File && o.info.SHA256 == m.info.SHA256 && ostate != StateRefused && ostate != StateDisabled &&
				slices.Equal(o.info.Capabilities, m.info.Capabilities) && o.info.Limits == m.info.Limits {
				fresh[i] = o
				keep[o] = true
				break
			}
		}
	}
	before := slices.Clone(h.toolOrder)
	h.third = fresh
	h.rebuildToolsLocked()
	// A replaced module may serve the same names with new descriptions or
	// schemas: listeners re-read the tools (mcpserver.Refresh compares them).
	changed := !slices.Equal(before, h.toolOrder) || len(keep) < len(fresh)
	callbacks := slices.Clone(h.onChange)
	h.mu.Unlock()
	for _, m := range fresh {
		if !keep[m] {
			h.enqueue(m)
		}
	}
	for _, o := range old {
		if !keep[o] {
			go o.shutdown(context.WithoutCancel(ctx))
		}
	}
	if changed {
		for _, fn := range callbacks {
			fn()
		}
	}
	return nil
}

// Close stops compilation, closes every module and the compilation cache.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	mods := append(slices.Clone(h.builtins), h.third...)
	h.tools, h.toolOrder = map[string]*servedTool{}, nil
	h.mu.Unlock()
	h.cancelBase()
	h.compileWG.Wait()
	close(h.compileQueue)
	for _, m := range mods {
		m.shutdown(ctx)
	}
	h.cacheOnce.Do(func() {}) // no cache is opened from now on; waits for one being opened
	if h.cache == nil {
		return nil
	}
	// A compile the workers abandoned may still run inside wazero, which does not
	// stop within a function; closing the shared cache under it makes wazero panic
	// when it finishes. Wait a little for it, then leave the cache open: the
	// process is ending, and nothing is lost but a cache entry.
	stopped := make(chan struct{})
	go func() { h.running.Wait(); close(stopped) }()
	select {
	case <-stopped:
		return h.cache.Close(ctx)
	case <-ctx.Done():
	case <-time.After(closeWaitForCompiles):
	}
	h.logger.Debug("closing with a module compile still running; the compilation cache is left open for it")
	return nil
}

// closeWaitForCompiles bounds how long Close waits for an abandoned compile to
// stop before leaving the compilation cache open.
const closeWaitForCompiles = time.Second
