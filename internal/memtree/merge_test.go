package memtree_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// chanMsg is one message of the #eng test channel: day d of month mon (2026), at
// hour:minute:second, with a ref naming it.
func chanMsg(mon, d, hour, minute, sec int, author, text string) memtree.MessageInput {
	ts := time.Date(2026, time.Month(mon), d, hour, minute, sec, 0, time.UTC).UnixMilli()
	return memtree.MessageInput{Ref: fmt.Sprintf("slack:eng:%d.000100", ts/1000), Author: author,
		AuthorAddr: strings.ToLower(strings.Fields(author)[0]) + "@example.org", TimestampMS: ts, Text: text}
}

func engSource(msgs ...memtree.MessageInput) memtree.SourceInput {
	return memtree.SourceInput{Kind: memtree.KindChat, SourceID: "slack:#eng", Title: "#eng", Provider: "slack",
		Messages: msgs, Merge: true}
}

// engDays is a channel's messages over January and February, one exchange a day.
func engDays() []memtree.MessageInput {
	words := []string{"kestrel", "osprey", "heron", "plover", "avocet", "curlew", "dunlin", "godwit", "lapwing", "merlin"}
	var out []memtree.MessageInput
	for i, w := range words {
		mon, d := 1, 5+i*3
		if d > 28 {
			mon, d = 2, d-28
		}
		m := chanMsg(mon, d, 9, 30, 17, "Dana Ruiz", "The "+w+" report is due, who takes it?")
		if i%3 == 0 {
			m.Attachments = []abi.Attachment{{Name: w + ".pdf", ContentType: "application/pdf", Size: 1000 + i}}
		}
		out = append(out, m, chanMsg(mon, d, 9, 41, 3, "Erik Lund", "I take the "+w+" report."))
	}
	return out
}

// storedChunks lists a source's chunks (text, refs, times, attachments), in order.
func storedChunks(t *testing.T, st *memtree.Store, sourceID string) []abi.Chunk {
	t.Helper()
	ctx := context.Background()
	res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{SourceIDs: []string{sourceID}, K: 50})
	if err != nil {
		t.Fatal(err)
	}
	var out []abi.Chunk
	for _, h := range res.Chunks {
		c, err := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
		if err != nil {
			t.Fatal(err)
		}
		c.Chunk.Entities = nil
		out = append(out, c.Chunk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

func mustIngest(t *testing.T, st *memtree.Store, in memtree.SourceInput) memtree.IngestStats {
	t.Helper()
	res, err := st.Ingest(context.Background(), in)
	if err != nil {
		t.Fatalf("Ingest %s: %v", in.SourceID, err)
	}
	return res
}

func hits(t *testing.T, st *memtree.Store, q string) int {
	t.Helper()
	res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: q, K: 50})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Chunks)
}

// sameChunks fails unless two stores hold the same chunks for sourceID.
func sameChunks(t *testing.T, what string, got, want *memtree.Store, sourceID string) {
	t.Helper()
	a, b := storedChunks(t, got, sourceID), storedChunks(t, want, sourceID)
	if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) {
		t.Errorf("%s: chunks differ from a store given the union at once:\n got %+v\nwant %+v", what, a, b)
	}
}

func TestMergeSecondMonthKeepsFirst(t *testing.T) {
	all := engDays()
	var jan, feb []memtree.MessageInput
	for _, m := range all {
		if time.UnixMilli(m.TimestampMS).UTC().Month() == time.January {
			jan = append(jan, m)
		} else {
			feb = append(feb, m)
		}
	}
	if len(jan) == 0 || len(feb) == 0 {
		t.Fatal("fixture spans one month")
	}
	st, _ := openEmpty(t)
	first := mustIngest(t, st, engSource(jan...))
	res := mustIngest(t, st, engSource(feb...))
	// The January chunks stay; they hold none of the February export's messages, so
	// they are not counted as its unchanged chunks.
	if res.RemovedChunks != 0 || res.UnchangedChunks != 0 || res.NewChunks == 0 {
		t.Errorf("February after January: %+v, want some new, 0 unchanged, 0 removed", res)
	}
	if stats, _ := st.Stats(context.Background()); stats.Chunks["chat"] != first.NewChunks+res.NewChunks {
		t.Errorf("chunks = %v, want %d + %d", stats.Chunks, first.NewChunks, res.NewChunks)
	}
	for _, q := range []string{"kestrel", "lapwing", "merlin"} {
		if hits(t, st, q) == 0 {
			t.Errorf("search %q finds nothing after the second export", q)
		}
	}
	ref, _ := openEmpty(t)
	mustIngest(t, ref, engSource(all...))
	sameChunks(t, "January then February", st, ref, "slack:#eng")
	// The January export again: it lacks February, which stays; nothing changes.
	res = mustIngest(t, st, engSource(jan...))
	if res.NewChunks != 0 || res.RemovedChunks != 0 || res.UnchangedChunks != first.NewChunks {
		t.Errorf("January again after the union: %+v, want its %d chunks unchanged, nothing new or removed", res, first.NewChunks)
	}
	sameChunks(t, "January again", st, ref, "slack:#eng")
}

