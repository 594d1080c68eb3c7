package main

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/mcpserver"
)

// BenchmarkSearchHTTPvsStdio times memory.search through the real module on one
// store, from the official go-sdk client over stdio (pipes, as `mcp` serves) and
// over Streamable HTTP (/mcp's handler on a loopback server), and reports each
// p50 and what HTTP adds. Run:
//
//	go test ./cmd/openhuman-core -run '^$' -bench SearchHTTPvsStdio -benchtime 200x
func BenchmarkSearchHTTPvsStdio(b *testing.B) {
	home := b.TempDir()
	b.Setenv("OPENHUMAN_HOME", filepath.Join(home, ".openhuman"))
	b.Setenv("OPENHUMAN_WORKSPACE", "")
	b.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	notes, mbox := writeCorpusB(b, home)
	if code := execute(context.Background(), []string{"ingest", notes, mbox}, io.Discard); code != 0 {
		b.Fatalf("ingest: exit %d", code)
	}
	log := setupLogging(io.Discard)
	cfg, err := loadConfig(log)
	if err != nil {
		b.Fatal(err)
	}
	host, closeHost, err := openHost(context.Background(), cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	defer closeHost()
	if err := host.WaitReady(context.Background()); err != nil { // compiled, not interpreted
		b.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Dispatcher: host, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	host.OnChange(srv.Refresh)
	srv.Refresh()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)

	// stdio: the server on pipes, the client on the other ends.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go srv.Serve(ctx, inR, outW)
	stdio, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer stdio.Close()

	hs := httptest.NewServer(srv.HTTPHandler(mcpserver.HTTPOptions{}))
	defer hs.Close()
	httpSess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer httpSess.Close()

	args := map[string]any{"query": "brake quote", "k": 10}
	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.search", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("memory.search: %v %+v", err, res)
		}
		return time.Since(start)
	}
	for range 20 { // warm both paths (compile, pools)
		call(stdio)
		call(httpSess)
	}
	var ds, dh []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ { // alternate, so both see the same machine load
		ds = append(ds, call(stdio))
		dh = append(dh, call(httpSess))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	s, h := p50(ds), p50(dh)
	b.ReportMetric(s, "stdio_p50_ms")
	b.ReportMetric(h, "http_p50_ms")
	b.ReportMetric(h-s, "http_added_p50_ms")
}

// writeCorpusB is writeCorpus for a benchmark.
func writeCorpusB(b *testing.B, dir string) (notes, mbox string) {
	notes = filepath.Join(dir, "notes")
	os.MkdirAll(notes, 0o755)
	os.WriteFile(filepath.Join(notes, "garden.md"), []byte("# Garden\n\nPlant tomatoes in May. Ask Bob Stone about the fence.\n"), 0o644)
	mbox = filepath.Join(dir, "mail.mbox")
	os.WriteFile(mbox, []byte("From alice@kestrel.example Tue Feb  3 09:00:00 2026\nFrom: Alice Martin <alice@kestrel.example>\nTo: Bob Stone <bob@garage.example>\nSubject: Brake repair quote\nDate: Tue, 3 Feb 2026 09:00:00 +0000\nMessage-ID: <brakes-1@kestrel.example>\n\nHi Bob, the car makes a grinding noise when braking. Could you send a quote?\n"), 0o644)
	return notes, mbox
}
