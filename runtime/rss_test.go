package runtime

import (
	"bufio"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
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
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtin("echo.wasm", echoModule(t, ""))}})
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
