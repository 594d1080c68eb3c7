package ingest

import (
	"context"
	"database/sql"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestSlackSecondExportMerges ingests two exports of one workspace into a real store:
// a January export, then one overlapping it and reaching into February. Both months'
// messages stay searchable and the second export removes nothing.
func TestSlackSecondExportMerges(t *testing.T) {
	first := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-05.json": `[{"type":"message","user":"U1","text":"The zeppelin budget is approved","ts":"1767600100.000001"}]`,
		"phoenix/2026-01-08.json": `[{"type":"message","user":"U2","text":"Hangar lease signed","ts":"1767900000.000001"}]`,
	})
	second := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-08.json": `[{"type":"message","user":"U2","text":"Hangar lease signed","ts":"1767900000.000001"}]`,
		"phoenix/2026-01-30.json": `[{"type":"message","user":"U1","text":"Helium delivery scheduled","ts":"1769800000.000001"}]`,
		"phoenix/2026-02-02.json": `[{"type":"message","user":"U2","text":"The submarine procurement starts","ts":"1770000000.000001"}]`,
	})
	st := openStore(t)
	ctx := context.Background()
	ingest := func(dir string) memtree.IngestStats {
		out, rep := readertest.Run(t, chat.SlackReader{}, dir)
		if rep.Sum.Failures != 0 {
			t.Fatal(rep.Sum.Errors)
		}
		var sum memtree.IngestStats
		for _, src := range out.Sources {
			res, err := st.Ingest(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			sum.NewChunks += res.NewChunks
			sum.UnchangedChunks += res.UnchangedChunks
			sum.RemovedChunks += res.RemovedChunks
		}
		return sum
	}
	ingest(first)
	if res := ingest(second); res.RemovedChunks != 0 {
		t.Errorf("the second export removed %d chunks", res.RemovedChunks)
	}
	for _, q := range []string{"zeppelin budget", "hangar lease", "helium delivery", "submarine procurement"} {
		res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Chunks) != 1 {
			t.Errorf("search %q: %d hits, want 1", q, len(res.Chunks))
		}
	}
	// Both exports again: nothing new, nothing removed.
	again := ingest(first)
	again2 := ingest(second)
	if again.NewChunks+again2.NewChunks != 0 || again.RemovedChunks+again2.RemovedChunks != 0 {
		t.Errorf("re-ingest: %+v, %+v; want nothing new or removed", again, again2)
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sources["chat"] != 2 {
		t.Errorf("chat sources = %d, want 2 (January, February)", stats.Sources["chat"])
	}
}

// A thread reply's link to its parent is stored with the message (source_messages)
// and survives a later export of the same channel merged into it, while the chunk
// text holds only what people wrote.
func TestSlackReplyLinkStored(t *testing.T) {
	first := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-05.json": `[
			{"type":"message","user":"U1","text":"Should we ship on Friday?","ts":"1767600100.000200","thread_ts":"1767600100.000200"},
			{"type":"message","user":"U2","text":"Yes, Friday works","ts":"1767600200.000300","thread_ts":"1767600100.000200"}]`,
	})
	second := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-09.json": `[{"type":"message","user":"U2","text":"Shipped it","ts":"1767900100.000500","thread_ts":"1767600100.000200"}]`,
	})
	st := openStore(t)
	for _, dir := range []string{first, second} {
		if sum, err := Run(context.Background(), st, []string{dir}, Options{}); err != nil || sum.Failures != 0 {
			t.Fatalf("ingest %s: %v %v", dir, err, sum.Errors)
		}
	}
	db, err := sql.Open("sqlite", "file:"+st.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	links := map[string]string{}
	rows, err := db.Query(`SELECT ref, msg_json FROM source_messages`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ref, js string
		if err := rows.Scan(&ref, &js); err != nil {
			t.Fatal(err)
		}
		var m struct {
			ReplyTo string `json:"rt"`
		}
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		links[ref] = m.ReplyTo
	}
	rows.Close()
	parent := "slack:phoenix:1767600100.000200"
	want := map[string]string{parent: "", "slack:phoenix:1767600200.000300": parent, "slack:phoenix:1767900100.000500": parent}
	if !reflect.DeepEqual(links, want) {
		t.Errorf("stored links = %v, want %v", links, want)
	}
	chunks := sourceChunks(t, st, "slack:#phoenix/2026-01")
	if len(chunks) == 0 {
		t.Fatal("no chunks for #phoenix")
	}
	for _, c := range chunks {
		if strings.Contains(c.Text, "reply in thread") {
			t.Errorf("chunk text carries the link as words: %q", c.Text)
		}
	}
}
