package memtree_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
)

// TestLoCoMoPostgres runs the LoCoMo evaluation (TestLoCoMo) over the
// PostgreSQL backend, one database per conversation on a test cluster, the
// conversations ingested through the same reader, and compares its figures
// with SQLite's: search within 0.5 points at R@5/10/25/50 overall (issue 35's
// acceptance). Recall is logged, not checked: this backend keeps no paraphrases
// and has no expander yet (index.Paraphrases).
//
// It runs both evaluations (142 s on this 2-core machine, most of it on
// PostgreSQL), so it runs only with MEMTREE_LOCOMO_PG=1:
//
//	MEMTREE_LOCOMO_PG=1 go test ./internal/memtree -run TestLoCoMoPostgres -v
func TestLoCoMoPostgres(t *testing.T) {
	if os.Getenv("MEMTREE_LOCOMO_PG") != "1" {
		t.Skip("the LoCoMo comparison of the SQLite and PostgreSQL backends runs with MEMTREE_LOCOMO_PG=1 (minutes)")
	}
	if _, err := os.Stat(locomoDir()); err != nil {
		t.Skipf("LoCoMo conversations not present at %s: the comparison is not run", locomoDir())
	}
	cluster := pgtest.Start(t)
	ctx := context.Background()
	pg := runLocomoOn(t, func(t *testing.T, c *locomoConv) (memory.Store, func()) {
		st, err := pgstore.Open(ctx, cluster.Database(t, "locomo_"+c.id))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := ingest.Run(ctx, st, []string{writeLocomoBatch(t, c, t.TempDir())}, ingest.Options{})
		if err != nil {
			t.Fatalf("ingest conversation %s: %v", c.id, err)
		}
		if sum.Failures > 0 {
			t.Fatalf("ingest conversation %s: %s", c.id, sum.Line())
		}
		return st, st.Close
	})
	lite := runLocomo(t)
	t.Logf("PostgreSQL:\n%s", pg.markdown())
	var table string
	for _, sys := range []string{"search", "recall"} {
		for i, k := range locomoKs {
			p, l := pg.scores[sys].at(0, i), lite.scores[sys].at(0, i)
			table += fmt.Sprintf("%s R@%d: PostgreSQL %.1f, SQLite %.1f\n", sys, k, p, l)
			if sys == "search" && math.Abs(p-l) > 0.5 {
				t.Errorf("search R@%d on PostgreSQL %.1f, on SQLite %.1f: more than 0.5 points apart", k, p, l)
			}
		}
	}
	t.Logf("overall, categories 1–4:\n%s", table)
	if pg.scores["search"].n[0] != lite.scores["search"].n[0] || pg.scores["search"].n[0] < 100 {
		t.Errorf("questions scored: PostgreSQL %d, SQLite %d", pg.scores["search"].n[0], lite.scores["search"].n[0])
	}
}
