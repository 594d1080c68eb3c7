package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// TestForgetMatchesSQLite forgets the same sources on both backends: the same
// sources, chunk and entity counts are reported, a dry run changes nothing,
// and afterwards every word's document frequency, the vocabulary and the chunk
// count equal SQLite's, with every maintained count in step.
func TestForgetMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	pg, lite := bothWith(t, inputs())
	filters := []memtree.ForgetFilter{
		{SourceIDs: []string{"doc:notes/car.md", "doc:no/such.md"}},
		{Before: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, f := range filters {
		for _, dry := range []bool{true, false} {
			pr, err := pg.Forget(ctx, f, dry)
			if err != nil {
				t.Fatalf("forget %+v on PostgreSQL: %v", f, err)
			}
			lr, err := lite.Forget(ctx, f, dry)
			if err != nil {
				t.Fatalf("forget %+v on SQLite: %v", f, err)
			}
			if len(pr.Sources) == 0 || len(pr.Sources) != len(lr.Sources) || pr.Chunks != lr.Chunks ||
				pr.EntitiesDropped != lr.EntitiesDropped || pr.EntitiesUpdated != lr.EntitiesUpdated || len(pr.NotFound) != len(lr.NotFound) {
				t.Errorf("forget %+v (dry %v): PostgreSQL %+v, SQLite %+v", f, dry, pr, lr)
			}
			for i := range min(len(pr.Sources), len(lr.Sources)) {
				if pr.Sources[i] != lr.Sources[i] {
					t.Errorf("forgotten source %d: PostgreSQL %+v, SQLite %+v", i, pr.Sources[i], lr.Sources[i])
				}
			}
		}
	}
	if err := pg.CheckCounts(ctx); err != nil {
		t.Error(err)
	}
	pb, err := pg.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := lite.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pb.Stats().Chunks != lb.Stats().Chunks || pb.Stats().Chunks == 0 {
		t.Errorf("chunks after forget: PostgreSQL %d, SQLite %d", pb.Stats().Chunks, lb.Stats().Chunks)
	}
	for _, w := range []string{"brake", "budget", "garage", "turtles", "launch", "invoices", "car"} {
		p, _ := pb.DocFreq(ctx, w)
		l, _ := lb.DocFreq(ctx, w)
		if p != l {
			t.Errorf("DocFreq(%q) after forget: PostgreSQL %d, SQLite %d", w, p, l)
		}
	}
	pv, _ := pb.Vocabulary(ctx, 1<<20)
	lv, _ := lb.Vocabulary(ctx, 1<<20)
	if pv != lv {
		t.Errorf("vocabulary after forget: PostgreSQL %d, SQLite %d", pv, lv)
	}
}
