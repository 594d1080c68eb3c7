package memtree_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// sourcesBenchN is the number of sources of the list_sources benchmark store: the
// 68k sources of the real archive in issue 19.
const sourcesBenchN = 68000

// sourcesBenchStore returns the path of a store with sourcesBenchN one-message
// sources, built once and cached in os.TempDir().
func sourcesBenchStore(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("memtree-bench-sources-v1-%d", sourcesBenchN))
	path := filepath.Join(dir, "chunks.db")
	done := filepath.Join(dir, "done")
	if _, err := os.Stat(done); err != nil {
		os.RemoveAll(dir)
		st, err := memtree.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		manySources(b, st, sourcesBenchN)
		st.Close()
		os.WriteFile(done, nil, 0o600)
	}
	st, err := memtree.Open(path) // brings a store cached by an older binary to this schema
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	return path
}

// BenchmarkListSourcesPages measures one tree.list_sources page (the read API, k=50)
// on a store of 68,000 sources: the first page, the last, a kinds filter deep in the
// list, a display-name query, and, after the store changed (empty caches), the
// first page and a query. It reports p50 and p95 per page.
//
//	go test ./internal/memtree -run '^$' -bench ListSourcesPages -benchtime 100x
func BenchmarkListSourcesPages(b *testing.B) {
	path := sourcesBenchStore(b)
	st, err := memtree.OpenReadOnly(path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	reqs := []struct {
		name string
		req  abi.SourcesListRequest
	}{
		{"first", abi.SourcesListRequest{K: 50}},
		{"last", abi.SourcesListRequest{K: 50, Offset: sourcesBenchN - 50}},
		{"kinds", abi.SourcesListRequest{K: 50, Kinds: []string{"email"}, Offset: 20000}},
		{"query", abi.SourcesListRequest{K: 50, Query: "gamma", Offset: 1000}},
	}
	api := memory.Default(st) // one API, as a server holds: its named lists persist
	for _, r := range reqs {
		b.Run(r.name, func(b *testing.B) {
			pages(b, func() error {
				res, err := api.ListSources(ctx, r.req)
				if err == nil && len(res.Sources) != 50 {
					err = fmt.Errorf("%d sources", len(res.Sources))
				}
				return err
			})
		})
	}
	// After the store changed: the first page (read through the index) and a
	// display-name query (which loads the whole list once per generation).
	for _, r := range []struct {
		name string
		req  abi.SourcesListRequest
	}{
		{"changed-first", abi.SourcesListRequest{K: 50}},
		{"changed-query", abi.SourcesListRequest{K: 50, Query: "gamma"}},
	} {
		b.Run(r.name, func(b *testing.B) {
			var d []time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				fresh, err := memtree.OpenReadOnly(path) // empty caches, as after an ingest
				if err != nil {
					b.Fatal(err)
				}
				if _, err := memory.Default(fresh).GetChunk(ctx, abi.ChunkGetRequest{ID: strings.Repeat("0", 32)}); !errors.Is(err, memtree.ErrNotFound) {
					b.Fatal(err) // opens the connections outside the timing
				}
				b.StartTimer()
				t0 := time.Now()
				if _, err := memory.Default(fresh).ListSources(ctx, r.req); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
				b.StopTimer()
				fresh.Close()
				b.StartTimer()
			}
			report(b, d)
		})
	}
}

func pages(b *testing.B, f func() error) {
	if err := f(); err != nil { // warm the generation's cache
		b.Fatal(err)
	}
	b.ResetTimer()
	d := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	report(b, d)
}

func report(b *testing.B, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*95/100].Microseconds())/1000, "p95-ms")
}
