package memtree_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func TestOpenCreatesSchemaAndReopens(t *testing.T) {
	st, path := openFixture(t)
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("store dir mode = %v, want 0700", fi.Mode().Perm())
	}
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sources["email"] != 1 || stats.Sources["chat"] != 1 || stats.Sources["document"] != 1 {
		t.Errorf("sources per kind = %v", stats.Sources)
	}
	if stats.Chunks["email"] != 1 || stats.Chunks["chat"] != 2 || stats.Chunks["document"] != 1 {
		t.Errorf("chunks = %v, want email 1, chat 2 (split at a 3-day pause), document 1", stats.Chunks)
	}
	if stats.Summaries != 3 {
		t.Errorf("summaries = %d, want 3", stats.Summaries)
	}
	st.Close()
	st2, err := memtree.Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer st2.Close()
	stats2, _ := st2.Stats(context.Background())
	if stats2.TotalChunks() != 4 {
		t.Errorf("after reopen chunks = %d", stats2.TotalChunks())
	}
}

func TestIngestIdempotentAndReplace(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	src := fixtureSources()[1]
	res, err := st.Ingest(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if res.NewChunks != 0 || res.UnchangedChunks != 2 || res.RemovedChunks != 0 {
		t.Errorf("re-ingest stats = %+v, want 0 new, 2 unchanged", res)
	}
	// Change a message: the chunk is replaced, the entity of the removed author goes.
	src.Messages = src.Messages[:1]
	src.Messages[0].Text = "Launch checklist is ready"
	res, err = st.Ingest(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if res.NewChunks != 1 || res.RemovedChunks != 2 {
		t.Errorf("replace stats = %+v, want 1 new, 2 removed", res)
	}
	ents, err := st.TopEntities(ctx, abiTop("person", 50))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents.Entities {
		if e.EntityID == "person:erik lund" {
			t.Errorf("person:erik lund still present after its only chunk was replaced: %+v", e)
		}
		if e.EntityID == "person:dana ruiz" && e.Count != 1 {
			t.Errorf("person:dana ruiz count = %d, want 1", e.Count)
		}
	}
	for _, e := range ents.Entities {
		if strings.HasPrefix(e.EntityID, "handle:erik") {
			t.Errorf("handle from removed text still listed: %+v", e)
		}
	}
}

func TestIngestRejectsBadInput(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	cases := []memtree.SourceInput{
		{Kind: "fax", SourceID: "x", Messages: []memtree.MessageInput{{Text: "hi"}}},
		{Kind: memtree.KindChat, SourceID: " ", Messages: []memtree.MessageInput{{Text: "hi"}}},
		{Kind: memtree.KindChat, SourceID: "slack:#empty", Messages: []memtree.MessageInput{{Text: "  "}}},
		{Kind: memtree.KindChat, SourceID: "slack:#bad", Messages: []memtree.MessageInput{{Text: "ok\xff"}}},
	}
	for i, c := range cases {
		if _, err := st.Ingest(ctx, c); !errors.Is(err, memtree.ErrInvalid) {
			t.Errorf("case %d: err = %v, want ErrInvalid", i, err)
		}
	}
	stats, _ := st.Stats(ctx)
	if stats.TotalChunks() != 4 {
		t.Errorf("bad input changed the store: %d chunks", stats.TotalChunks())
	}
}

// Optimize compacts the full-text indexes of a writable store and keeps every chunk
// findable; a read-only store refuses it.
func TestOptimizeKeepsSearchAndRefusesReadOnly(t *testing.T) {
	st, path := openFixture(t)
	ctx := context.Background()
	if err := st.Optimize(ctx); err != nil {
		t.Fatalf("Optimize: %v", err)
	}
	res, err := st.Search(ctx, abi.SearchRequest{Query: "brake pads", K: 5})
	if err != nil || len(res.Chunks) == 0 {
		t.Fatalf("Search after Optimize: %+v %v", res, err)
	}
	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Optimize(ctx); !errors.Is(err, memtree.ErrReadOnly) {
		t.Errorf("Optimize on a read-only store: %v, want ErrReadOnly", err)
	}
}
