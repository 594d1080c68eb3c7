package rpcserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/runtime"
)

var benchQueries = []string{"brake pads", "launch date", "billing migration", "Lisbon hotel", "quote"}

// reportLatencies adds req/s, p50 and p99 to a benchmark's output.
func reportLatencies(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkSearchHTTP: openhuman.memory_tree_search over loopback HTTP into the real
// runtime, b.N requests shared by 50 keep-alive clients.
func BenchmarkSearchHTTP(b *testing.B) {
	e := newRealEnv(b, 15000)
	e.call(b, "openhuman.memory_tree_search", `{"query":"warm up"}`)
	b.ResetTimer()
	per := max(b.N/50, 1)
	res := runLoad(e.http.URL, testToken, 50, per, func(c, i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"openhuman.memory_tree_search","params":{"query":%q,"k":5}}`, i, benchQueries[(c+i)%len(benchQueries)])
	}, checkResult(`"chunks"`))
	b.StopTimer()
	if len(res.Errors) > 0 {
		b.Fatalf("errors: %v", res.Errors)
	}
	b.ReportMetric(float64(res.Requests)/res.Elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(res.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(res.P99.Microseconds())/1000, "p99-ms")
}

// BenchmarkSearchDirect: the same calls straight into the runtime (no HTTP, no
// JSON-RPC) from DefaultMaxInFlightPerTool goroutines — the concurrency the server
// lets into one tool — to separate the server's share of the latency from the
// sandbox's. (With 50 goroutines calling the runtime directly, some calls wait for a
// sandbox past their 10 s deadline: the reason for the server's per-tool bound.)
func BenchmarkSearchDirect(b *testing.B) {
	e := newRealEnv(b, 15000)
	ctx := context.Background()
	var n atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < DefaultMaxInFlightPerTool; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var mine []time.Duration
			for i := n.Add(1); i <= int64(b.N); i = n.Add(1) {
				args, _ := json.Marshal(map[string]any{"query": benchQueries[int(i)%len(benchQueries)], "k": 5})
				t0 := time.Now()
				out, err := e.host.Call(ctx, runtime.Call{Tool: "memory.search", Arguments: args, Client: "rpc"})
				mine = append(mine, time.Since(t0))
				if err != nil || out.ToolError != nil {
					b.Errorf("call: %v %+v", err, out)
					return
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatencies(b, lat, elapsed)
}
