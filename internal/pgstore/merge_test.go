package pgstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestMergeMatchesSQLite ingests exports of one chat conversation at different
// times (SourceInput.Merge: overlapping, one message edited by the later export, each export again)
// into both backends: after each, the chunks (ids, texts) are the same on
// PostgreSQL as on SQLite, every message of every export is kept, and an
// export ingested again changes nothing.
func TestMergeMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	pg := open(t)
	lite, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	at := func(m int) int64 { return time.Date(2026, 5, 4, 9, m, 0, 0, time.UTC).UnixMilli() }
	msg := func(i int, text string) memtree.MessageInput {
		return memtree.MessageInput{Ref: fmt.Sprintf("slack:ops:%d", i), Author: []string{"Ana", "Ben"}[i%2], TimestampMS: at(i * 2), Text: text}
	}
	export := func(ms ...memtree.MessageInput) memtree.SourceInput {
		return memtree.SourceInput{Kind: abi.KindChat, SourceID: "slack:#ops/2026-05", Title: "#ops", Provider: "slack", Merge: true, Messages: ms}
	}
	first := export(msg(1, "The deploy of the billing service starts at nine."), msg(2, "Rollback plan is in the runbook."), msg(3, "Paging is on for the night."))
	second := export(msg(3, "Paging is on for the night shift."), msg(4, "Billing deploy finished, error rate flat."), msg(5, "Closing the change ticket."))
	third := export(msg(6, "Postmortem for the billing deploy is on Friday."))
	anon := export(memtree.MessageInput{Author: "bot", TimestampMS: at(20), Text: "Weekly uptime: 99.98 percent."})
	chunks := func(store memory.Store) []string {
		st := memory.Default(store)
		res, err := st.ListChunks(ctx, abi.ChunksListRequest{K: 50})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range res.Chunks {
			c, err := st.GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h.ID+" "+c.Chunk.Text)
		}
		slices.Sort(out)
		return out
	}
	for i, in := range []memtree.SourceInput{first, second, second, third, first, anon, anon} {
		ps, err := pg.Ingest(ctx, in)
		if err != nil {
			t.Fatalf("export %d on PostgreSQL: %v", i+1, err)
		}
		ls, err := lite.Ingest(ctx, in)
		if err != nil {
			t.Fatalf("export %d on SQLite: %v", i+1, err)
		}
		pc, lc := chunks(pg), chunks(lite)
		if !slices.Equal(pc, lc) {
			t.Errorf("after export %d:\n  PostgreSQL %q\n  SQLite     %q", i+1, pc, lc)
		}
		if ps.NewChunks != ls.NewChunks || ps.RemovedChunks != ls.RemovedChunks || ps.UnchangedChunks != ls.UnchangedChunks {
			t.Errorf("export %d: PostgreSQL %+v, SQLite %+v", i+1, ps, ls)
		}
		if (i == 2 || i == 6) && ps.NewChunks+ps.RemovedChunks != 0 {
			t.Errorf("export %d again changed the store: %+v", i+1, ps)
		}
	}
	all := fmt.Sprint(chunks(pg))
	for _, want := range []string{"starts at nine", "Rollback plan", "error rate flat", "change ticket", "Postmortem", "99.98 percent"} {
		if !contains(all, want) {
			t.Errorf("the merged conversation lost %q: %s", want, all)
		}
	}
	// The first export, ingested last, carries message 3 as it first said it.
	if !contains(all, "for the night.") || contains(all, "night shift") {
		t.Errorf("the message of the latest export does not stand: %s", all)
	}
	// The conversation written without Merge keeps no stored messages: a later
	// export merges with nothing.
	plain := first
	plain.Merge = false
	for _, in := range []memtree.SourceInput{plain, third} {
		if _, err := pg.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
		if _, err := lite.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if pc, lc := chunks(pg), chunks(lite); !slices.Equal(pc, lc) || contains(fmt.Sprint(pc), "Rollback plan") {
		t.Errorf("after a plain write and an export:\n  PostgreSQL %q\n  SQLite     %q", pc, lc)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