func TestMergeOverlappingExports(t *testing.T) {
	all := engDays()
	a, b := all[:12], all[6:]
	st, _ := openEmpty(t)
	mustIngest(t, st, engSource(a...))
	res := mustIngest(t, st, engSource(b...))
	if res.RemovedChunks != 0 {
		t.Errorf("overlapping export removed %d chunks", res.RemovedChunks)
	}
	ref, _ := openEmpty(t)
	mustIngest(t, ref, engSource(all...))
	sameChunks(t, "overlap", st, ref, "slack:#eng")
	// The stored messages come back whole: the seconds, the addresses and each
	// message's attachments survive a merge that re-reads them (b lacks a's start).
	cs := storedChunks(t, st, "slack:#eng")
	if len(cs) == 0 || cs[0].TimestampMS != all[0].TimestampMS || len(cs[0].Attachments) != 1 || cs[0].Attachments[0].Name != "kestrel.pdf" {
		t.Errorf("first chunk after merge = %+v, want the kestrel message with its time and attachment", cs)
	}
	srcs, err := memory.Default(st).ListSources(context.Background(), abi.SourcesListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs.Sources) != 1 {
		t.Errorf("sources = %d, want 1", len(srcs.Sources))
	}
}

func TestMergeReplacesEditedMessage(t *testing.T) {
	all := engDays()[:6]
	st, _ := openEmpty(t)
	mustIngest(t, st, engSource(all...))
	edited := all[2]
	edited.Text = "The osprey report moved to Thursday (edited)."
	res := mustIngest(t, st, engSource(edited))
	if res.RemovedChunks == 0 || res.NewChunks == 0 {
		t.Errorf("edit stats %+v, want the edited chunk replaced", res)
	}
	if n := hits(t, st, "thursday"); n != 1 {
		t.Errorf("search for the edited text: %d hits, want 1", n)
	}
	for _, c := range storedChunks(t, st, "slack:#eng") {
		if strings.Contains(c.Text, "osprey report is due") {
			t.Errorf("the text before the edit is still stored: %q", c.Text)
		}
	}
	want := append([]memtree.MessageInput(nil), all...)
	want[2] = edited
	ref, _ := openEmpty(t)
	mustIngest(t, ref, engSource(want...))
	sameChunks(t, "edit", st, ref, "slack:#eng")
	if n := hits(t, st, "heron"); n == 0 {
		t.Error("the messages the edit did not name are gone")
	}
}

