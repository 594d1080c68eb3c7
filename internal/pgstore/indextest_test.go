package pgstore_test

import (
	"context"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/retrieval/index/indextest"
)

// open opens a store on a fresh database of a new test cluster.
func open(t *testing.T) *pgstore.Store {
	t.Helper()
	c := pgtest.Start(t)
	st, err := pgstore.Open(context.Background(), c.Database(t, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// TestBackendConformance runs the backend contract's conformance suite over the
// PostgreSQL backend, on a real server: the fixture written through the
// backend's own writer, read back through one read call.
func TestBackendConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T, srcs []indextest.Source) index.Backend {
		ctx := context.Background()
		st := open(t)
		for _, s := range srcs {
			in := memtree.SourceInput{Kind: s.Kind, SourceID: s.ID, Title: s.Title, Provider: "indextest"}
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
