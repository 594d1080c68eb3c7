package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// TestDocTwoRootsOneStore: p1/todo.md and p2/todo.md are two documents in the
// store, each citing its own path relative to its root, and reading both roots
// again changes nothing.
func TestDocTwoRootsOneStore(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"p1/todo.md": "# Todo one\n\nBuy #paint for [[Kitchen]].\n",
		"p2/todo.md": "# Todo two\n\nCall the plumber.\n",
	})
	st := openStore(t)
	ctx := context.Background()
	ingestRoots := func() (ids []string, stats memtree.IngestStats) {
		for _, root := range []string{"p1", "p2"} {
			out, rep := readertest.Run(t, notes.DocsReader{}, filepath.Join(dir, root, "todo.md"))
			if rep.Sum.Failures+rep.Sum.Warnings != 0 || len(out.Sources) != 1 {
				t.Fatalf("%s: %d sources, report %+v", root, len(out.Sources), rep.Sum)
			}
			s, err := st.Ingest(ctx, out.Sources[0])
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, out.Sources[0].SourceID)
			stats.NewChunks += s.NewChunks
			stats.UnchangedChunks += s.UnchangedChunks
			stats.RemovedChunks += s.RemovedChunks
		}
		return ids, stats
	}
	ids, first := ingestRoots()
	if ids[0] == ids[1] {
		t.Fatalf("both roots gave source id %q", ids[0])
	}
	for i, want := range []string{"Todo one", "Todo two"} {
		cs := sourceChunks(t, st, ids[i])
		if len(cs) != 1 || cs[0].SourceRef != "todo.md" || !strings.Contains(cs[0].Text, want) {
			t.Fatalf("source %s: chunks %+v", ids[i], cs)
		}
		if i == 0 && (!slices.Contains(cs[0].Entities, "topic:kitchen") || !slices.Contains(cs[0].Entities, "hashtag:paint")) {
			t.Errorf("wikilink and tag entities: %v", cs[0].Entities)
		}
	}
	ids2, again := ingestRoots()
	if !slices.Equal(ids, ids2) || first.NewChunks != 2 || again.NewChunks != 0 || again.RemovedChunks != 0 || again.UnchangedChunks != 2 {
		t.Errorf("re-reading the roots: ids %v then %v, first %+v, again %+v", ids, ids2, first, again)
	}
}

// TestUnknownChatShapeNamed: a text file whose lines share a timestamp-like
// prefix that no chat reader knows is stored as one document with a warning
// naming the shape; prose is not warned about.
func TestUnknownChatShapeNamed(t *testing.T) {
	var log strings.Builder
	for i := range 8 {
		fmt.Fprintf(&log, "%02d.%02d.2013 @ 19h%02d | Ann: message %d\n", i+1, 8, i, i)
	}
	dir := readertest.WriteFiles(t, map[string]string{
		"chat.txt":  log.String(),
		"prose.txt": "A plain note.\nIt has lines: some with colons.\nNo timestamps at all.\n1. a list\n2. of things\n",
	})
	c, sum := runOn(t, Options{}, dir)
	if len(c.srcs) != 2 {
		t.Fatalf("%d sources", len(c.srcs))
	}
	var warned []string
	for _, n := range sum.Notes {
		if strings.Contains(n.Err.Error(), "start alike") {
			warned = append(warned, filepath.Base(n.Path)+": "+n.Err.Error())
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "chat.txt: 8 of the first 8 lines") || !strings.Contains(warned[0], `"99.99.9999 @ 99a99 | a: "`) {
		t.Errorf("warnings: %v", warned)
	}
}
