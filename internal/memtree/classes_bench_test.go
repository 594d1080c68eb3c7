package memtree_test

import (
	"context"
	"fmt"
	"math"
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

// classQueries are search and recall queries by class, worded like the generated
// corpus (../shared/data/gencorpus) so they match on its stores at any -scale: a
// single common word, a single rare word, several words, a person, a date, and a
// question.
var classQueries = []struct {
	class   string
	queries []string
}{
	{"common", []string{"meeting", "thanks", "update", "review", "today", "week"}},
	{"rare", []string{"halvorsen", "postmortem", "bloodwork", "scorecard", "custard", "bistros"}},
	{"multi", []string{"phoenix beta cost tiers", "Frontend engineer interview scorecard", "Monthly forecast gap",
		"Car inspection and tyres", "Tax documents for the accountant", "Hiring pipeline review"}},
	{"person", []string{"what Thérèse Jansen said about the phoenix beta cost tiers", "messages from Freya Ivanova", "Ivy Ortiz",
		"lsuzuki@halvorsen.example", "what Rosa Costa said about the physio session", "ccohen@hale-moreno.example"}},
	{"date", []string{"Phoenix monthly review during March", "Offer compensation negotiation in April 2026",
		"Feb 2026: Lisbon itinerary and sights", "Bloodwork results April 2026", "On-call handoff during April", "Tax documents for the accountant in February 2026"}},
	{"question", []string{"When is the phoenix launch?", "What did the accountant need for the tax documents?",
		"Who is handling the brake repair quote?", "Where are we staying in Lisbon?", "How did the interview go?", "Why was the database outage so long?"}},
}

// envStore opens the store MEMTREE_BENCH_STORE names (a chunks.db, or a workspace
// holding memory_tree/chunks.db) read-only, or skips.
func envStore(tb testing.TB) *memtree.Store {
	tb.Helper()
	p := os.Getenv("MEMTREE_BENCH_STORE")
	if p == "" {
		tb.Skip("MEMTREE_BENCH_STORE not set: give a chunks.db or a workspace holding memory_tree/chunks.db to measure")
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		p = filepath.Join(p, "memory_tree", "chunks.db")
	}
	st, err := memtree.OpenReadOnly(p)
	if err != nil {
		tb.Fatalf("open %s: %v", p, err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkStoreClasses reports search and recall p50/p95 (k = 10) per query class
// on the store MEMTREE_BENCH_STORE names (see envStore).
func BenchmarkStoreClasses(b *testing.B) {
	st := envStore(b)
	ctx := context.Background()
	for _, op := range []string{"search", "recall"} {
		for _, c := range classQueries {
			qs := c.queries
			for _, q := range qs { // warm the page cache and the per-generation caches
				if _, err := call(ctx, st, op, q); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(op+"/"+c.class, func(b *testing.B) {
				p50p95(b, func(i int) error { _, err := call(ctx, st, op, qs[i%len(qs)]); return err })
			})
		}
	}
}

func call(ctx context.Context, st *memtree.Store, op, q string) ([]string, error) {
	var ids []string
	if op == "search" {
		res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			return nil, err
		}
		for _, h := range res.Chunks {
			ids = append(ids, h.ID)
		}
		return ids, nil
	}
	res, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: q, K: 10})
	if err != nil {
		return nil, err
	}
	for _, h := range res.Chunks {
		ids = append(ids, h.ID)
	}
	return ids, nil
}

// TestStoreClassesHits writes the hit ids of every class query (search and recall,
// k = 10) on the MEMTREE_BENCH_STORE store to MEMTREE_HITS_OUT, one line per query,
// so a change meant as a pure speed-up can be checked to return the same hits, and
// logs each query's best time of three.
func TestStoreClassesHits(t *testing.T) {
	out := os.Getenv("MEMTREE_HITS_OUT")
	if out == "" {
		t.Skip("MEMTREE_HITS_OUT not set")
	}
	st := envStore(t)
	var lines []string
	for _, op := range []string{"search", "recall"} {
		for _, c := range classQueries {
			for _, q := range c.queries {
				ids, err := call(context.Background(), st, op, q)
				if err != nil {
					t.Fatalf("%s %q: %v", op, q, err)
				}
				best := time.Duration(math.MaxInt64)
				for range 3 {
					t0 := time.Now()
					if _, err := call(context.Background(), st, op, q); err != nil {
						t.Fatalf("%s %q: %v", op, q, err)
					}
					best = min(best, time.Since(t0))
				}
				t.Logf("%s\t%s\t%.1f ms\t%s", op, c.class, float64(best.Microseconds())/1000, q)
				lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s", op, c.class, q, strings.Join(ids, " ")))
			}
		}
	}
	sort.Strings(lines)
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
