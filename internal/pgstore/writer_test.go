package pgstore_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestReingestKeepsCountsInStep replaces a source, removes words and re-writes
// an unchanged source on both backends: document frequencies of every word,
// the vocabulary and the chunk count stay equal to SQLite's, and an unchanged
// source writes nothing.
func TestReingestKeepsCountsInStep(t *testing.T) {
	ctx := context.Background()
	pg := open(t)
	lite, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	ins := inputs()
	car := ins[3]
	if car.SourceID != "doc:notes/car.md" {
		t.Fatalf("fixture order changed: %s", car.SourceID)
	}
	car.Messages = []memtree.MessageInput{{Ref: "notes/car.md", TimestampMS: car.Messages[0].TimestampMS,
		Text: "# Car repair\n\nSold the car; bought a bicycle with new pads.\n\nNo more oil change."}}
	steps := append(ins, car, ins[0])
	var last memtree.IngestStats
	for _, in := range steps {
		if last, err = pg.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
		if _, err := lite.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if last.NewChunks != 0 || last.RemovedChunks != 0 || last.UnchangedChunks == 0 {
		t.Errorf("re-ingesting an unchanged source: %+v, want only unchanged chunks", last)
	}
	pb, err := pg.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := lite.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pb.Stats().Chunks != lb.Stats().Chunks {
		t.Errorf("chunks: PostgreSQL %d, SQLite %d", pb.Stats().Chunks, lb.Stats().Chunks)
	}
	words := map[string]bool{"bicycle": true, "garage": true, "brake": true}
	for _, in := range steps {
		for _, m := range in.Messages {
			for _, w := range analysis.Words(m.Text + " " + in.Title) {
				words[w] = true
			}
		}
	}
	for w := range words {
		p, err1 := pb.DocFreq(ctx, w)
		l, err2 := lb.DocFreq(ctx, w)
		if err1 != nil || err2 != nil || p != l {
			t.Errorf("DocFreq(%q): PostgreSQL %d (%v), SQLite %d (%v)", w, p, err1, l, err2)
		}
	}
	if df, _ := pb.DocFreq(ctx, "garage"); df != 0 {
		t.Errorf("DocFreq(garage) = %d after the only chunk saying it was replaced", df)
	}
	pv, _ := pb.Vocabulary(ctx, 1<<20)
	lv, _ := lb.Vocabulary(ctx, 1<<20)
	if pv != lv {
		t.Errorf("vocabulary: PostgreSQL %d, SQLite %d", pv, lv)
	}
	hs, err := pb.Match(ctx, index.Match{Query: index.Words(index.All, "garage"), Limit: 10})
	if err != nil || len(hs) != 0 {
		t.Errorf("the replaced chunk's word still matches: %v, %v", hs, err)
	}
	if err := pg.CheckCounts(ctx); err != nil {
		t.Error(err)
	}
}

// TestConcurrentIngestAndReads writes sources sharing words from several
// goroutines while others search: no error (no deadlock between writers
// updating the same terms and entities), and the counts add up.
func TestConcurrentIngestAndReads(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	if _, err := st.Ingest(ctx, inputs()[0]); err != nil {
		t.Fatal(err)
	}
	b0, err := st.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	baseChunks := b0.Stats().Chunks
	baseBudget, err := b0.DocFreq(ctx, "budget")
	if err != nil || baseBudget == 0 {
		t.Fatalf("DocFreq(budget) after the first source = %d, %v", baseBudget, err)
	}
	const writers, perWriter = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				in := memtree.SourceInput{Kind: abi.KindDocument, SourceID: fmt.Sprintf("doc:w%d/%d.md", w, i), Title: "Shared notes", Provider: "test",
					Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("w%d/%d.md", w, i), TimestampMS: time.Date(2026, 5, 1+i, 0, 0, 0, 0, time.UTC).UnixMilli(),
						Text: fmt.Sprintf("Zebra meeting with Ada Lovelace about the harbour budget, note %d of writer %d. #shared", i, w)}}}
				if _, err := st.Ingest(ctx, in); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				b, err := st.BeginRead(ctx)
				if err != nil {
					errs <- err
					return
				}
				if _, err := b.Match(ctx, index.Match{Query: index.Words(index.Any, "zebra", "budget"), Limit: 10}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b, err := st.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if df, err := b.DocFreq(ctx, "zebra"); err != nil || df != writers*perWriter {
		t.Errorf("DocFreq(zebra) = %d, %v; want %d", df, err, writers*perWriter)
	}
	if df, err := b.DocFreq(ctx, "budget"); err != nil || df != writers*perWriter+baseBudget {
		t.Errorf("DocFreq(budget) = %d, %v; want %d", df, err, writers*perWriter+baseBudget)
	}
	if got := b.Stats().Chunks; got != writers*perWriter+baseChunks {
		t.Errorf("Stats().Chunks = %d, want %d", got, writers*perWriter+baseChunks)
	}
	if err := st.CheckCounts(ctx); err != nil {
		t.Error(err)
	}
}

// TestUnreachableServer: a URL nothing answers at is an error naming the host
// and what to check, and no password of the URL.
func TestUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = pgstore.Open(ctx, "postgres://alice:s3cret@"+addr+"/memory?sslmode=disable&connect_timeout=5")
	if err == nil {
		t.Fatalf("Open of %s (nothing listening) succeeded", addr)
	}
	msg := err.Error()
	for _, want := range []string{addr, "does not answer", "check"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error %q repeats the URL's password", msg)
	}
	if _, err := pgstore.Open(ctx, "postgres://alice:s3cret@[bad"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("malformed URL: %v; want an error without the password", err)
	}
}
