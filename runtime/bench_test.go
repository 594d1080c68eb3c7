package runtime

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Run all in one go so the ratios hold:
//
//	go test ./runtime -run '^$' -bench . -benchtime 2000x
//
// and the RSS figure alone (a clean process):
//
//	go test ./runtime -run '^$' -bench WarmRSS -benchtime 1x

var (
	benchOnce  sync.Once
	benchStore *memtree.Store
)

const benchQuery = "budget"

// runTB outlives one benchmark run: its temp dirs live until TestMain removes
// guestDir, and its cleanups never run, so a store built once serves every run.
type runTB struct{ testing.TB }

func (r runTB) TempDir() string {
	d, err := os.MkdirTemp(guestDir, "bench-")
	if err != nil {
		r.Fatal(err)
	}
	return d
}

func (runTB) Cleanup(func()) {}

// benchReader is the corpus store when ../shared/data is present, else the fixture.
func benchReader(b *testing.B) *memtree.Store {
	benchOnce.Do(func() {
		benchStore = corpusStore(runTB{b})
		if benchStore == nil {
			b.Log("../shared/data not present: benchmarking on the small fixture store")
			benchStore = fixtureStore(runTB{b})
		}
	})
	return benchStore
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	if len(d) == 0 {
		return
	}
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*95/100].Microseconds()), "p95-µs")
}

func BenchmarkSearchDirect(b *testing.B) {
	store := benchReader(b)
	ctx := context.Background()
	res, err := memory.Default(store).Search(ctx, abi.SearchRequest{Query: benchQuery, K: 10})
	if err != nil || len(res.Chunks) != 10 {
		b.Fatalf("direct search: %d hits, %v", len(res.Chunks), err)
	}
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := memory.Default(store).Search(ctx, abi.SearchRequest{Query: benchQuery, K: 10}); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, d)
}

func BenchmarkSearchSandbox(b *testing.B) {
	store := benchReader(b)
	h, _ := newHost(b, Options{Reader: memory.Default(store), Builtins: firstPartyBuiltins(b)})
	if err := h.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c := Call{Tool: "memory.search", Arguments: []byte(`{"query":"` + benchQuery + `","k":10}`), Client: "mcp:bench"}
	out, err := h.Call(ctx, c)
	if err != nil || out.ToolError != nil || strings.Count(string(out.Result), `"id":`) != 10 {
		b.Fatalf("sandbox search: %+v %v", out, err)
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
	b.ReportMetric(float64(out.Usage.BytesIn), "reply-bytes")
	b.ReportMetric(float64(len(out.Result)), "result-bytes")
}

// BenchmarkFreshInstance is instantiate + _initialize + one call + close.
func BenchmarkFreshInstance(b *testing.B) {
	store := benchReader(b)
	h, _ := newHost(b, Options{Reader: memory.Default(store), Builtins: firstPartyBuiltins(b)})
	if err := h.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	m := h.builtins[0]
	ctx := withCallState(context.Background(), &callState{tool: "memory.search"})
	req := []byte(`{"tool":"memory.search","arguments":{"query":"` + benchQuery + `","k":10},"client":"mcp:bench","request_id":"1"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := newWazeroInstance(ctx, m.rt, m.compiled)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := in.invoke(ctx, req, MaxMessageBytes); err != nil {
			b.Fatal(err)
		}
		in.close(ctx)
	}
}

// BenchmarkCompileAll measures the first-party modules (memory, serving six tools,
// and searxng_search) ready from an empty cache (cold) and from a warm cache.
func BenchmarkCompileAll(b *testing.B) {
	builtins := firstPartyBuiltins(b)
	reader := newFakeReader()
	ready := func(b *testing.B, dir string) time.Duration {
		start := time.Now()
		h, err := New(context.Background(), Options{Reader: reader, Builtins: builtins, CacheDir: dir, SearXNGEnabled: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.WaitReady(context.Background()); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		h.Close(context.Background())
		return d
	}
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ready(b, b.TempDir())
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		ready(b, dir)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ready(b, dir)
		}
	})
}

// BenchmarkWarmRSS reports the process's RSS with all seven first-party tools warm
// (their two modules, each with its warm instance), loaded from a compilation cache
// that outlives the run (as a server start after the first one does; a cold
// compile's peak is several times higher). Run it alone, twice, and read the second
// figure.
func BenchmarkWarmRSS(b *testing.B) {
	dir := filepath.Join(os.TempDir(), "openhuman-bench-wazero-cache")
	h, _ := newHost(b, Options{Reader: newFakeReader(), Builtins: firstPartyBuiltins(b), SearXNGEnabled: true, CacheDir: dir})
	if err := h.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, tl := range h.Tools() {
		h.Call(context.Background(), Call{Tool: tl.Name, Arguments: []byte(`{"query":"budget"}`)})
	}
	warm, linear := 0, uint64(0)
	for _, m := range h.builtins {
		warm += m.idleCount()
	}
	h.pool.mu.Lock()
	for _, in := range h.pool.idle {
		linear += in.memoryBytes()
	}
	h.pool.mu.Unlock()
	b.ReportMetric(float64(linear)/(1<<20), "guest-linear-MB")
	if warm < len(h.builtins) {
		b.Fatalf("%d warm instances, want one per module (%d)", warm, len(h.builtins))
	}
	if n := len(h.Tools()); n != 7 {
		b.Fatalf("%d tools served, want 7", n)
	}
	for i := 0; i < b.N; i++ {
		_ = h.Status()
	}
	goruntime.GC()
	debug.FreeOSMemory()
	b.ReportMetric(procStatusMB(b, "VmHWM"), "VmHWM-MB")
	b.ReportMetric(procStatusMB(b, "VmRSS"), "VmRSS-MB")
	reportMemory(b)
	if p := os.Getenv("OH_HEAPPROF"); p != "" {
		// A heap profile of the warm state (with -memprofilerate=4096 for detail);
		// -memprofile would be written after the host has closed.
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func procStatusMB(b *testing.B, key string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// BenchmarkSearchSandboxRawGuest is the same search through the minimal test guest,
// which passes the host reply through without decoding it: the difference to
// BenchmarkSearchSandbox is the first-party guest's own work (argument checks,
// decoding and re-encoding the hits).
func BenchmarkSearchSandboxRawGuest(b *testing.B) {
	store := benchReader(b)
	h, _ := newHost(b, Options{Reader: memory.Default(store), Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(b, ""))}})
	if err := h.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c := Call{Tool: "search", Arguments: []byte(`{"query":"` + benchQuery + `","k":10}`), Client: "mcp:bench"}
	out, err := h.Call(ctx, c)
	if err != nil || out.ToolError != nil || strings.Count(string(out.Result), `"id":`) != 10 {
		b.Fatalf("raw guest search: %+v %v", out, err)
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

// BenchmarkEchoTiny is the fixed cost of a pooled call: a tiny request, no host call.
func BenchmarkEchoTiny(b *testing.B) {
	h, _ := newHost(b, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(b, ""))}})
	if err := h.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c := Call{Tool: "echo", Arguments: []byte(`{"q":1}`)}
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
