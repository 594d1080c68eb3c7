package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// rssBreakdown sums the Rss of /proc/self/smaps by mapping kind, in bytes.
type rssBreakdown struct {
	exe      uint64 // the test binary's own mappings (text, rodata, data)
	files    uint64 // other file-backed mappings
	anonExec uint64 // anonymous executable mappings: wazero's compiled guest code
	anonRW   uint64 // other anonymous mappings: Go heap arenas, stacks, runtime metadata
	other    uint64 // [stack], [vdso], [vvar], …
	total    uint64
}

func readRSSBreakdown() (rssBreakdown, error) {
	var r rssBreakdown
	exe, _ := os.Readlink("/proc/self/exe")
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return r, fmt.Errorf("reading /proc/self/smaps: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var kind *uint64
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && len(fields) >= 5 && !strings.HasSuffix(fields[0], ":") {
			// A mapping header: range perms offset dev inode [path].
			perms, path := fields[1], ""
			if len(fields) >= 6 {
				path = strings.Join(fields[5:], " ")
			}
			switch {
			case path == exe && exe != "":
				kind = &r.exe
			case strings.HasPrefix(path, "/"):
				kind = &r.files
			case path == "" && strings.Contains(perms, "x"):
				kind = &r.anonExec
			case path == "" || path == "[heap]":
				kind = &r.anonRW
			default:
				kind = &r.other
			}
			continue
		}
		if fields[0] == "Rss:" && kind != nil && len(fields) >= 2 {
			kb, _ := strconv.ParseUint(fields[1], 10, 64)
			*kind += kb << 10
			r.total += kb << 10
		}
	}
	return r, sc.Err()
}

const mib = 1 << 20

// reportMemory reports the RSS breakdown and the Go runtime's own accounting as
// benchmark metrics and logs them as a table.
func reportMemory(b *testing.B) {
	b.Helper()
	r, err := readRSSBreakdown()
	if err != nil {
		b.Logf("no RSS breakdown: %v", err)
		return
	}
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	mb := func(v uint64) float64 { return float64(v) / mib }
	b.ReportMetric(mb(r.anonExec), "rss-wazero-code-MB")
	b.ReportMetric(mb(r.anonRW), "rss-anon-MB")
	b.ReportMetric(mb(r.exe), "rss-binary-MB")
	b.ReportMetric(mb(ms.HeapInuse), "go-heap-MB")
	b.Logf("RSS by mapping (smaps): total %.1f MB = test binary %.1f + other files %.1f + anon exec (wazero code) %.1f + anon rw %.1f + other %.1f",
		mb(r.total), mb(r.exe), mb(r.files), mb(r.anonExec), mb(r.anonRW), mb(r.other))
	b.Logf("Go runtime: HeapInuse %.1f MB, HeapIdle-HeapReleased %.1f MB, StackInuse %.1f MB, runtime metadata (MSpan+MCache+GC+BuckHash+Other) %.1f MB, Sys %.1f MB",
		mb(ms.HeapInuse), mb(ms.HeapIdle-ms.HeapReleased), mb(ms.StackInuse),
		mb(ms.MSpanInuse+ms.MCacheInuse+ms.GCSys+ms.BuckHashSys+ms.OtherSys), mb(ms.Sys))
	b.Logf("anon rw not explained by the Go runtime's figures: %.1f MB", mb(r.anonRW)-mb(ms.HeapInuse+ms.HeapIdle-ms.HeapReleased+ms.StackInuse+ms.MSpanInuse+ms.MCacheInuse+ms.GCSys+ms.BuckHashSys+ms.OtherSys))
}

func TestLimitGoMemory(t *testing.T) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Log("GOMEMLIMIT is set: LimitGoMemory must leave the limit alone")
	}
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}})
	limit := <-h.LimitGoMemory(32 << 20)
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		if limit != 0 || debug.SetMemoryLimit(-1) != old {
			t.Fatalf("limit changed to %d with GOMEMLIMIT set", limit)
		}
		return
	}
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	if got := debug.SetMemoryLimit(-1); got != limit || limit < int64(ms.HeapInuse)+32<<20 {
		t.Fatalf("limit %d (reported %d), want ≥ heap in use %d + 32 MiB", got, limit, ms.HeapInuse)
	}
}

