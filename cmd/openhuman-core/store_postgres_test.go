package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestPostgresStoreEndToEnd selects a PostgreSQL store by OPENHUMAN_STORE_URL
// (a cluster this test starts) and runs the built binary: ingest writes the
// small corpus there, and search and recall find it through the sandboxed tool
// modules; no SQLite file appears in the workspace; status counts what PostgreSQL
// holds; doctor checks the server; forget deletes a source there.
func TestPostgresStoreEndToEnd(t *testing.T) {
	cluster := pgtest.Start(t)
	url := cluster.Database(t, "memory")
	e := newCLIEnv(t)
	e.extra = append(e.extra, "OPENHUMAN_STORE_URL="+url)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, stderr, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest into PostgreSQL: exit %d\n%s", code, stderr)
	}
	out, stderr, code := e.run("", "search", "--json", "brake quote")
	if code != 0 {
		t.Fatalf("search: exit %d\n%s", code, stderr)
	}
	var res abi.SearchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("search --json: %v\n%s", err, out)
	}
	if len(res.Chunks) == 0 || res.Chunks[0].SourceKind != abi.KindEmail || len(res.Chunks[0].Messages) == 0 {
		t.Fatalf("search brake quote on PostgreSQL: %s", out)
	}
	out, stderr, code = e.run("", "recall", "tomatoes fence")
	if code != 0 || !strings.Contains(out, "Garden") {
		t.Fatalf("recall: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.ohome, "workspace", "memory_tree", "chunks.db")); err == nil {
		t.Error("a SQLite store was written although the store URL selects PostgreSQL")
	}
	st := e.status()
	if !strings.HasPrefix(st.Store.Path, "postgres://127.0.0.1:") || st.Store.TotalChunks == 0 || st.Store.Sources["email"] != 1 {
		t.Errorf("status on PostgreSQL: %+v", st.Store)
	}
	out, _, _ = e.run("", "doctor")
	if !strings.Contains(out, "PostgreSQL store answers") {
		t.Errorf("doctor does not check the PostgreSQL store:\n%s", out)
	}
	// forget deletes the mail thread from PostgreSQL; search no longer finds it.
	out, stderr, code = e.run("", "forget", "--json", "--root", mbox)
	if code != 0 || !strings.Contains(out, `"kind": "email"`) {
		t.Fatalf("forget --root %s on PostgreSQL: exit %d\n%s\n%s", mbox, code, out, stderr)
	}
	out, _, _ = e.run("", "search", "--json", "brake quote")
	if strings.Contains(out, `"source_kind": "email"`) {
		t.Errorf("the forgotten mail thread is still found:\n%s", out)
	}
}

// TestPostgresStoreUnreachable: a store URL nothing answers at makes search
// fail with the host named, not crash or fall back to the SQLite file.
func TestPostgresStoreUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	e := newCLIEnv(t)
	e.extra = append(e.extra, "OPENHUMAN_STORE_URL=postgres://nobody@"+addr+"/memory?sslmode=disable&connect_timeout=5")
	_, stderr, code := e.run("", "search", "anything")
	if code == 0 || !strings.Contains(stderr, addr) || !strings.Contains(stderr, "does not answer") {
		t.Errorf("search with an unreachable store: exit %d\n%s", code, stderr)
	}
}

// TestPostgresReplicaEndToEnd: with OPENHUMAN_STORE_REPLICAS naming a
// streaming standby of the store's database, doctor checks the standby, search
// reads through it what ingest wrote to the primary, and with the standby
// stopped search still answers (from the primary), and doctor says the
// replica does not answer without failing.
func TestPostgresReplicaEndToEnd(t *testing.T) {
	primary := pgtest.Start(t)
	url := primary.Database(t, "memory")
	e := newCLIEnv(t)
	e.extra = append(e.extra, "OPENHUMAN_STORE_URL="+url)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, stderr, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest into PostgreSQL: exit %d\n%s", code, stderr)
	}
	standby := primary.Standby(t)
	e.extra = append(e.extra, "OPENHUMAN_STORE_REPLICAS="+standby.URL("memory"))
	out, _, _ := e.run("", "doctor")
	if !strings.Contains(out, "standby 127.0.0.1:") || !strings.Contains(out, "principals") {
		t.Errorf("doctor does not check the standby and the principals:\n%s", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, stderr, code := e.run("", "search", "--json", "brake quote")
		if code != 0 {
			t.Fatalf("search through the standby: exit %d\n%s", code, stderr)
		}
		if strings.Contains(out, `"source_kind": "email"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mail thread is not found through the standby within 30 s:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	standby.Stop(t)
	out, stderr, code := e.run("", "search", "--json", "brake quote")
	if code != 0 || !strings.Contains(out, `"source_kind": "email"`) {
		t.Errorf("search with the standby stopped: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = e.run("", "doctor")
	if !strings.Contains(out, "warn  replica 1") || !strings.Contains(out, "reads go to the primary meanwhile") || code != 0 {
		t.Errorf("doctor with the standby stopped (exit %d):\n%s", code, out)
	}
}
