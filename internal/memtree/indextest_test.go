package memtree_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/retrieval/index/indextest"
)

// TestBackendConformance runs the backend contract's conformance suite over the
// SQLite backend: the fixture written through the store's own writer, read back
// through one read call.
func TestBackendConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T, srcs []indextest.Source) index.Backend {
		ctx := context.Background()
		st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		for _, s := range srcs {
			in := memtree.SourceInput{Kind: s.Kind, SourceID: s.ID, Title: s.Title, Provider: "indextest", Merge: s.Kind == memtree.KindChat}
			for _, m := range s.Messages {
				in.Messages = append(in.Messages, memtree.MessageInput{Ref: m.Ref, Author: m.Author, TimestampMS: m.Time.UnixMilli(), Text: m.Text})
			}
			if _, err := st.Ingest(ctx, in); err != nil {
				t.Fatalf("ingest %s: %v", s.ID, err)
			}
		}
		b, err := st.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