func TestMergeReingestUnchanged(t *testing.T) {
	all := engDays()
	// A message without a ref is kept, and not doubled by a second ingest.
	anon := chanMsg(2, 20, 12, 0, 0, "Bob Stone", "Anonymous albatross note")
	anon.Ref = ""
	in := engSource(append(append([]memtree.MessageInput(nil), all...), anon)...)
	st, path := openEmpty(t)
	first := mustIngest(t, st, in)
	for i := 0; i < 2; i++ {
		res := mustIngest(t, st, in)
		if res.NewChunks != 0 || res.RemovedChunks != 0 || res.UnchangedChunks != first.NewChunks {
			t.Errorf("re-ingest %d: %+v, want %d unchanged, 0 new, 0 removed", i+1, res, first.NewChunks)
		}
	}
	// A later export without the ref-less message keeps it.
	mustIngest(t, st, engSource(all[:4]...))
	if n := hits(t, st, "albatross"); n != 1 {
		t.Errorf("search albatross: %d hits, want 1", n)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM source_messages`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(all)+1 {
		t.Errorf("stored messages = %d, want %d", n, len(all)+1)
	}
	// Re-ingesting writes no message row.
	if _, err := db.Exec(`CREATE TABLE audit(op TEXT);
		CREATE TRIGGER sm_ins AFTER INSERT ON source_messages BEGIN INSERT INTO audit VALUES('insert'); END;
		CREATE TRIGGER sm_upd AFTER UPDATE ON source_messages BEGIN INSERT INTO audit VALUES('update'); END;`); err != nil {
		t.Fatal(err)
	}
	mustIngest(t, st, in)
	if err := db.QueryRow(`SELECT count(*) FROM audit`).Scan(&n); err != nil || n != 0 {
		t.Errorf("an identical re-ingest wrote %d message rows (%v), want 0", n, err)
	}
	edited := in
	edited.Messages = []memtree.MessageInput{all[3]}
	edited.Messages[0].Text += " (edited)"
	mustIngest(t, st, edited)
	if err := db.QueryRow(`SELECT count(*) FROM audit`).Scan(&n); err != nil || n != 1 {
		t.Errorf("an edit of one message wrote %d message rows (%v), want 1", n, err)
	}
	// Deleting the source deletes its messages; writing it without Merge forgets them.
	plain := in
	plain.Merge = false
	mustIngest(t, st, plain)
	if err := db.QueryRow(`SELECT count(*) FROM source_messages`).Scan(&n); err != nil || n != 0 {
		t.Errorf("stored messages after a write without Merge = %d, %v; want 0", n, err)
	}
	mustIngest(t, st, in)
	if _, err := db.Exec(`PRAGMA foreign_keys=ON`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM sources WHERE source_id='slack:#eng'`); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM source_messages`).Scan(&n); err != nil || n != 0 {
		t.Errorf("stored messages after deleting the source = %d, %v; want 0", n, err)
	}
}

// TestMergeBatchReplay merges inside a batch in which a later source fails, so the
// batch is rolled back and written again: the merged source is stored as its union.
func TestMergeBatchReplay(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "batch.db")
	st, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	poisonSummaries(t, path)
	all := engDays()
	mustIngest(t, st, engSource(all[:8]...))

	poison := memtree.SourceInput{Kind: memtree.KindChat, SourceID: "slack:#poison", Title: "POISON", Provider: "slack",
		Messages: []memtree.MessageInput{{Ref: "p1", Author: "Bob Stone", TimestampMS: ms("2026-05-01T10:00:00Z"), Text: "Zanzibar ferry"}}, Merge: true}
	bw, err := st.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Two overlapping exports merge in the batch (the second sees the first), then a
	// source fails and the batch is replayed.
	for i, in := range []memtree.SourceInput{engSource(all[4:14]...), engSource(all[12:]...), poison} {
		_, err := bw.Write(mustPrepare(t, in))
		if (err != nil) != (i == 2) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	res, err := bw.Write(mustPrepare(t, engSource(all[:2]...)))
	if err != nil || res.NewChunks != 0 || res.RemovedChunks != 0 {
		t.Errorf("write after the replay: %+v, %v; want nothing new or removed", res, err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	ref, _ := openEmpty(t)
	mustIngest(t, ref, engSource(all...))
	sameChunks(t, "batch replay", st, ref, "slack:#eng")
	if n := hits(t, st, "zanzibar"); n != 0 {
		t.Errorf("the failed source left %d hits", n)
	}
}

func TestMergeSearchFindsBothExports(t *testing.T) {
	st, _ := openEmpty(t)
	mustIngest(t, st, engSource(chanMsg(3, 2, 10, 0, 0, "Dana Ruiz", "The quarterly zeppelin budget is approved")))
	mustIngest(t, st, engSource(chanMsg(3, 9, 10, 0, 0, "Erik Lund", "The submarine procurement starts Monday")))
	for _, q := range []string{"zeppelin budget", "submarine procurement"} {
		if n := hits(t, st, q); n != 1 {
			t.Errorf("search %q: %d hits, want 1", q, n)
		}
	}
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sources["chat"] != 1 || stats.Chunks["chat"] != 2 {
		t.Errorf("stats %+v, want 1 chat source with 2 chunks", stats)
	}
}
