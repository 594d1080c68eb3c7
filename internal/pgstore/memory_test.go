package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestReadAPIMatchesSQLite runs the read API the tools call (internal/memory:
// the engine over the backend, with hit messages) over both backends holding
// the same sources: search and recall answer the same JSON, snippets included
// (the engine cuts them from the text either backend returns), but for scores'
// last bits (summation order: compared to 12 significant digits); a chunk reads
// back alike, and the top entities list alike for every kind and page.
func TestReadAPIMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	pg, lite := bothWith(t, inputs())
	pm, lm := memory.Default(pg), memory.Default(lite)
	asJSON := func(v any) string {
		var hits []abi.ChunkHit
		switch r := v.(type) {
		case *abi.SearchResult:
			hits = r.Chunks
		case *abi.RecallResult:
			hits = r.Chunks
		}
		for i := range hits {
			hits[i].Score, _ = strconv.ParseFloat(strconv.FormatFloat(hits[i].Score, 'g', 12, 64), 64)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, q := range []string{"brake pads", "vendor invoices budget", "when is the phoenix launch", "espresso", "turtles lettuce", "what did Dev Patel say", "café in March"} {
		ps, err := pm.Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatalf("search %q on PostgreSQL: %v", q, err)
		}
		ls, err := lm.Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatalf("search %q on SQLite: %v", q, err)
		}
		if len(ls.Chunks) == 0 {
			t.Errorf("search %q finds nothing on SQLite; the test is broken", q)
		}
		if a, b := asJSON(ps), asJSON(ls); a != b {
			t.Errorf("search %q:\nPostgreSQL %s\nSQLite     %s", q, a, b)
		}
		pr, err := pm.Recall(ctx, abi.RecallRequest{Query: q, K: 10})
		if err != nil {
			t.Fatalf("recall %q on PostgreSQL: %v", q, err)
		}
		lr, err := lm.Recall(ctx, abi.RecallRequest{Query: q, K: 10})
		if err != nil {
			t.Fatalf("recall %q on SQLite: %v", q, err)
		}
		if a, b := asJSON(pr), asJSON(lr); a != b {
			t.Errorf("recall %q:\nPostgreSQL %s\nSQLite     %s", q, a, b)
		}
		for _, h := range ls.Chunks {
			pc, err1 := pm.GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
			lc, err2 := lm.GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
			if err1 != nil || err2 != nil {
				t.Fatalf("get chunk %s: PostgreSQL %v, SQLite %v", h.ID, err1, err2)
			}
			if a, b := asJSON(pc), asJSON(lc); a != b {
				t.Errorf("chunk %s:\nPostgreSQL %s\nSQLite     %s", h.ID, a, b)
			}
		}
	}
	for _, kind := range []string{"", "person", "people", "email", "no such kind"} {
		for _, page := range []struct{ k, offset int }{{50, 0}, {2, 1}, {3, 4}} {
			req := abi.EntitiesTopRequest{Kind: kind, K: page.k, Offset: page.offset}
			pe, err1 := pm.TopEntities(ctx, req)
			le, err2 := lm.TopEntities(ctx, req)
			if err1 != nil || err2 != nil {
				t.Fatalf("top entities %+v: PostgreSQL %v, SQLite %v", req, err1, err2)
			}
			if kind == "" && page.offset == 0 && len(le.Entities) < 5 {
				t.Fatalf("top entities: %d on SQLite; the test is broken", len(le.Entities))
			}
			if a, b := asJSON(pe), asJSON(le); a != b {
				t.Errorf("top entities %+v:\nPostgreSQL %s\nSQLite     %s", req, a, b)
			}
		}
	}
	if _, err := pm.GetChunk(ctx, abi.ChunkGetRequest{ID: "0123456789abcdef0123456789abcdef"}); !errors.Is(err, abi.ErrNotFound) {
		t.Errorf("get of an unknown chunk id: %v, want abi.ErrNotFound", err)
	}
	if _, err := pm.GetChunk(ctx, abi.ChunkGetRequest{ID: "nope"}); !errors.Is(err, abi.ErrInvalid) {
		t.Errorf("get of a malformed chunk id: %v, want abi.ErrInvalid", err)
	}
}
