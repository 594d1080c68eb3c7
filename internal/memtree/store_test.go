package memtree_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
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
	ents, err := memory.Default(st).TopEntities(ctx, abiTop("person", 50))
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
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "brake pads", K: 5})
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

// poisonSummaries makes the store at path refuse any summary whose text contains
// POISON, so a source titled POISON fails after its chunks, entities and full-text
// rows were written (a real SQLite failure in the middle of a source).
func poisonSummaries(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON summaries WHEN NEW.text LIKE '%POISON%'
		BEGIN SELECT RAISE(ABORT, 'poisoned summary'); END`); err != nil {
		t.Fatal(err)
	}
}

func mustPrepare(t *testing.T, in memtree.SourceInput) *memtree.Prepared {
	t.Helper()
	p, err := memtree.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBatchWriterSavepoints writes several sources in one batch: a source that fails
// halfway is rolled back alone, later sources of the batch see the earlier ones, and
// the committed store equals one written a source per transaction.
func TestBatchWriterSavepoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "batch.db")
	st, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	poisonSummaries(t, path)

	fx := fixtureSources()
	poison := memtree.SourceInput{Kind: memtree.KindChat, SourceID: "slack:#poison", Title: "POISON", Provider: "slack",
		Messages: []memtree.MessageInput{
			{Ref: "p1", Author: "Bob Stone", TimestampMS: ms("2026-05-01T10:00:00Z"), Text: "Zanzibar ferry tickets, ask @erik #travel"},
			{Ref: "p2", Author: "Dana Ruiz", TimestampMS: ms("2026-05-01T10:05:00Z"), Text: "Zanzibar is lovely in June"},
		}}
	changed := fx[1]
	changed.Messages = []memtree.MessageInput{fx[1].Messages[0]}
	changed.Messages[0].Text = "Launch checklist is ready"
	// A re-ingest of fx[1] that replaces its chunks (so the batch indexes its pending
	// rows first) and then fails: the indexing is rolled back with it.
	poisonChanged := changed
	poisonChanged.Title = "POISON"

	bw, err := st.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		in                   memtree.SourceInput
		fail                 bool
		nw, unchanged, remov int
	}{
		{in: fx[0], nw: 1},
		{in: poison, fail: true},
		{in: fx[1], nw: 2},
		{in: poisonChanged, fail: true},
		{in: fx[1], unchanged: 2}, // sees the chunks written earlier in this batch
		{in: changed, nw: 1, remov: 2},
		{in: fx[2], nw: 1},
	}
	want := 0
	for i, s := range steps {
		res, err := bw.Write(mustPrepare(t, s.in))
		if s.fail {
			if err == nil || !strings.Contains(err.Error(), "poisoned summary") || !strings.Contains(err.Error(), s.in.SourceID) {
				t.Fatalf("step %d: Write = %v, want the poisoned-summary error naming %s", i, err, s.in.SourceID)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want++
		if res.NewChunks != s.nw || res.UnchangedChunks != s.unchanged || res.RemovedChunks != s.remov {
			t.Errorf("step %d (%s): stats %+v, want new %d unchanged %d removed %d", i, s.in.SourceID, res, s.nw, s.unchanged, s.remov)
		}
	}
	if bw.Pending() != want {
		t.Errorf("pending = %d, want %d (the failed source is not part of the batch)", bw.Pending(), want)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Write(mustPrepare(t, fx[0])); err == nil {
		t.Error("Write after Close succeeded")
	}

	// The same sources, one transaction each, without the poisoned one.
	ref, err := memtree.Open(filepath.Join(dir, "ref.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, s := range steps {
		if !s.fail {
			if _, err := ref.Ingest(ctx, s.in); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, _ := st.Stats(ctx)
	exp, _ := ref.Stats(ctx)
	if fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Errorf("batched store %+v, per-source store %+v", got, exp)
	}
	if got.Sources["chat"] != 1 {
		t.Errorf("chat sources = %d, want 1 (the poisoned one rolled back)", got.Sources["chat"])
	}
	for _, kind := range []string{"", "person", "handle", "topic"} {
		a, err := memory.Default(st).TopEntities(ctx, abiTop(kind, 50))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := memory.Default(ref).TopEntities(ctx, abiTop(kind, 50))
		if fmt.Sprint(a.Entities) != fmt.Sprint(b.Entities) {
			t.Errorf("entities %q: batched %v, per-source %v", kind, a.Entities, b.Entities)
		}
	}
	// The full-text indexes match their tables exactly.
	db, err := sql.Open("sqlite", "file:"+path) // integrity-check is written as an INSERT
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)`,
		`INSERT INTO summaries_fts(summaries_fts, rank) VALUES('integrity-check', 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"launch checklist", "brake pads", "tram", "rollout billing"} {
		a, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := memory.Default(ref).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if len(a.Chunks) != len(b.Chunks) || (q != "rollout billing" && len(a.Chunks) == 0) {
			t.Errorf("search %q: batched %d hits, per-source %d", q, len(a.Chunks), len(b.Chunks))
		}
	}
	hits, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "zanzibar", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits.Chunks) != 0 {
		t.Errorf("search zanzibar found %d hits of the rolled-back source", len(hits.Chunks))
	}
}

// TestBatchWriterCancelKeepsWrittenSources cancels the context mid-batch: the next
// Write is refused and Close still commits the whole sources written before.
func TestBatchWriterCancelKeepsWrittenSources(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st, err := memtree.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bw, err := st.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fx := fixtureSources()
	if _, err := bw.Write(mustPrepare(t, fx[0])); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := bw.Write(mustPrepare(t, fx[1])); !errors.Is(err, context.Canceled) {
		t.Errorf("Write after cancel = %v, want context.Canceled", err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	stats, _ := st.Stats(context.Background())
	if stats.Sources["email"] != 1 || stats.Sources["chat"] != 0 || stats.TotalChunks() != 1 {
		t.Errorf("after cancel: %+v, want the one email source written before", stats)
	}
}
