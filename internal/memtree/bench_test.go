package memtree_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// benchStoreVersion names the cached benchmark stores; bump it when chunking or the
// schema changes so stale stores are rebuilt.
const benchStoreVersion = 5

// benchStore returns a store built from the corpus at -scale n, cached in
// os.TempDir() across runs, and the ingest rate measured when it was built.
func benchStore(b *testing.B, n int) (*memtree.Store, string) {
	b.Helper()
	if _, err := os.Stat(filepath.Join(sharedData(b), "gencorpus", "main.go")); err != nil {
		b.Skipf("shared corpus generator not present at %s", sharedData(b))
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("memtree-bench-v%d-%d", benchStoreVersion, n))
	path := filepath.Join(dir, "store", "chunks.db")
	rateFile := filepath.Join(dir, "ingest-rate.txt")
	if _, err := os.Stat(rateFile); err != nil {
		os.RemoveAll(dir)
		corpus := filepath.Join(dir, "corpus")
		genCorpus(b, corpus, "-scale", fmt.Sprint(n))
		st, err := memtree.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		sum, err := ingest.Run(context.Background(), st, []string{corpus}, ingest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		secs := time.Since(t0).Seconds()
		st.Close()
		line := fmt.Sprintf("%d chunks in %.1f s = %.0f chunks/s (%s)", sum.ChunksNew, secs, float64(sum.ChunksNew)/secs, sum.Line())
		os.WriteFile(rateFile, []byte(line), 0o600)
	}
	// The paraphrase table `ingest` builds when FreeDict's English-German
	// dictionaries are installed (MEMTREE_BENCH_PIVOT=off leaves a store without it).
	if os.Getenv("MEMTREE_BENCH_PIVOT") != "off" {
		w, err := memtree.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		res, err := ingest.Paraphrases(context.Background(), w, config.DefaultPivotDictionaries)
		w.Close()
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Dictionaries) == 0 {
			b.Logf("no FreeDict English-German dictionary installed: recall is measured without the paraphrase table")
		}
	}
	rate, _ := os.ReadFile(rateFile)
	st, err := memtree.OpenReadOnly(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, string(rate)
}

// p50 runs fn b.N times and reports the median and 90th percentile latency in ms.
func p50(b *testing.B, fn func(i int) error) {
	b.Helper()
	latencies(b, fn, 90)
}

var benchQueries = []string{
	"phoenix launch delay", "brake repair quote", "budget forecast variance", "lisbon hotel booking",
	"interview scorecard feedback", "outage postmortem database", "book club meeting", "tax documents accountant",
	"halvorsen contract renewal", "apartment rent transfer", "school bake sale", "doctor appointment bloodwork",
}

func benchScales(b *testing.B, fn func(b *testing.B, st *memtree.Store)) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("scale=%d", n), func(b *testing.B) {
			st, rate := benchStore(b, n)
			b.Logf("ingest at scale %d: %s", n, rate)
			fn(b, st)
		})
	}
}

func BenchmarkSearch(b *testing.B) {
	benchScales(b, func(b *testing.B, st *memtree.Store) {
		p50(b, func(i int) error {
			_, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: benchQueries[i%len(benchQueries)], K: 10})
			return err
		})
	})
}

func BenchmarkRecall(b *testing.B) {
	benchScales(b, func(b *testing.B, st *memtree.Store) {
		p50(b, func(i int) error {
			_, err := memory.Default(st).Recall(context.Background(), abi.RecallRequest{Query: benchQueries[i%len(benchQueries)], K: 10})
			return err
		})
	})
}

func BenchmarkListChunks(b *testing.B) {
	benchScales(b, func(b *testing.B, st *memtree.Store) {
		ctx := context.Background()
		srcs, err := memory.Default(st).ListSources(ctx, abi.SourcesListRequest{})
		if err != nil || len(srcs.Sources) == 0 {
			b.Fatalf("no sources: %v", err)
		}
		ents, _ := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: "person", K: 1})
		since, until := srcs.Sources[len(srcs.Sources)/2].FirstMS, srcs.Sources[len(srcs.Sources)/2].MostRecentMS
		filters := map[string]abi.ChunksListRequest{
			"none":        {},
			"kind":        {SourceKinds: []string{"email"}},
			"source":      {SourceIDs: []string{srcs.Sources[0].SourceID}},
			"entity":      {EntityIDs: []string{ents.Entities[0].EntityID}},
			"since-until": {SinceMS: &since, UntilMS: &until},
			"query+kind":  {SourceKinds: []string{"email"}, Query: "budget"},
			"query":       {Query: "forecast"},
		}
		names := []string{"none", "kind", "source", "entity", "since-until", "query+kind", "query"}
		for _, name := range names {
			req := filters[name]
			req.K = 20
			b.Run(name, func(b *testing.B) {
				p50(b, func(int) error { _, err := memory.Default(st).ListChunks(ctx, req); return err })
			})
		}
	})
}

func BenchmarkTopEntities(b *testing.B) {
	benchScales(b, func(b *testing.B, st *memtree.Store) {
		p50(b, func(i int) error {
			_, err := memory.Default(st).TopEntities(context.Background(), abi.EntitiesTopRequest{Kind: []string{"", "person", "email"}[i%3], K: 20})
			return err
		})
	})
}

