package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// BenchmarkSearchBackends measures memory.search through the read API (the
// engine over the backend, no MCP) on both backends holding the same corpus,
// one query of a fixed list per op, after checking that both answer every query
// with the same chunks in the same order. The corpus is a folder ingest reads
// (e.g. gencorpus -scale 200000's output), named by OPENHUMAN_BENCH_CORPUS;
// without it the benchmark is skipped. It ingests the corpus into a new
// cluster and a SQLite file first (minutes at that scale). Run once:
//
//	OPENHUMAN_BENCH_CORPUS=/tmp/corpus go test ./internal/pgstore -run '^$' -bench SearchBackends -benchtime 200x -timeout 30m
func BenchmarkSearchBackends(b *testing.B) {
	dir := os.Getenv("OPENHUMAN_BENCH_CORPUS")
	if dir == "" && (os.Getenv("OPENHUMAN_BENCH_PG_URL") == "" || os.Getenv("OPENHUMAN_BENCH_SQLITE") == "") {
		b.Skip("not run: set OPENHUMAN_BENCH_CORPUS to a folder to ingest (e.g. gencorpus -scale 200000's output), or OPENHUMAN_BENCH_PG_URL and OPENHUMAN_BENCH_SQLITE to stores holding one")
	}
	ctx := context.Background()
	// OPENHUMAN_BENCH_PG_URL and OPENHUMAN_BENCH_SQLITE name stores already
	// holding the corpus (nothing is ingested into them): measuring again after a
	// change then takes seconds.
	pgURL, litePath := os.Getenv("OPENHUMAN_BENCH_PG_URL"), os.Getenv("OPENHUMAN_BENCH_SQLITE")
	fresh := pgURL == ""
	if fresh {
		pgURL = pgtest.Start(b).Database(b, "bench")
	}
	pg, err := pgstore.Open(ctx, pgURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	if litePath == "" {
		litePath = filepath.Join(b.TempDir(), "chunks.db")
	}
	lite, err := memtree.Open(litePath)
	if err != nil {
		b.Fatal(err)
	}
	defer lite.Close()
	for _, w := range []struct {
		name string
		w    ingest.Writer
		skip bool
	}{{"PostgreSQL", pg, !fresh}, {"SQLite", lite, os.Getenv("OPENHUMAN_BENCH_SQLITE") != ""}} {
		if w.skip {
			continue
		}
		start := time.Now()
		sum, err := ingest.Run(ctx, w.w, []string{dir}, ingest.Options{})
		if err != nil {
			b.Fatalf("ingest into %s: %v", w.name, err)
		}
		b.Logf("%s: %s in %.1f s", w.name, sum.Line(), time.Since(start).Seconds())
	}
	// The queries of BenchmarkMCPSessions (cmd/openhuman-core): common and rare
	// words, names, a phrase.
	queries := []string{"indemnity cap", "Halvorsen contract", "conference hotel", "budget variance quarter", "invite Wednesday",
		"WebAssembly talk", "reservation", "brake repair quote", "Lisbon trip", "outage postmortem", "book club", "Phoenix launch date"}
	apis := []struct {
		name string
		api  *memory.API
	}{{"PostgreSQL", memory.Default(pg)}, {"SQLite", memory.Default(lite)}}
	answers := func(api *memory.API, q string) string {
		res, err := api.Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			b.Fatalf("search %q: %v", q, err)
		}
		s := ""
		for _, h := range res.Chunks {
			s += fmt.Sprintf("%s %.9g\n", h.ID, h.Score)
		}
		return s
	}
	for _, q := range queries {
		if p, l := answers(apis[0].api, q), answers(apis[1].api, q); p != l {
			b.Fatalf("search %q answers differ:\nPostgreSQL:\n%sSQLite:\n%s", q, p, l)
		}
	}
	for _, a := range apis {
		b.Run(a.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := a.api.Search(ctx, abi.SearchRequest{Query: queries[i%len(queries)], K: 10}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
