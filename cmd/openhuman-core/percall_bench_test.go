package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/mcpserver"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// BenchmarkSearchPerCall reproduces cmd/bench's "memory.search through MCP − read
// API" figure in one process, so that it can be profiled: memory.search on one
// store through
//
//   - api: the memtree read API, its result encoded with json.Marshal (what the
//     bench's direct figure measures: the host encodes what it hands the guest);
//   - dispatch: runtime.Host.Call, the sandbox and the first-party shaping, no MCP;
//   - mcp: a tools/call line written to `mcp`'s stdio server on a pipe and its
//     answer read and decoded as cmd/bench's client does;
//   - mcp-sdk: the same with Options.NoFastCalls (the go-sdk decodes the request);
//
// over the same queries. mcp − api is the bench's figure (as a mean, not a p50).
// The store is cmd/bench's when OPENHUMAN_BENCH_WORKSPACE names a kept bench
// workspace (`go run ./cmd/bench -keep`; the folder holding memory_tree/), else a
// two-message one. Run:
//
//	OPENHUMAN_BENCH_WORKSPACE=/tmp/bench-…/ws go test ./cmd/openhuman-core -run '^$' -bench SearchPerCall -benchtime 2000x
func BenchmarkSearchPerCall(b *testing.B) {
	home := b.TempDir()
	b.Setenv("OPENHUMAN_HOME", filepath.Join(home, ".openhuman"))
	b.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	qs := []string{"brake quote", "garden", "Bob"}
	if ws := os.Getenv("OPENHUMAN_BENCH_WORKSPACE"); ws != "" {
		b.Setenv("OPENHUMAN_WORKSPACE", ws)
		db, err := sql.Open("sqlite", "file:"+filepath.Join(ws, "memory_tree", "chunks.db")+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		qs, err = benchQueries(db, 12)
		db.Close()
		if err != nil {
			b.Fatal(err)
		}
	} else {
		b.Setenv("OPENHUMAN_WORKSPACE", "")
		notes, mbox := writeCorpusB(b, home)
		if code := execute(context.Background(), []string{"ingest", notes, mbox}, io.Discard); code != 0 {
			b.Fatalf("ingest: exit %d", code)
		}
	}
	log := setupLogging(io.Discard)
	cfg, err := loadConfig(log)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	host, closeHost, err := openHost(ctx, cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	defer closeHost()
	if err := host.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	store, err := memtree.OpenReadOnly(cfg.StorePath())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()

	api := func(q string) {
		res, err := memory.Default(store).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
	// apiDeadline is api under a call's deadline, as the host runs the read
	// (a context that can end makes database/sql watch it for every query).
	apiDeadline := func(q string) {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := memory.Default(store).Search(dctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
	dispatch := func(q string) {
		args, _ := json.Marshal(map[string]any{"query": q, "k": 10})
		out, err := host.Call(ctx, runtime.Call{Tool: "memory.search", Arguments: args, Client: "mcp:bench"})
		if err != nil || out.ToolError != nil {
			b.Fatalf("memory.search: %v %+v", err, out)
		}
	}
	// lineClient is cmd/bench's client (proc.go): call returns the time from
	// writing the line to having read and decoded the answer's frame (the
	// bench's timed span) and the time to having read it, before decoding.
	lineClient := func(noFast bool) (func(q string) (decoded, read time.Duration), func()) {
		srv, err := mcpserver.New(mcpserver.Options{Dispatcher: host, Logger: log, NoFastCalls: noFast})
		if err != nil {
			b.Fatal(err)
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		sctx, cancel := context.WithCancel(ctx)
		go srv.Serve(sctx, inR, outW)
		out := bufio.NewReaderSize(outR, 64<<10)
		id := 0
		request := func(method string, params any) (json.RawMessage, time.Duration, time.Duration) {
			id++
			p, _ := json.Marshal(params)
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, p)
			t0 := time.Now()
			if _, err := io.WriteString(inW, line); err != nil {
				b.Fatal(err)
			}
			for {
				frame, err := out.ReadBytes('\n')
				if err != nil {
					b.Fatal(err)
				}
				dRead := time.Since(t0)
				var resp struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  *struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(frame, &resp); err != nil {
					b.Fatalf("bad frame %.200q: %v", frame, err)
				}
				if string(resp.ID) != strconv.Itoa(id) {
					continue
				}
				d := time.Since(t0)
				if resp.Error != nil {
					b.Fatalf("%s: %s", method, resp.Error.Message)
				}
				return resp.Result, d, dRead
			}
		}
		request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "0"}})
		io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		call := func(q string) (time.Duration, time.Duration) {
			res, d, dRead := request("tools/call", map[string]any{"name": "memory.search", "arguments": map[string]any{"query": q, "k": 10}})
			var r struct {
				IsError bool `json:"isError"`
			}
			if json.Unmarshal(res, &r) != nil || r.IsError {
				b.Fatalf("memory.search: %.300s", res)
			}
			return d, dRead
		}
		return call, func() { inW.Close(); cancel() }
	}
	mcpFast, closeFast := lineClient(false)
	defer closeFast()
	mcpSDK, closeSDK := lineClient(true)
	defer closeSDK()
	for _, q := range qs { // warm every path
		api(q)
		dispatch(q)
		mcpFast(q)
		mcpSDK(q)
	}
	for _, c := range []struct {
		name string
		f    func(string)
	}{{"api", api}, {"dispatch", dispatch}, {"mcp", func(q string) { mcpFast(q) }}, {"mcp-sdk", func(q string) { mcpSDK(q) }}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.f(qs[i%len(qs)])
			}
		})
	}
	// The bench's own figure: per query, p50 of MCP minus p50 of the API,
	// interleaved so both see the same load.
	b.Run("p50", func(b *testing.B) {
		var da, dad, dd, dm, dmRead, ds []time.Duration
		timed := func(d *[]time.Duration, f func(string)) func(string) {
			return func(q string) {
				t0 := time.Now()
				f(q)
				*d = append(*d, time.Since(t0))
			}
		}
		steps := []func(string){
			timed(&da, api),
			timed(&dad, apiDeadline),
			timed(&dd, dispatch),
			func(q string) {
				d, dr := mcpFast(q)
				dm, dmRead = append(dm, d), append(dmRead, dr)
			},
			func(q string) {
				d, _ := mcpSDK(q)
				ds = append(ds, d)
			},
		}
		for i := 0; i < b.N; i++ {
			q := qs[i%len(qs)]
			// Each query once per path, starting at a different path each time
			// (as cmd/bench does): no path always runs right after another.
			for k := range steps {
				steps[(i+k)%len(steps)](q)
			}
		}
		p50 := func(d []time.Duration) float64 {
			slices.Sort(d)
			return float64(d[len(d)/2].Microseconds()) / 1000
		}
		a := p50(da)
		b.ReportMetric(a, "api_p50_ms")
		b.ReportMetric(p50(dad)-a, "apideadline-api_p50_ms")
		b.ReportMetric(p50(dd)-a, "dispatch-api_p50_ms")
		b.ReportMetric(p50(dmRead)-a, "mcpread-api_p50_ms")
		b.ReportMetric(p50(dm)-a, "mcp-api_p50_ms")
		b.ReportMetric(p50(ds)-a, "mcpsdk-api_p50_ms")
	})
}

// benchQueries draws n queries from the store's vocabulary as cmd/bench's
// pickQueries does (common, middle, rare terms and two-term queries).
func benchQueries(db *sql.DB, n int) ([]string, error) {
	rows, err := db.Query(`SELECT term FROM chunks_fts_vocab WHERE length(term) >= 4 AND term GLOB '[a-z]*' AND doc >= 2 ORDER BY doc DESC LIMIT 4000`)
	if err != nil {
		return nil, fmt.Errorf("read the store's vocabulary: %w", err)
	}
	defer rows.Close()
	var terms []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	if len(terms) < 10 {
		return nil, fmt.Errorf("the store has too few distinct words (%d)", len(terms))
	}
	at := func(f float64, k int) string { return terms[min(int(f*float64(len(terms)))+k, len(terms)-1)] }
	out := make([]string, 0, n)
	for k := 0; len(out) < n; k++ {
		switch len(out) % 4 {
		case 0:
			out = append(out, at(0, k))
		case 1:
			out = append(out, at(0.2, 7*k))
		case 2:
			out = append(out, at(0.7, 13*k))
		case 3:
			out = append(out, at(0.01, k)+" "+at(0.1, 3*k))
		}
	}
	return out, nil
}
