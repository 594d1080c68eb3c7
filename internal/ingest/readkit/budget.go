package readkit

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Budget is the pipeline's bound on sources in flight (see inflightBytes).
type Budget struct {
	mu      sync.Mutex
	cond    *sync.Cond
	used    int64
	n       int
	waiters int
	limit   int64
	// Starved wakes the writer when a source waits for room, so that it commits the
	// open batch now instead of when the batch's time is up.
	Starved chan struct{}
}

func NewBudget(limit int64) *Budget {
	b := &Budget{limit: limit, Starved: make(chan struct{}, 1)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *Budget) Acquire(size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.n >= 2 && b.used+size > b.limit {
		select {
		case b.Starved <- struct{}{}:
		default:
		}
		b.waiters++
		b.cond.Wait()
		b.waiters--
	}
	b.used += size
	b.n++
}

func (b *Budget) Release(size int64) {
	b.mu.Lock()
	b.used -= size
	b.n--
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Waiting reports whether a source waits for room.
func (b *Budget) Waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters > 0
}

// RunTimes says where a run's time went. Each figure is the time spent in one
// stage, summed over the goroutines that run it; stages overlap (reading and
// parsing, preparing and writing run at the same time), so they add up to more than
// the run's wall time when they overlap well.
type RunTimes struct {
	mu sync.Mutex
	// read: reading and parsing the input (readers, outside parse and clean);
	// parse: parsing mail messages (MIME, headers, charsets, HTML; across workers);
	// clean: reply and signature cleaning inside parse; thread: threading mail;
	// blocked: the readers waiting for room in the write pipeline;
	// chunk: chunking with entity extraction; summaries: summary trees;
	// optimize: compacting the full-text index at the end.
	Read, Parse, Clean, Thread, Blocked, Chunk, Summaries, Optimize time.Duration
	batch                                                           memtree.BatchTimes
}

func (t *RunTimes) Add(d *time.Duration, x time.Duration) {
	t.mu.Lock()
	*d += x
	t.mu.Unlock()
}

func (t *RunTimes) SetBatch(b memtree.BatchTimes) {
	t.mu.Lock()
	t.batch = b
	t.mu.Unlock()
}

// Line renders the times as one line.
func (t *RunTimes) Line(wall time.Duration) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	parts := []string{
		"wall " + s(wall),
		"read " + s(t.Read),
		"parse " + s(t.Parse) + " (of which clean " + s(t.Clean) + ")",
		"thread " + s(t.Thread),
		"waiting for the writer " + s(t.Blocked),
		"chunk+entities " + s(t.Chunk),
		"summaries " + s(t.Summaries),
		"rows " + s(t.batch.Rows-t.batch.Merge),
		"merge " + s(t.batch.Merge),
		"entities " + s(t.batch.Entities),
		"FTS " + s(t.batch.FTS),
		"commit " + s(t.batch.Commit),
		"optimize " + s(t.Optimize),
	}
	return "ingest: where the time went: " + strings.Join(parts, ", ")
}
