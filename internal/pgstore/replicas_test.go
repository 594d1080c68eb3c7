package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestReplicaReads runs the read API over a store whose reads go to a real
// streaming standby (pg_basebackup -R of the test's primary): with the
// standby's replay paused, a message just ingested on the primary is not
// found (the reads are the standby's); once replay resumes it is; with the
// standby stopped, every tool's read answers from the primary without an
// error, also on the connections the stopped standby left in the pool.
func TestReplicaReads(t *testing.T) {
	ctx := context.Background()
	primary := pgtest.Start(t)
	url := primary.Database(t, "memory")
	w, err := pgstore.Open(ctx, url) // the writer: ingest goes to the primary
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	for _, in := range inputs() {
		if _, err := w.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	standby := primary.Standby(t)
	r, err := pgstore.Open(ctx, url, standby.URL("memory"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	api := memory.Default(r)
	found := func(q string) bool {
		t.Helper()
		res, err := api.Search(ctx, abi.SearchRequest{Query: q, K: 5})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		for _, h := range res.Chunks {
			if strings.Contains(h.Snippet, q) || strings.Contains(h.Title, q) {
				return true
			}
		}
		return false
	}
	waitFor := func(q string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !found(q) {
			if time.Now().After(deadline) {
				t.Fatalf("%q not found through the standby within 30 s", q)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("turtles") // the standby caught up with the base backup's tail

	sb, err := pgx.Connect(ctx, standby.URL("memory"))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	var inRecovery bool
	if err := sb.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil || !inRecovery {
		t.Fatalf("the standby is not in recovery: %v %v", inRecovery, err)
	}
	if _, err := sb.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	newMessage := memtree.SourceInput{Kind: abi.KindChat, SourceID: "slack:#hangar", Title: "#hangar", Provider: "test",
		Messages: []memtree.MessageInput{{Ref: "slack:hangar:1", Author: "Ines Vidal", TimestampMS: time.Date(2026, 5, 2, 9, 0, 0, 0, time.UTC).UnixMilli(),
			Text: "The zeppelin mooring mast arrives on Friday."}}}
	if _, err := w.Ingest(ctx, newMessage); err != nil {
		t.Fatal(err)
	}
	if found("zeppelin") {
		t.Fatal("found zeppelin while the standby's replay is paused: the reads are not the standby's")
	}
	if _, err := sb.Exec(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor("zeppelin")
	t.Logf("the new message was found through the standby %v after replay resumed", time.Since(start).Round(time.Millisecond))

	// The standby goes away: reads answer from the primary, without an error.
	sb.Close(ctx)
	standby.Stop(t)
	for i := range 3 {
		if !found("zeppelin") {
			t.Fatalf("read %d after the standby stopped: zeppelin not found", i+1)
		}
		if _, err := api.Recall(ctx, abi.RecallRequest{Query: "mooring mast", K: 5}); err != nil {
			t.Fatalf("recall after the standby stopped: %v", err)
		}
		list, err := memory.Default(r).ListChunks(ctx, abi.ChunksListRequest{K: 50})
		if err != nil || list.Total == 0 {
			t.Fatalf("browse after the standby stopped: %v %+v", err, list)
		}
		if _, err := memory.Default(r).ListSources(ctx, abi.SourcesListRequest{}); err != nil {
			t.Fatalf("list sources after the standby stopped: %v", err)
		}
		if _, err := memory.Default(r).TopEntities(ctx, abi.EntitiesTopRequest{K: 10}); err != nil {
			t.Fatalf("top entities after the standby stopped: %v", err)
		}
		if _, err := memory.Default(r).GetChunk(ctx, abi.ChunkGetRequest{ID: list.Chunks[0].ID}); err != nil {
			t.Fatalf("read chunk after the standby stopped: %v", err)
		}
	}
}

// TestReplicaUnreachableAtStart: a replica that does not answer when the store
// opens is no error; reads go to the primary.
func TestReplicaUnreachableAtStart(t *testing.T) {
	ctx := context.Background()
	primary := pgtest.Start(t)
	url := primary.Database(t, "memory")
	r, err := pgstore.Open(ctx, url, "postgres://postgres@127.0.0.1:1/memory?sslmode=disable")
	if err != nil {
		t.Fatalf("open with an unreachable replica: %v", err)
	}
	t.Cleanup(r.Close)
	for _, in := range inputs() {
		if _, err := r.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	res, err := memory.Default(r).Search(ctx, abi.SearchRequest{Query: "turtles", K: 5})
	if err != nil || len(res.Chunks) == 0 {
		t.Fatalf("search with the replica down: %v %+v", err, res)
	}
	if _, err := pgstore.Open(ctx, url, "postgres://[bad"); err == nil || !strings.Contains(err.Error(), "store replica 1") {
		t.Errorf("a malformed replica URL: %v", err)
	}
}
