package memtree_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// qualityPGTolerance is how far apart the two backends' search R@10 may be per
// query kind (issue 35: "within 0.5 points", on a 0–1 scale 0.005).
const qualityPGTolerance = 0.005

// TestQualityPostgres runs the corpus quality queries (TestQualityOnCorpus) over
// the PostgreSQL backend and over SQLite, the same generated corpus ingested
// into each through the same reader, and checks that search R@10 per query kind
// is within qualityPGTolerance of SQLite's, as is search R@5/10/25/50 over all
// queries (a search of k = 50, LoCoMo's cut-offs); and recall R@10 per kind, both
// backends expanding with WordNet and the machine's paraphrase file.
//
// The corpus is small (633 sources, 3432 chunks: 2.4 s of ingest into
// PostgreSQL, 14 s for the whole test on a 2-core machine), so it runs wherever
// PostgreSQL is installed (skipped saying so otherwise, failed under CI=true),
// except with -short:
//
//	go test ./internal/memtree -run TestQualityPostgres -v
func TestQualityPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the corpus quality comparison of the SQLite and PostgreSQL backends ingests the corpus twice")
	}
	dir, path := corpusFixture(t)
	qs := loadQueries(t, filepath.Join(dir, "eval", "queries.jsonl"))
	if len(qs) < 100 {
		t.Fatalf("only %d queries", len(qs))
	}
	ctx := context.Background()

	cluster := pgtest.Start(t)
	pg, err := pgstore.Open(ctx, cluster.Database(t, "quality"))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	start := time.Now()
	sum, err := ingest.Run(ctx, pg, []string{dir}, ingest.Options{})
	if err != nil {
		t.Fatalf("ingest the corpus into PostgreSQL: %v", err)
	}
	t.Logf("PostgreSQL ingest in %.1f s: %s", time.Since(start).Seconds(), sum.Line())

	lite, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()

	// Both stores must hold the same corpus before their answers are compared.
	ps, err := pg.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := memtree.Status(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ps.Sources, ps.Chunks) != fmt.Sprint(ls.Sources, ls.Chunks) {
		t.Errorf("stores differ: PostgreSQL sources %v chunks %v, SQLite sources %v chunks %v", ps.Sources, ps.Chunks, ls.Sources, ls.Chunks)
	}

	// Recall expands with the same paraphrase table on both: the machine-wide
	// file the SQLite store reads (the PostgreSQL backend reads that file, never
	// a copy in its database). A SQLite store that kept its own copy (no cache
	// directory) leaves recall unchecked.
	paraFile, err := lite.ParaphraseFile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pg.SetParaphraseFile(paraFile)
	checkRecall := paraFile != "" || !paraphrases

	pgSearch, pgRecall := corpusScores(t, pg, qs)
	liteSearch, liteRecall := corpusScores(t, lite, qs)
	t.Logf("PostgreSQL:%s", corpusTable(pgSearch, pgRecall))
	t.Logf("SQLite (recall with paraphrases: %t):%s", paraphrases, corpusTable(liteSearch, liteRecall))
	for _, kind := range sortedKinds(liteSearch) {
		p, l := pgSearch[kind], liteSearch[kind]
		if p == nil || p.n != l.n {
			t.Errorf("%s: queries scored differ between the backends", kind)
			continue
		}
		pr, lr := p.rec/float64(p.n), l.rec/float64(l.n)
		if math.Abs(pr-lr) > qualityPGTolerance {
			t.Errorf("search R@10 on %s queries: PostgreSQL %.3f, SQLite %.3f, more than %.3f apart", kind, pr, lr, qualityPGTolerance)
		}
		if rp, rl := pgRecall[kind], liteRecall[kind]; checkRecall && rp != nil && rl != nil {
			pr, lr := rp.rec/float64(rp.n), rl.rec/float64(rl.n)
			if math.Abs(pr-lr) > qualityPGTolerance {
				t.Errorf("recall R@10 on %s queries: PostgreSQL %.3f, SQLite %.3f, more than %.3f apart", kind, pr, lr, qualityPGTolerance)
			}
		}
	}
	if !checkRecall {
		t.Logf("recall not compared: the SQLite store keeps its own paraphrase table (no cache directory), which PostgreSQL does not read")
	}

	// LoCoMo's cut-offs too (R@5/25/50, a search of k = 50 scored at each), all
	// query kinds together.
	pgAt, liteAt := corpusRecallAt(t, pg, qs), corpusRecallAt(t, lite, qs)
	var table strings.Builder
	for i, k := range corpusKs {
		fmt.Fprintf(&table, "search R@%d (k = 50): PostgreSQL %.3f, SQLite %.3f\n", k, pgAt[i], liteAt[i])
		if math.Abs(pgAt[i]-liteAt[i]) > qualityPGTolerance {
			t.Errorf("search R@%d over all queries: PostgreSQL %.3f, SQLite %.3f, more than %.3f apart", k, pgAt[i], liteAt[i], qualityPGTolerance)
		}
	}
	t.Logf("all %d queries:\n%s", len(qs), table.String())
}