// With Options.AfterStart the memory limit (and its full collection) waits for it
// even once every module is warm; it is set as soon as AfterStart closes.
func TestLimitGoMemoryWaitsForAfterStart(t *testing.T) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Skip("GOMEMLIMIT is set: LimitGoMemory leaves the limit alone")
	}
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	after := make(chan struct{})
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}, AfterStart: after})
	done := h.LimitGoMemory(32 << 20)
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case limit := <-done:
		t.Fatalf("the memory limit (%d) was set before AfterStart was closed", limit)
	case <-time.After(100 * time.Millisecond):
	}
	if got := debug.SetMemoryLimit(-1); got != old {
		t.Fatalf("the memory limit changed to %d before AfterStart was closed", got)
	}
	close(after)
	if limit := <-done; limit <= 32<<20 || debug.SetMemoryLimit(-1) != limit {
		t.Fatalf("after AfterStart closed: limit %d, in force %d", limit, debug.SetMemoryLimit(-1))
	}
}

// BenchmarkMixedRSS makes b.N mixed calls of the six memory tools (the mix of
// cmd/bench: search, recall, read_chunk, browse, top_entities, list_sources)
// through the first-party module on a store, then reports the RSS breakdown and
// the live Go heap. The store is OH_BENCH_STORE (a chunks.db, e.g. one cmd/bench
// -keep ingested) or the small fixture; OH_HEAPPROF=file writes a heap profile
// of the state after the calls.
//
//	OH_BENCH_STORE=/tmp/oh-bench-…/ours/ws/memory_tree/chunks.db \
//	  go test ./runtime -run '^$' -bench MixedRSS -benchtime 1000x
func BenchmarkMixedRSS(b *testing.B) {
	var store *memtree.Store
	if p := os.Getenv("OH_BENCH_STORE"); p != "" {
		s, err := memtree.OpenReadOnly(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		store = s
	} else {
		store = fixtureStore(b)
	}
	dir := filepath.Join(os.TempDir(), "openhuman-bench-wazero-cache")
	h, _ := newHost(b, Options{Reader: memory.Default(store), Builtins: firstPartyBuiltins(b), CacheDir: dir})
	ctx := context.Background()
	if err := h.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	words := []string{"budget", "launch", "review", "meeting", "invoice", "project", "travel", "garage", "thursday", "phoenix", "subject", "water"}
	var ids []string
	failed := 0
	b.ResetTimer()
	for n := range b.N {
		q := words[n%len(words)]
		var c Call
		switch n % 8 {
		case 0, 1, 2:
			c = Call{Tool: "memory.search", Arguments: []byte(`{"query":"` + q + `","k":10}`)}
		case 3, 4:
			c = Call{Tool: "memory.recall", Arguments: []byte(`{"query":"` + q + `","k":10}`)}
		case 5:
			if len(ids) == 0 {
				continue
			}
			c = Call{Tool: "tree.read_chunk", Arguments: []byte(`{"chunk_id":"` + ids[n%len(ids)] + `"}`)}
		case 6:
			c = Call{Tool: "tree.browse", Arguments: []byte(`{"k":20}`)}
		case 7:
			c = Call{Tool: "tree.list_sources", Arguments: []byte(`{}`)}
			if n%16 == 7 {
				c = Call{Tool: "tree.top_entities", Arguments: []byte(`{"k":20}`)}
			}
		}
		out, err := h.Call(ctx, c)
		if err != nil {
			b.Fatalf("%s: %v", c.Tool, err)
		}
		if out.ToolError != nil {
			failed++
			continue
		}
		if c.Tool == "memory.search" && len(ids) < 64 {
			var r abi.SearchResult
			if json.Unmarshal(out.Result, &r) == nil {
				for _, hit := range r.Chunks {
					ids = append(ids, hit.ID)
				}
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(failed), "tool-errors")
	b.ReportMetric(float64(h.pool.created.Load()), "instances-made")
	b.ReportMetric(procStatusMB(b, "VmHWM"), "VmHWM-MB")
	b.ReportMetric(procStatusMB(b, "VmRSS"), "VmRSS-MB")
	var linear uint64
	h.pool.mu.Lock()
	for _, in := range h.pool.idle {
		linear += in.memoryBytes()
	}
	idle := len(h.pool.idle)
	h.pool.mu.Unlock()
	b.ReportMetric(float64(linear)/mib, "guest-linear-MB")
	b.ReportMetric(float64(idle), "idle-instances")
	reportMemory(b)
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/mib, "live-heap-MB")
	if p := os.Getenv("OH_HEAPPROF"); p != "" {
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
