package ingest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// budget is the pipeline's bound on sources in flight (see inflightBytes).
type budget struct {
	mu      sync.Mutex
	cond    *sync.Cond
	used    int64
	n       int
	waiters int
	limit   int64
	// starved wakes the writer when a source waits for room, so that it commits the
	// open batch now instead of when the batch's time is up.
	starved chan struct{}
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit, starved: make(chan struct{}, 1)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *budget) acquire(size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.n >= 2 && b.used+size > b.limit {
		select {
		case b.starved <- struct{}{}:
		default:
		}
		b.waiters++
		b.cond.Wait()
		b.waiters--
	}
	b.used += size
	b.n++
}

func (b *budget) release(size int64) {
	b.mu.Lock()
	b.used -= size
	b.n--
	b.mu.Unlock()
	b.cond.Broadcast()
}

// waiting reports whether a source waits for room.
func (b *budget) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters > 0
}

// runTimes says where a run's time went. Each figure is the time spent in one
// stage, summed over the goroutines that run it; stages overlap (reading and
// parsing, preparing and writing run at the same time), so they add up to more than
// the run's wall time when they overlap well.
type runTimes struct {
	mu sync.Mutex
	// read: reading and parsing the input (readers, outside parse and clean);
	// parse: parsing mail messages (MIME, headers, charsets, HTML; across workers);
	// clean: reply and signature cleaning inside parse; thread: threading mail;
	// blocked: the readers waiting for room in the write pipeline;
	// chunk: chunking with entity extraction; summaries: summary trees;
	// optimize: compacting the full-text index at the end.
	read, parse, clean, thread, blocked, chunk, summaries, optimize time.Duration
	batch                                                           memtree.BatchTimes
}

func (t *runTimes) add(d *time.Duration, x time.Duration) {
	t.mu.Lock()
	*d += x
	t.mu.Unlock()
}

func (t *runTimes) setBatch(b memtree.BatchTimes) {
	t.mu.Lock()
	t.batch = b
	t.mu.Unlock()
}

// line renders the times as one line.
func (t *runTimes) line(wall time.Duration) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	parts := []string{
		"wall " + s(wall),
		"read " + s(t.read),
		"parse " + s(t.parse) + " (of which clean " + s(t.clean) + ")",
		"thread " + s(t.thread),
		"waiting for the writer " + s(t.blocked),
		"chunk+entities " + s(t.chunk),
		"summaries " + s(t.summaries),
		"rows " + s(t.batch.Rows-t.batch.Merge),
		"merge " + s(t.batch.Merge),
		"entities " + s(t.batch.Entities),
		"FTS " + s(t.batch.FTS),
		"commit " + s(t.batch.Commit),
		"optimize " + s(t.optimize),
	}
	return "ingest: where the time went: " + strings.Join(parts, ", ")
}
