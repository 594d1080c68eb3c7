package memtree

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestWarmLoadsTheCacheAndStaysFresh checks that Warm loads the per-generation
// cache of a store, does nothing for a store not created yet, and that a search
// after an ingest still sees the new chunks (the warmed cache is for the old
// generation and is reloaded).
func TestWarmLoadsTheCacheAndStaysFresh(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chunks.db")
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Warm(ctx); err != nil {
		t.Fatalf("Warm of a store not created yet: %v", err)
	}

	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	src := func(id, text string) SourceInput {
		return SourceInput{Kind: KindDocument, SourceID: "doc:" + id, Title: id, Provider: "markdown",
			Messages: []MessageInput{{Ref: id, TimestampMS: 1767600000000, Text: text}}}
	}
	if _, err := w.Ingest(ctx, src("a.md", "The quarterly budget review is on Thursday.")); err != nil {
		t.Fatal(err)
	}
	if err := r.Warm(ctx); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	r.dfc.mu.Lock()
	loaded, n := r.dfc.loaded, r.dfc.n
	r.dfc.mu.Unlock()
	if !loaded || n != 1 {
		t.Fatalf("after Warm: loaded %v, %d chunks; want loaded, 1", loaded, n)
	}

	if _, err := w.Ingest(ctx, src("b.md", "The garage replaced the brake pads; the budget allows it.")); err != nil {
		t.Fatal(err)
	}
	res, err := memory.Default(r).Search(ctx, abi.SearchRequest{Query: "budget", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 2 {
		t.Fatalf("search after an ingest found %d chunks, want 2", len(res.Chunks))
	}
	r.dfc.mu.Lock()
	n = r.dfc.n
	r.dfc.mu.Unlock()
	if n != 2 {
		t.Errorf("cache holds %d chunks after the ingest, want 2", n)
	}
}
