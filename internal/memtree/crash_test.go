package memtree_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

const crashEnv = "MEMTREE_CRASH_CHILD"

// crashSource is source i of the crash test: 60 chat messages, about 8 chunks.
func crashSource(i int) memtree.SourceInput {
	src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: fmt.Sprintf("chat:crash-%04d", i), Title: "crash"}
	for m := 0; m < 60; m++ {
		src.Messages = append(src.Messages, memtree.MessageInput{
			Ref: fmt.Sprintf("crash-%d-%d", i, m), Author: fmt.Sprintf("Person %d", m%7), TimestampMS: int64(m) * 1000,
			Text: fmt.Sprintf("source %d message %d ", i, m) + strings.Repeat("lorem ipsum dolor sit amet ", 8)})
	}
	return src
}

// crashBatch is the batch size of the batch-mode crash child.
const crashBatch = 4

// crashChild ingests sources forever into the store named by the env var, printing
// the number of each committed source; the parent kills it. With the "batch:" prefix
// it writes through a BatchWriter, crashBatch sources per transaction, and prints
// after each commit.
func crashChild() {
	path, batch := os.Getenv(crashEnv), false
	if p, ok := strings.CutPrefix(path, "batch:"); ok {
		path, batch = p, true
	}
	st, err := memtree.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if !batch {
		for i := 0; ; i++ {
			if _, err := st.Ingest(context.Background(), crashSource(i)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			fmt.Printf("committed %d\n", i)
		}
	}
	bw, err := st.NewBatchWriter(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bw.MaxSources, bw.MaxDuration = crashBatch, time.Hour
	for i := 0; ; i++ {
		p, err := memtree.Prepare(crashSource(i))
		if err == nil {
			_, err = bw.Write(p)
		}
		if err == nil && bw.Due() {
			if err = bw.Flush(); err == nil {
				fmt.Printf("committed %d\n", i)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

// TestKilledWriterLeavesWholeSources kills a writer (one transaction per source, and
// one per batch of crashBatch sources) mid-write: the store opens, passes an
// integrity check and holds only whole sources (whole batches).
func TestKilledWriterLeavesWholeSources(t *testing.T) {
	t.Run("per-source", func(t *testing.T) { testKilledWriter(t, false) })
	t.Run("batch", func(t *testing.T) { testKilledWriter(t, true) })
}

func testKilledWriter(t *testing.T, batch bool) {
	dir := t.TempDir()
	path := filepath.Join(dir, "memory_tree", "chunks.db")
	// Expected chunk count of one source, from a separate store.
	ref, err := memtree.Open(filepath.Join(dir, "ref.db"))
	if err != nil {
		t.Fatal(err)
	}
	one, err := ref.Ingest(context.Background(), crashSource(0))
	ref.Close()
	if err != nil {
		t.Fatal(err)
	}
	perSource := one.NewChunks

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	mode := ""
	if batch {
		mode = "batch:"
	}
	cmd.Env = append(os.Environ(), crashEnv+"="+mode+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	committed := -1
	for sc.Scan() {
		fmt.Sscanf(sc.Text(), "committed %d", &committed)
		if committed >= 5 {
			break
		}
	}
	// SIGKILL mid-ingest: the child is writing source committed+1 (in batch mode: the
	// batch after it) right now.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if committed < 5 {
		t.Fatalf("child committed %d sources before dying; stderr: %s", committed, stderr.String())
	}

	st, err := memtree.Open(path)
	if err != nil {
		t.Fatalf("store does not open after the writer was killed: %v", err)
	}
	defer st.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ic string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ic); err != nil || ic != "ok" {
		t.Fatalf("integrity_check = %q, %v", ic, err)
	}
	rows, err := db.Query(`SELECT s.source_id, s.chunk_count, (SELECT count(*) FROM chunks c WHERE c.source_rowid=s.rowid),
		(SELECT count(*) FROM summaries m WHERE m.source_rowid=s.rowid) FROM sources s`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var agg, real, sums int
		rows.Scan(&id, &agg, &real, &sums)
		n++
		if agg != perSource || real != perSource || sums == 0 {
			t.Errorf("source %s: aggregate %d, chunks %d, summaries %d; want %d whole chunks and a summary", id, agg, real, sums, perSource)
		}
	}
	if n < committed+1 {
		t.Errorf("store holds %d sources, the child reported %d committed", n, committed+1)
	}
	if batch && n%crashBatch != 0 {
		t.Errorf("store holds %d sources, not whole batches of %d", n, crashBatch)
	}
	var chunks int
	db.QueryRow(`SELECT count(*) FROM chunks`).Scan(&chunks)
	if chunks != n*perSource {
		t.Errorf("chunks = %d, want %d", chunks, n*perSource)
	}
	var lorem int
	db.QueryRow(`SELECT doc FROM chunks_fts_vocab WHERE term='lorem'`).Scan(&lorem)
	if lorem != chunks {
		t.Errorf("full-text index holds %d chunks with 'lorem', table %d", lorem, chunks)
	}
	// The store keeps working: the interrupted source can be ingested again.
	if _, err := st.Ingest(context.Background(), crashSource(n)); err != nil {
		t.Errorf("ingest after crash: %v", err)
	}
}
