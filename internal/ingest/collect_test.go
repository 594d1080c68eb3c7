package ingest

import (
	"context"
	"sync"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// collector is a Writer that keeps what it is given, for parser tests that look at
// the parsed sources themselves (the store tests use a real memtree.Store).
type collector struct {
	mu   sync.Mutex
	srcs []memtree.SourceInput
}

func (c *collector) Ingest(_ context.Context, src memtree.SourceInput) (memtree.IngestStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.srcs = append(c.srcs, src)
	return memtree.IngestStats{NewChunks: len(src.Messages)}, nil
}

func (c *collector) byID(id string) *memtree.SourceInput {
	for i := range c.srcs {
		if c.srcs[i].SourceID == id {
			return &c.srcs[i]
		}
	}
	return nil
}
