package ingest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// A large mbox is parsed on several goroutines, but threading sees its messages in
// file order: of two different messages reusing a Message-ID, the one read first
// keeps the id and the later one gets the suffix, every time.
func TestMailPoolKeepsFileOrder(t *testing.T) {
	var b strings.Builder
	const n = 400
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m%d@x.example", i)
		if i >= n/2 {
			id = fmt.Sprintf("m%d@x.example", i-n/2) // reused by a different message
		}
		fmt.Fprintf(&b, "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n%s\nMessage %d of the file.\n\n",
			readertest.MailHeader("Ana Souza <ana@mailbox.example>", fmt.Sprintf("Subject %d", i), fmt.Sprintf("Mon, 05 Jan 2026 %02d:%02d:00 +0000", i/60%24, i%60), id), i)
	}
	dir := readertest.WriteFiles(t, map[string]string{"big.mbox": b.String()})
	for round := 0; round < 3; round++ {
		c, sum := runOn(t, Options{}, dir)
		if sum.Failures != 0 || len(c.srcs) != n {
			t.Fatalf("round %d: %d sources, failures %v", round, len(c.srcs), sum.Errors)
		}
		for _, src := range c.srcs {
			m := src.Messages[0]
			var k int
			if _, err := fmt.Sscanf(m.Text, "Message %d", &k); err != nil {
				t.Fatalf("text %q", m.Text)
			}
			want := fmt.Sprintf("m%d@x.example", k)
			if k >= n/2 {
				want = fmt.Sprintf("m%d@x.example#2", k-n/2)
			}
			if m.Ref != want {
				t.Fatalf("round %d: message %d stored as %q, want %q", round, k, m.Ref, want)
			}
		}
	}
}

// With a write budget far smaller than one source, every source is still written
// (two sources are always admitted) and the store holds what an unbounded run
// stores; a debug logger gets one line saying where the time went.
func TestPipelineBudgetSmallerThanASource(t *testing.T) {
	var mbox strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&mbox, "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n%s\nBody %d.\n\n",
			readertest.MailHeader("Ana Souza <ana@mailbox.example>", fmt.Sprintf("S%d", i), "Mon, 05 Jan 2026 10:00:00 +0000", fmt.Sprintf("b%d@x.example", i)), i)
	}
	var batch strings.Builder
	batch.WriteString(`{"platform":"whatsapp","channel_label":"Family","messages":[`)
	for i := 0; i < 300; i++ {
		if i > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"author":"Ana","timestamp":%d,"text":"message number %d about the trip","source_ref":"wa:%d"}`, int64(1767600000000)+int64(i)*86400000/10, i, i)
	}
	batch.WriteString("]}")
	dir := readertest.WriteFiles(t, map[string]string{"mail.mbox": mbox.String(), "chat/week.json": batch.String()})

	ingestAll := func() (int, int) {
		st := openStore(t)
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		sum, err := Run(context.Background(), st, []string{dir}, Options{Logger: log})
		if err != nil || sum.Failures != 0 {
			t.Fatalf("%v %v", err, sum.Errors)
		}
		if n := strings.Count(logs.String(), "where the time went"); n != 1 || !strings.Contains(logs.String(), "parse ") || !strings.Contains(logs.String(), "FTS ") {
			t.Errorf("%d time summaries in the log:\n%s", n, logs.String())
		}
		db, err := sql.Open("sqlite", "file:"+st.Path()+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var chunks, msgs int
		if err := db.QueryRow(`SELECT count(*) FROM chunks`).Scan(&chunks); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT count(*) FROM source_messages`).Scan(&msgs); err != nil {
			t.Fatal(err)
		}
		return chunks, msgs
	}
	wantChunks, wantMsgs := ingestAll()
	old := inflightBytes
	inflightBytes = 1
	defer func() { inflightBytes = old }()
	chunks, msgs := ingestAll()
	if chunks != wantChunks || msgs != wantMsgs || msgs != 300 {
		t.Errorf("budget of 1 byte: %d chunks, %d chat messages; unbounded: %d, %d (want 300 chat messages)", chunks, msgs, wantChunks, wantMsgs)
	}
}

// Chat months are gathered across files and written once: a conversation's next
// month writes its earlier months at once (they are complete when exports come in
// time order), other conversations' months stay gathered, and when the gathered
// messages pass coalesceBytes the months added to longest ago are written first.
func TestCoalesceWritesCompleteMonths(t *testing.T) {
	st := openStore(t)
	rep := readkit.NewReport(nil)
	r := &runner{w: st, rep: rep, sum: rep.Sum, times: rep.Times, yield: make([]int, 1)}
	msg := func(day int, text string) []memtree.MessageInput {
		return []memtree.MessageInput{{Ref: text, Author: "Rosa", TimestampMS: time.Date(2026, 1, day, 9, 0, 0, 0, time.UTC).UnixMilli(), Text: text}}
	}
	src := func(id string, day int, text string) memtree.SourceInput {
		return memtree.SourceInput{Kind: memtree.KindChat, SourceID: id, Title: id, Merge: true, Messages: msg(day, text)}
	}
	pendingIDs := func() string {
		ids := append([]string(nil), r.pendingOrder...)
		sort.Strings(ids)
		return strings.Join(ids, " ")
	}
	r.coalesce(src("slack:ops/2026-01", 3, "alpha"))
	r.coalesce(src("slack:dev/2026-01", 4, "beta"))
	r.coalesce(src("slack:ops/2026-01", 5, "gamma"))
	if got := pendingIDs(); got != "slack:dev/2026-01 slack:ops/2026-01" || rep.Sum.Sources != 0 {
		t.Fatalf("after January: pending %q, %d sources written", got, rep.Sum.Sources)
	}
	r.coalesce(src("slack:ops/2026-02", 6, "delta"))
	if got := pendingIDs(); got != "slack:dev/2026-01 slack:ops/2026-02" || rep.Sum.Sources != 1 {
		t.Fatalf("after ops' February: pending %q, %d sources written (want ops' January written)", got, rep.Sum.Sources)
	}
	// Over the bound: dev's January (added to before ops' February) goes first.
	old := coalesceBytes
	defer func() { coalesceBytes = old }()
	qa := src("slack:qa/2026-02", 7, "epsilon")
	coalesceBytes = r.pendingBytes + len("epsilon") + len("Rosa") + len("epsilon") + 64 // reached with qa
	r.coalesce(qa)
	if got := pendingIDs(); got != "slack:qa/2026-02" || rep.Sum.Sources != 3 {
		t.Fatalf("over the bound: pending %q, %d sources written", got, rep.Sum.Sources)
	}
	r.flushPending(context.Background())
	if rep.Sum.Sources != 4 || rep.Sum.Failures != 0 {
		t.Fatalf("%d sources written, %d failures: %v", rep.Sum.Sources, rep.Sum.Failures, rep.Sum.Errors)
	}
	for _, w := range []string{"alpha", "beta", "gamma", "delta", "epsilon"} {
		res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: w, K: 5})
		if err != nil || len(res.Chunks) != 1 {
			t.Errorf("search %q: %d chunks, %v", w, len(res.Chunks), err)
		}
	}
}