// corpusKs are the cut-offs corpusRecallAt scores, LoCoMo's.
var corpusKs = []int{5, 10, 25, 50}

// corpusRecallAt runs every query through Search with k = 50 and returns the
// mean recall at each of corpusKs.
func corpusRecallAt(t *testing.T, st memory.Store, qs []evalQuery) []float64 {
	t.Helper()
	ctx := context.Background()
	api := evalAPI(st)
	sums := make([]float64, len(corpusKs))
	for _, q := range qs {
		sr, err := api.Search(ctx, abi.SearchRequest{Query: q.Query, K: 50})
		if err != nil {
			t.Fatalf("Search %q: %v", q.Query, err)
		}
		refs := expandRefs(sr.Chunks)
		for i, k := range corpusKs {
			r, _ := score(q.Relevant, refs, k)
			sums[i] += r
		}
	}
	for i := range sums {
		sums[i] /= float64(len(qs))
	}
	return sums
}

// corpusScores runs every query through Search and Recall (k = 10) on st and
// scores them per query kind as TestQualityOnCorpus does.
func corpusScores(t *testing.T, st memory.Store, qs []evalQuery) (search, recall map[string]*kindScore) {
	t.Helper()
	ctx := context.Background()
	search, recall = map[string]*kindScore{}, map[string]*kindScore{}
	add := func(m map[string]*kindScore, kind string, r, rr float64) {
		if m[kind] == nil {
			m[kind] = &kindScore{}
		}
		m[kind].n++
		m[kind].rec += r
		m[kind].mrr += rr
	}
	api := evalAPI(st)
	for _, q := range qs {
		sr, err := api.Search(ctx, abi.SearchRequest{Query: q.Query, K: 10})
		if err != nil {
			t.Fatalf("Search %q: %v", q.Query, err)
		}
		r, rr := score(q.Relevant, expandRefs(sr.Chunks), 10)
		add(search, q.Kind, r, rr)
		rc, err := api.Recall(ctx, abi.RecallRequest{Query: q.Query, K: 10})
		if err != nil {
			t.Fatalf("Recall %q: %v", q.Query, err)
		}
		r, rr = score(q.Relevant, expandRefs(rc.Chunks), 10)
		add(recall, q.Kind, r, rr)
	}
	return search, recall
}

func sortedKinds(m map[string]*kindScore) []string {
	var kinds []string
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// corpusTable renders per-kind R@10 and MRR as TestQualityOnCorpus logs them.
func corpusTable(search, recall map[string]*kindScore) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-11s %4s | %-17s | %-17s\n", "kind", "n", "Search R@10  MRR", "Recall R@10  MRR")
	for _, k := range sortedKinds(search) {
		s, r := search[k], recall[k]
		fmt.Fprintf(&b, "%-11s %4d | %6.3f   %6.3f | %6.3f   %6.3f\n", k, s.n, s.rec/float64(s.n), s.mrr/float64(s.n), r.rec/float64(r.n), r.mrr/float64(r.n))
	}
	return b.String()
}
