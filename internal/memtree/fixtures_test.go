package memtree_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/memtree/memtreetest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// fixtureSources is memtreetest.Sources: a mail thread, a chat channel and a document.
func fixtureSources() []memtree.SourceInput { return memtreetest.Sources() }

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

func refsOf(hits []abi.ChunkHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.SourceRefs...)
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func hasPrefixAny(s string, ps ...string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func abiTop(kind string, k int) abi.EntitiesTopRequest {
	return abi.EntitiesTopRequest{Kind: kind, K: k}
}
