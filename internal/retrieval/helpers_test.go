package retrieval_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/memtree/memtreetest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The ranking is tested through the store that implements its interface
// (internal/memtree), on real SQLite files: these are the helpers.

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// openEmpty opens a new store in a temporary workspace, closed when the test ends.
func openEmpty(t *testing.T) (*memtree.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "memory_tree", "chunks.db")
	st, err := memtree.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// openFixture is openEmpty holding a mail thread, a chat channel and a document.
func openFixture(t *testing.T) (*memtree.Store, string) {
	t.Helper()
	st, path := openEmpty(t)
	for _, src := range fixtureSources() {
		if _, err := st.Ingest(context.Background(), src); err != nil {
			t.Fatalf("Ingest %s: %v", src.SourceID, err)
		}
	}
	return st, path
}

// fixtureSources is memtreetest.Sources: a mail thread, a chat channel and a document.
func fixtureSources() []memtree.SourceInput { return memtreetest.Sources() }

func refsOf(hits []abi.ChunkHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.SourceRefs...)
	}
	return out
}
