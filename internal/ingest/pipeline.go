package ingest

import (
	"context"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// sink is the write end of the pipeline: write stores one prepared source (maybe in
// an open batch), flush commits what write left open, due says a flush is wanted now
// and wait how long the open batch may wait for another source.
type sink interface {
	write(p *memtree.Prepared) (memtree.IngestStats, error)
	flush() error
	due() bool
	wait() time.Duration
	pending() int
	times() memtree.BatchTimes
}

// preparedSink commits every source in its own transaction.
type preparedSink struct {
	ctx context.Context
	pw  PreparedWriter
}

func (s preparedSink) write(p *memtree.Prepared) (memtree.IngestStats, error) {
	return s.pw.IngestPrepared(s.ctx, p)
}
func (preparedSink) flush() error              { return nil }
func (preparedSink) due() bool                 { return false }
func (preparedSink) wait() time.Duration       { return 0 }
func (preparedSink) pending() int              { return 0 }
func (preparedSink) times() memtree.BatchTimes { return memtree.BatchTimes{} }

// batchSink groups sources into memtree batches.
type batchSink struct{ b *memtree.BatchWriter }

func (s batchSink) write(p *memtree.Prepared) (memtree.IngestStats, error) { return s.b.Write(p) }
func (s batchSink) flush() error                                           { return s.b.Flush() }
func (s batchSink) due() bool                                              { return s.b.Due() }
func (s batchSink) wait() time.Duration                                    { return s.b.Remaining() }
func (s batchSink) pending() int                                           { return s.b.Pending() }
func (s batchSink) times() memtree.BatchTimes                              { return s.b.Times() }

// sourceBytes is what budget counts of a source: its messages' text and headers.
func sourceBytes(src *memtree.SourceInput) int64 {
	n := int64(len(src.Title) + 256)
	for i := range src.Messages {
		m := &src.Messages[i]
		n += int64(len(m.Text) + len(m.Subject) + len(m.Author) + len(m.AuthorAddr) + len(m.Ref) + 64)
		for _, a := range m.To {
			n += int64(len(a))
		}
		for _, a := range m.Cc {
			n += int64(len(a))
		}
	}
	return n
}

// job is one source on its way through the pipeline.
type job struct {
	src  memtree.SourceInput
	size int64
}

// startPipeline runs preparation and writing on two goroutines fed by write, so
// parsing, preparing and committing overlap. The writer records a source's outcome
// once its batch commits (a failed commit fails every source of the batch); it commits
// a batch when it is due, when no source arrives before the batch's time is up, when
// a source waits for room in the budget, and at the end of the run (also a cancelled
// one: the whole sources written so far stay).
func (r *runner) startPipeline(ctx context.Context, out sink) {
	type prepared struct {
		job
		p   *memtree.Prepared
		err error
	}
	type written struct {
		job
		st memtree.IngestStats
	}
	r.bud = readkit.NewBudget(inflightBytes)
	r.jobs = make(chan job, 16)
	r.done = make(chan struct{})
	ready := make(chan prepared, 16)
	go func() {
		defer close(ready)
		for j := range r.jobs {
			if ctx.Err() != nil {
				r.bud.Release(j.size)
				continue
			}
			p, err := memtree.Prepare(j.src)
			if p != nil {
				r.times.Add(&r.times.Chunk, p.Chunking)
				r.times.Add(&r.times.Summaries, p.Summaries)
			}
			ready <- prepared{job: j, p: p, err: err}
		}
	}()
	go func() {
		defer close(r.done)
		defer func() { r.times.SetBatch(out.times()) }()
		var batch []written
		flush := func() {
			err := out.flush()
			r.rep.Mu.Lock()
			for _, w := range batch {
				r.record(ctx, w.src, w.st, err)
			}
			r.rep.Mu.Unlock()
			for _, w := range batch {
				r.bud.Release(w.size)
			}
			batch = batch[:0]
		}
		defer flush()
		var timer *time.Timer
		for {
			var expired <-chan time.Time
			if out.pending() > 0 {
				if timer == nil {
					timer = time.NewTimer(out.wait())
				} else {
					timer.Reset(out.wait())
				}
				expired = timer.C
			}
			var x prepared
			var ok bool
			select {
			case x, ok = <-ready:
			case <-expired:
				flush()
				continue
			case <-r.bud.Starved:
				flush()
				continue
			}
			if !ok {
				return
			}
			if ctx.Err() != nil {
				r.bud.Release(x.size)
				continue
			}
			var st memtree.IngestStats
			err := x.err
			if err == nil {
				st, err = out.write(x.p)
			}
			if err != nil || out.pending() == 0 {
				// A failed source is final now; so is a source its own transaction
				// committed.
				r.rep.Mu.Lock()
				r.record(ctx, x.src, st, err)
				r.rep.Mu.Unlock()
				r.bud.Release(x.size)
			} else {
				batch = append(batch, written{x.job, st})
			}
			if out.due() || r.bud.Waiting() {
				flush()
			}
		}
	}()
}

// stopPipeline waits for every queued source to be written (idempotent).
func (r *runner) stopPipeline() {
	if r.jobs == nil {
		return
	}
	close(r.jobs)
	<-r.done
	r.jobs = nil
}

// write stores one source (through the pipeline when one runs) and adds its stats.
func (r *runner) write(ctx context.Context, src memtree.SourceInput) {
	if r.jobs != nil {
		start := time.Now()
		size := sourceBytes(&src)
		r.bud.Acquire(size)
		r.jobs <- job{src: src, size: size}
		r.times.Add(&r.times.Blocked, time.Since(start))
		return
	}
	st, err := r.w.Ingest(ctx, src)
	r.rep.Mu.Lock()
	defer r.rep.Mu.Unlock()
	r.record(ctx, src, st, err)
}

// inflightBytes bounds the message text of the sources between write and their
// commit (queued, being prepared, prepared and waiting, written in the open batch):
// a prepared source holds several times its text, and chat sources (a month of a
// busy channel) can be large, so the pipeline holds a bounded amount of them
// whatever the input's size. Two sources are always admitted, however large, so
// that preparing one overlaps writing the other.
var inflightBytes int64 = 8 << 20
