package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPSessions drives a running `openhuman-core serve` (on whichever
// store backend it was started with) from N concurrent /mcp sessions of the
// official Go SDK client, each issuing memory.search with queries of the
// benchmark corpus back to back for a fixed time, and reports, for each N,
// the searches per second and the p50 and p95 latency. It runs once (the
// figures are the run's); without a server to drive it is skipped. Run, with
// serve started on the store to measure:
//
//	OPENHUMAN_BENCH_MCP_URL=http://127.0.0.1:7788/mcp OPENHUMAN_BENCH_TOKEN=<token> \
//	OPENHUMAN_BENCH_SESSIONS=1,8,64 OPENHUMAN_BENCH_SECONDS=60 \
//	go test ./cmd/openhuman-core -run '^$' -bench MCPSessions -benchtime 1x -timeout 30m
func BenchmarkMCPSessions(b *testing.B) {
	endpoint, token := os.Getenv("OPENHUMAN_BENCH_MCP_URL"), os.Getenv("OPENHUMAN_BENCH_TOKEN")
	if endpoint == "" || token == "" {
		b.Skip("not run: set OPENHUMAN_BENCH_MCP_URL and OPENHUMAN_BENCH_TOKEN to a running serve's /mcp and bearer token")
	}
	levels := []int{1, 8, 64}
	if v := os.Getenv("OPENHUMAN_BENCH_SESSIONS"); v != "" {
		levels = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("OPENHUMAN_BENCH_SESSIONS: %q is not a session count", f)
			}
			levels = append(levels, n)
		}
	}
	dur := 60 * time.Second
	if v := os.Getenv("OPENHUMAN_BENCH_SECONDS"); v != "" {
		s, err := strconv.Atoi(v)
		if err != nil || s < 1 {
			b.Fatalf("OPENHUMAN_BENCH_SECONDS: %q", v)
		}
		dur = time.Duration(s) * time.Second
	}
	// Queries over the benchmark corpus's topics (gencorpus -scale): common and
	// rare words, names, a phrase.
	queries := []string{"indemnity cap", "Halvorsen contract", "conference hotel", "budget variance quarter", "invite Wednesday",
		"WebAssembly talk", "reservation", "brake repair quote", "Lisbon trip", "outage postmortem", "book club", "Phoenix launch date"}
	ctx := context.Background()
	hc := &http.Client{Transport: bearer{token}}
	for i := 0; i < b.N; i++ {
		for _, n := range levels {
			sessions := make([]*mcp.ClientSession, n)
			for j := range sessions {
				client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("bench-%d", j), Version: "1"}, nil)
				cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
				if err != nil {
					b.Fatalf("session %d of %d: %v", j+1, n, err)
				}
				sessions[j] = cs
			}
			// One warm call per session (compiled module, pools, caches).
			for _, cs := range sessions {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "budget", "k": 10}}); err != nil {
					b.Fatalf("warm-up: %v", err)
				}
			}
			var mu sync.Mutex
			var lat []time.Duration
			errs := 0
			kinds := map[string]int{} // error messages (their start) and how often
			deadline := time.Now().Add(dur)
			var wg sync.WaitGroup
			for j, cs := range sessions {
				wg.Go(func() {
					var mine []time.Duration
					bad := 0
					for k := j; time.Now().Before(deadline); k++ {
						start := time.Now()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": queries[k%len(queries)], "k": 10}})
						if err != nil || res.IsError {
							bad++
							msg := ""
							if err != nil {
								msg = err.Error()
							} else if len(res.Content) > 0 {
								if tc, ok := res.Content[0].(*mcp.TextContent); ok {
									msg = tc.Text
								}
							}
							mu.Lock()
							kinds[msg[:min(len(msg), 120)]]++
							mu.Unlock()
							continue
						}
						mine = append(mine, time.Since(start))
					}
					mu.Lock()
					lat = append(lat, mine...)
					errs += bad
					mu.Unlock()
				})
			}
			wg.Wait()
			for _, cs := range sessions {
				cs.Close()
			}
			if len(lat) == 0 {
				b.Fatalf("%d sessions: no search succeeded (%d errors)", n, errs)
			}
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			qps := float64(len(lat)) / dur.Seconds()
			p50, p95 := ms(lat[len(lat)/2]), ms(lat[len(lat)*95/100])
			b.ReportMetric(qps, fmt.Sprintf("searches/s@%d", n))
			b.ReportMetric(p50, fmt.Sprintf("p50_ms@%d", n))
			b.ReportMetric(p95, fmt.Sprintf("p95_ms@%d", n))
			b.Logf("%d sessions, %s: %d searches (%.1f/s), p50 %.1f ms, p95 %.1f ms, %d errors", n, dur, len(lat), qps, p50, p95, errs)
			for msg, c := range kinds {
				b.Logf("  %d× %s", c, msg)
			}
		}
	}
}
