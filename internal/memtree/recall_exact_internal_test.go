package memtree

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openhuman/openhuman-core/internal/retrieval"
)

// TestRecallExactList: when the store knows every query word, recall ranks the
// chunks that say all of them as a list of their own (so a rare phrase keeps a place
// however much its expansions match); with a word the store never says there is none.
func TestRecallExactList(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t)
	doc := func(name, text string) SourceInput {
		return SourceInput{Kind: KindDocument, SourceID: "doc:" + name, Title: name,
			Messages: []MessageInput{{Ref: "docs/" + name, TimestampMS: 1767261600000, Text: text}}}
	}
	for _, src := range []SourceInput{
		doc("oncall.md", "Rotation handover: read the runbook before your first shift."),
		doc("garden.md", "Crop rotation keeps the beds healthy."),
		doc("relay.md", "The handover of the keys is on Friday."),
		doc("groceries.md", "Apples, bread, cheese and coffee."),
	} {
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	b, err := st.BeginRead(ctx)
	if err != nil || b == nil {
		t.Fatalf("begin read: %v", err)
	}
	p := retrieval.DefaultParams()
	eng := retrieval.New(p)
	exactList := func(q string) *retrieval.List {
		_, _, lists, _, _, err := eng.LexicalLists(ctx, b, q, 10)
		if err != nil {
			t.Fatalf("lexicalLists %q: %v", q, err)
		}
		for i := range lists {
			if lists[i].Name == "exact" {
				return &lists[i]
			}
		}
		return nil
	}
	l := exactList("rotation handover")
	if l == nil || len(l.Hits) != 1 || l.Hits[0].SourceRef != "docs/oncall.md" || l.Weight != 1 {
		t.Fatalf("exact list for %q = %+v, want docs/oncall.md alone with weight 1", "rotation handover", l)
	}
	if l := exactList("rotation gyroscope"); l != nil {
		t.Errorf("exact list for a query with a word the store never says = %+v, want none", l)
	}
	if l := exactList("rotation"); l != nil {
		t.Errorf("exact list for a one-word query = %+v, want none (the bm25 list ranks it)", l)
	}
}

// openTemp opens a new store in a temporary workspace, closed when the test ends.
func openTemp(t *testing.T) *Store {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "memory_tree", "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
