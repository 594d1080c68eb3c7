package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// BenchmarkWatch10kNotes measures `watch` over a tree of 10,000 notes (100
// folders of 100): the first pass, the idle CPU and RSS of the process over
// OPENHUMAN_WATCH_IDLE (60s by default), and the time from a file write to a
// search hit (p50/p95 over 100 writes, each a new note, searched through the
// store's read API every 5 ms). One run; the figures are reported as metrics:
//
//	go test ./cmd/openhuman-core -run '^$' -bench Watch10kNotes -benchtime 1x
func BenchmarkWatch10kNotes(b *testing.B) {
	idle := 60 * time.Second
	if v := os.Getenv("OPENHUMAN_WATCH_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("OPENHUMAN_WATCH_IDLE: %v", err)
		}
		idle = d
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "openhuman-core")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	tree := filepath.Join(dir, "notes")
	for d := 0; d < 100; d++ {
		for f := 0; f < 100; f++ {
			p := filepath.Join(tree, fmt.Sprintf("area-%02d", d), fmt.Sprintf("note-%03d.md", f))
			os.MkdirAll(filepath.Dir(p), 0o755)
			body := fmt.Sprintf("# Note %d.%d\n\nMeeting notes about project %d, topic %d: the budget, the schedule and who does what next week.\n", d, f, d, f)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	ohome := filepath.Join(dir, "oh")
	// A rescan well beyond the idle window: idle means file events only.
	os.MkdirAll(ohome, 0o755)
	os.WriteFile(filepath.Join(ohome, "config.toml"), []byte("[watch]\nrescan_seconds = 3600\n"), 0o600)
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "watch", tree)
		cmd.Env = append(os.Environ(), "OPENHUMAN_HOME="+ohome, "HOME="+dir)
		pr, _ := cmd.StderrPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer cmd.Process.Kill()
		sc := bufio.NewScanner(pr)
		firstPass := false
		for sc.Scan() {
			if strings.Contains(sc.Text(), "watch: first pass") {
				firstPass = true
				break
			}
		}
		if !firstPass {
			b.Fatal("watch ended before its first pass")
		}
		go func() {
			for sc.Scan() {
			}
		}()
		first := time.Since(start)
		pid := cmd.Process.Pid
		time.Sleep(2 * time.Second) // let the post-pass work (compaction, GC) settle
		cpu0, t0 := cpuTicks(b, pid), time.Now()
		time.Sleep(idle)
		cpu1, t1 := cpuTicks(b, pid), time.Now()
		rss := procStatusKB(b, pid, "VmRSS:")
		hwm := procStatusKB(b, pid, "VmHWM:")
		idleCPU := float64(cpu1-cpu0) / 100 / t1.Sub(t0).Seconds() * 100 // clock ticks are 1/100 s

		st, err := memtree.OpenReadOnly(filepath.Join(ohome, "workspace", "memory_tree", "chunks.db"))
		if err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		for k := 0; k < 100; k++ {
			w := "zephyrq" + string(rune('a'+k%26)) + string(rune('a'+k/26)) + "x" // ends in x: no stemmer folds two together
			p := filepath.Join(tree, fmt.Sprintf("area-%02d", k%100), fmt.Sprintf("new-%03d.md", k))
			t0 := time.Now()
			os.WriteFile(p, []byte("# New\n\nThe "+w+" appears here.\n"), 0o644)
			for {
				res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: w, K: 3})
				if err != nil {
					b.Fatal(err)
				}
				if slices.ContainsFunc(res.Chunks, func(h abi.ChunkHit) bool { return strings.Contains(h.Snippet, w) }) {
					break
				}
				if time.Since(t0) > 30*time.Second {
					b.Fatalf("write %d not found in 30 s", k)
				}
				time.Sleep(5 * time.Millisecond)
			}
			lat = append(lat, time.Since(t0))
		}
		st.Close()
		slices.Sort(lat)
		p50, p95 := lat[len(lat)/2], lat[len(lat)*95/100]
		b.ReportMetric(first.Seconds(), "first-pass-s")
		b.ReportMetric(idleCPU, "idle-cpu-%")
		b.ReportMetric(float64(rss)/1024, "idle-rss-MiB")
		b.ReportMetric(float64(hwm)/1024, "peak-rss-MiB")
		b.ReportMetric(float64(p50.Milliseconds()), "write-to-hit-p50-ms")
		b.ReportMetric(float64(p95.Milliseconds()), "write-to-hit-p95-ms")
		b.Logf("10,000 notes: first pass %.1f s; idle over %v: CPU %.3f %%, RSS %d MiB (peak %d MiB); write to search hit over 100 writes: p50 %v, p95 %v",
			first.Seconds(), idle, idleCPU, rss/1024, hwm/1024, p50.Round(time.Millisecond), p95.Round(time.Millisecond))
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}

// cpuTicks is the user+system CPU time of pid in clock ticks (/proc/PID/stat).
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc (Linux only): %v", err)
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return ut + st
}

// procStatusKB reads a kB field of /proc/PID/status.
func procStatusKB(b *testing.B, pid int, key string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc (Linux only): %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, key) {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	return 0
}
