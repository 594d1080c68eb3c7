package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkListSourcesMCP measures tree.list_sources pages (k=50) through the
// whole stack — the go-sdk client, `openhuman-core mcp`, the sandboxed memory
// module and the store — on a store of 68,000 sources, beside a ping (the
// protocol's floor) in the same run. It reports p50 and p95 per call.
//
//	go test ./internal/e2e -run '^$' -bench ListSourcesMCP -benchtime 100x
func BenchmarkListSourcesMCP(b *testing.B) {
	const n = 68000
	ws := filepath.Join(os.TempDir(), fmt.Sprintf("openhuman-e2e-bench-sources-v1-%d", n))
	path := filepath.Join(ws, "memory_tree", "chunks.db")
	if _, err := os.Stat(filepath.Join(ws, "done")); err != nil {
		os.RemoveAll(ws)
		writeSources(b, path, n)
		os.WriteFile(filepath.Join(ws, "done"), nil, 0o600)
	}
	dependOnSources()
	e := &env{home: b.TempDir(), workspace: ws, cache: sharedCache}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: e.command(ctx, "mcp")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := func(args map[string]any) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tree.list_sources", Arguments: args})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		return err
	}
	cases := []struct {
		name string
		f    func() error
	}{
		{"ping", func() error { return cs.Ping(ctx, nil) }},
		{"first", func() error { return call(map[string]any{"k": 50}) }},
		{"deep", func() error { return call(map[string]any{"k": 50, "offset": 40000}) }},
		{"kinds", func() error { return call(map[string]any{"k": 50, "kinds": []string{"email"}, "offset": 20000}) }},
		{"query", func() error { return call(map[string]any{"k": 50, "query": "gamma", "offset": 1000}) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < 3; i++ { // warm: module instance, source list
				if err := c.f(); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			d := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := c.f(); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
			}
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(d[len(d)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

// BenchmarkSearchShapes measures memory.search and memory.recall through the whole
// stack on the shared ingested store (the generated corpus when ../shared/data is
// present, else the fixture) with the result shapes clients get — hits with their
// cited messages — beside a ping, reporting p50 per call and the result's size.
//
//	go test ./internal/e2e -run '^$' -bench SearchShapes -benchtime 100x
func BenchmarkSearchShapes(b *testing.B) {
	ws := ingestedWorkspace(b)
	dependOnSources()
	e := &env{home: b.TempDir(), workspace: ws, cache: sharedCache}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: e.command(ctx, "mcp")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	queries := []string{"phoenix launch", "brake repair quote", "book club", "Lisbon trip", "invoice"}
	for _, c := range []struct {
		name, tool string
		k          int
	}{{"ping", "", 0}, {"search-k10", "memory.search", 10}, {"search-k50", "memory.search", 50}, {"recall-k10", "memory.recall", 10}} {
		b.Run(c.name, func(b *testing.B) {
			size, bare := 0, 0
			f := func(i int) error {
				if c.tool == "" {
					return cs.Ping(ctx, nil)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"query": queries[i%len(queries)], "k": c.k}})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", res.Content)
				}
				if err == nil {
					text := res.Content[0].(*mcp.TextContent).Text
					size += len(text)
					// The same result without the cited messages (the shape before them).
					var v map[string]any
					if err := json.Unmarshal([]byte(text), &v); err != nil {
						return err
					}
					delete(v, "message_text_max_chars")
					for _, h := range v["chunks"].([]any) {
						delete(h.(map[string]any), "messages")
					}
					out, _ := json.Marshal(v)
					bare += len(out)
				}
				return err
			}
			for i := 0; i < len(queries); i++ {
				if err := f(i); err != nil {
					b.Fatal(err)
				}
			}
			size, bare = 0, 0
			b.ResetTimer()
			d := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := f(i); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
			}
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(d[len(d)*95/100].Microseconds())/1000, "p95-ms")
			b.ReportMetric(float64(size)/float64(b.N), "result-bytes")
			b.ReportMetric(float64(bare)/float64(b.N), "without-messages-bytes")
		})
	}
}