func BenchmarkListSources(b *testing.B) {
	benchScales(b, func(b *testing.B, st *memtree.Store) {
		p50(b, func(int) error {
			_, err := memory.Default(st).ListSources(context.Background(), abi.SourcesListRequest{UserEmailHint: "me@example.com"})
			return err
		})
	})
}

func BenchmarkGetChunk(b *testing.B) {
	benchScales(b, func(b *testing.B, st *memtree.Store) {
		res, err := memory.Default(st).ListChunks(context.Background(), abi.ChunksListRequest{K: 50})
		if err != nil {
			b.Fatal(err)
		}
		p50(b, func(i int) error {
			_, err := memory.Default(st).GetChunk(context.Background(), abi.ChunkGetRequest{ID: res.Chunks[i%len(res.Chunks)].ID})
			return err
		})
	})
}

// BenchmarkIngest ingests the cached -scale 10000 and -scale 100000 corpora into a
// fresh store per iteration and reports chunks/s.
func BenchmarkIngest(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("scale=%d", n), func(b *testing.B) {
			_, _ = benchStore(b, n)
			corpus := filepath.Join(os.TempDir(), fmt.Sprintf("memtree-bench-v%d-%d", benchStoreVersion, n), "corpus")
			chunks := 0
			var secs float64
			for i := 0; i < b.N; i++ {
				st, err := memtree.Open(filepath.Join(b.TempDir(), fmt.Sprintf("i%d.db", i)))
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				sum, err := ingest.Run(context.Background(), st, []string{corpus}, ingest.Options{})
				secs += time.Since(t0).Seconds()
				st.Close()
				if err != nil {
					b.Fatal(err)
				}
				if sum.Failures > 0 {
					b.Fatalf("ingest failures: %s", sum.Line())
				}
				chunks += sum.ChunksNew
			}
			b.ReportMetric(float64(chunks)/secs, "chunks/s")
		})
	}
}

// BenchmarkLoCoMo reports search and recall latency (p50/p95 per call, k = 50) over
// the questions of one LoCoMo conversation (../shared/locomo/26.json), on a store
// built from it as TestLoCoMo builds it.
func BenchmarkLoCoMo(b *testing.B) {
	c, err := loadLocomo(filepath.Join(locomoDir(), "26.json"))
	if err != nil {
		b.Skipf("LoCoMo conversation not present at %s: %v", locomoDir(), err)
	}
	st := buildLocomoStore(b, c, b.TempDir())
	b.Cleanup(func() { st.Close() })
	var qs []string
	for _, q := range c.qa {
		if q.Category >= 1 && q.Category <= 4 {
			qs = append(qs, q.Question)
		}
	}
	ctx := context.Background()
	b.Run("search", func(b *testing.B) {
		p50p95(b, func(i int) error {
			_, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: qs[i%len(qs)], K: 50})
			return err
		})
	})
	b.Run("recall", func(b *testing.B) {
		p50p95(b, func(i int) error {
			_, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: qs[i%len(qs)], K: 50})
			return err
		})
	})
}

// p50p95 runs fn b.N times and reports the median and 95th percentile latency in ms.
func p50p95(b *testing.B, fn func(i int) error) {
	b.Helper()
	latencies(b, fn, 95)
}

// latencies runs fn b.N times and reports the median and the pct-th percentile
// latency in ms.
func latencies(b *testing.B, fn func(i int) error, pct int) {
	b.Helper()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := fn(i); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*pct/100].Microseconds())/1000, fmt.Sprintf("p%d-ms", pct))
}

// BenchmarkScopedReads times the reads a principal's token makes (index.Scope in
// the call's context: every query carries the scope) against the same reads
// unscoped, on the scale-100000 store: a kind, one chat channel's months by
// glob, and everything but the chat. Run:
//
//	go test ./internal/memtree -run '^$' -bench ScopedReads -benchtime 30x
func BenchmarkScopedReads(b *testing.B) {
	st, _ := benchStore(b, 100000)
	scopes := []struct {
		name        string
		allow, deny []string
	}{
		{"none", nil, nil},
		{"kind-email", []string{"kind:email"}, nil},
		{"one-channel", []string{"slack:#eng*"}, nil},
		{"all-but-chat", []string{"*"}, []string{"kind:chat"}},
	}
	for _, s := range scopes {
		ctx := context.Background()
		if s.allow != nil {
			sc, err := index.ParseScope(s.allow, s.deny)
			if err != nil {
				b.Fatal(err)
			}
			ctx = index.WithScope(ctx, sc)
		}
		ops := []struct {
			name string
			fn   func(i int) error
		}{
			{"search", func(i int) error {
				_, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: benchQueries[i%len(benchQueries)], K: 10})
				return err
			}},
			{"browse", func(int) error {
				_, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{K: 20})
				return err
			}},
			{"entities", func(int) error {
				_, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{K: 20})
				return err
			}},
			{"sources", func(int) error { _, err := memory.Default(st).ListSources(ctx, abi.SourcesListRequest{}); return err }},
		}
		for _, op := range ops {
			b.Run(s.name+"/"+op.name, func(b *testing.B) { p50(b, op.fn) })
		}
	}
}
