package pgstore_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/retrieval/index/indextest"
)

// inputs are the conformance fixture as the writers take it.
// bothWith opens a PostgreSQL store on a fresh database and a SQLite store in
// a temporary folder, both holding ins, written in order.
func bothWith(t *testing.T, ins []memtree.SourceInput) (*pgstore.Store, *memtree.Store) {
	t.Helper()
	ctx := context.Background()
	pg := open(t)
	lite, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	for _, in := range ins {
		if _, err := pg.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
		if _, err := lite.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	return pg, lite
}

func inputs() []memtree.SourceInput {
	var out []memtree.SourceInput
	for _, s := range indextest.Fixture() {
		in := memtree.SourceInput{Kind: s.Kind, SourceID: s.ID, Title: s.Title, Provider: "parity"}
		for _, m := range s.Messages {
			in.Messages = append(in.Messages, memtree.MessageInput{Ref: m.Ref, Author: m.Author, TimestampMS: m.Time.UnixMilli(), Text: m.Text})
		}
		out = append(out, in)
	}
	return out
}

// TestScoresMatchSQLite writes the same sources to both backends and checks
// that every query matches the same chunks with the same BM25 scores: FTS5's
// bm25() on SQLite, this backend's computation from its own counts on
// PostgreSQL.
func TestScoresMatchSQLite(t *testing.T) {
	ctx := context.Background()
	pg, lite := bothWith(t, inputs())
	pb, err := pg.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := lite.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pb.Stats().Chunks != lb.Stats().Chunks || pb.Stats().Latest != lb.Stats().Latest {
		t.Fatalf("stats: PostgreSQL %+v, SQLite %+v", pb.Stats(), lb.Stats())
	}
	for _, n := range []int{5, 1 << 20} {
		pv, err1 := pb.Vocabulary(ctx, n)
		lv, err2 := lb.Vocabulary(ctx, n)
		if err1 != nil || err2 != nil || pv != lv {
			t.Errorf("Vocabulary(%d): PostgreSQL %d (%v), SQLite %d (%v)", n, pv, err1, lv, err2)
		}
	}
	queries := map[string]index.Query{
		"one word":      index.Words(index.All, "budget"),
		"all":           index.Words(index.All, "brake", "pads"),
		"any":           index.Words(index.Any, "budget", "travel", "turtles", "launch"),
		"stemmed":       index.Words(index.Any, "replacing", "invoice", "reopening"),
		"folded":        index.Words(index.Any, "cafe", "espresso"),
		"phrase":        {Op: index.All, Phrases: []index.Phrase{{"brake", "pads"}}},
		"phrase or one": {Op: index.Any, Phrases: []index.Phrase{{"vendor", "invoices"}, {"garden"}}},
		"at least 2":    {Op: index.AtLeast, M: 2, Phrases: []index.Phrase{{"vendor"}, {"invoices"}, {"launch"}, {"budget"}}},
		"title word":    index.Words(index.Any, "phoenix", "repair"),
		"stopwords":     index.Words(index.Any, "the", "of", "and"),
	}
	for name, q := range queries {
		for _, f := range []index.Filter{{}, {Names: []string{"main street"}}} {
			ph, err := pb.Match(ctx, index.Match{Query: q, Filter: f, Limit: 100})
			if err != nil {
				t.Fatalf("%s: PostgreSQL: %v", name, err)
			}
			lh, err := lb.Match(ctx, index.Match{Query: q, Filter: f, Limit: 100})
			if err != nil {
				t.Fatalf("%s: SQLite: %v", name, err)
			}
			if len(ph) != len(lh) {
				t.Errorf("%s %+v: PostgreSQL %d hits, SQLite %d", name, f, len(ph), len(lh))
				continue
			}
			want := map[string]float64{}
			for _, h := range lh {
				want[h.ID] = h.Score
			}
			for i, h := range ph {
				ls, ok := want[h.ID]
				if !ok {
					t.Errorf("%s: PostgreSQL hit %s is not among SQLite's", name, h.ID)
					continue
				}
				if math.Abs(h.Score-ls) > 1e-9*math.Max(1, math.Abs(ls)) {
					t.Errorf("%s: chunk %s scores %.12g on PostgreSQL, %.12g on SQLite", name, h.ID, h.Score, ls)
				}
				if lh[i].Score != ls && math.Abs(lh[i].Score-h.Score) > 1e-9*math.Max(1, math.Abs(ls)) {
					t.Errorf("%s: hit %d differs in score: PostgreSQL %s %.12g, SQLite %s %.12g", name, i, h.ID, h.Score, lh[i].ID, lh[i].Score)
				}
			}
		}
	}
}
