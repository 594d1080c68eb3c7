// Package ingest reads mail, chat and document exports, cleans them, and writes
// them into the memory tree.
//
// Sources are written in batches (memtree.BatchWriter: up to 256 sources or 250 ms
// per transaction). A source that fails is rolled back alone
// and reported; a killed ingest loses at most the open batch and never leaves part of
// a source (WAL, synchronous=NORMAL); a cancelled one commits the sources written so
// far. Each source's outcome is recorded once its batch commits.
//
// Formats are detected per file or folder (Options.Kind forces one): mbox and .eml
// mail (threaded by References/In-Reply-To), Slack export folders, generic chat
// batch JSON, the reference's JSON input shapes (ChatBatch, EmailThread,
// DocumentInput), and Markdown / plain-text documents. A document's source_ref is
// its path relative to the ingest root: the folder given on the command line, or
// the folder holding a file given directly (so ingesting <corpus> records
// "docs/projects/x.md", ingesting <corpus>/docs records "projects/x.md").
//
// Bad input never stops a run: each malformed file (or message) yields one
// FileError naming the file and, where it applies, the message number or byte
// offset; everything else is still ingested.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Writer stores one parsed source; *memtree.Store implements it.
type Writer interface {
	Ingest(ctx context.Context, src memtree.SourceInput) (memtree.IngestStats, error)
}

// PreparedWriter is a Writer that splits a source's CPU-bound preparation
// (memtree.Prepare: chunking, entities, summaries) from its write; Run then prepares
// the next sources on another goroutine while the writer commits, each source in its
// own transaction. *memtree.Store implements it.
type PreparedWriter interface {
	Writer
	IngestPrepared(ctx context.Context, p *memtree.Prepared) (memtree.IngestStats, error)
}

// BatchingWriter is a Writer that groups prepared sources into batch transactions
// (memtree.BatchWriter: a savepoint per source, so one failing source rolls back
// alone); Run prefers it over PreparedWriter. *memtree.Store implements it.
type BatchingWriter interface {
	Writer
	NewBatchWriter(ctx context.Context) (*memtree.BatchWriter, error)
}

// Optimizer is a Writer that compacts its indexes once after a run that changed
// something; *memtree.Store implements it.
type Optimizer interface {
	Optimize(ctx context.Context) error
}

// Kinds accepted by Options.Kind.
const (
	KindAuto      = ""
	KindMbox      = "mbox"
	KindEML       = "eml"
	KindSlack     = "slack"
	KindChat      = "chat"
	KindDocs      = "docs"
	KindReference = "reference"
)

// Kinds lists the values Options.Kind accepts (besides "" for detection).
var Kinds = []string{KindMbox, KindEML, KindSlack, KindChat, KindDocs, KindReference}

// Options tune a Run.
type Options struct {
	Kind     string    // "" = detect; "mbox", "eml", "slack", "chat", "docs", "reference" to force
	Progress io.Writer // progress bar target (only used when it is a terminal); nil = none
	Logger   *slog.Logger
}

// FileError is one input that could not be (fully) ingested.
type FileError struct {
	Path  string // the file (or folder) as walked
	Where string // "message 12 (byte 4096)", "byte 4096", "line 3"; "" when the whole file
	Err   error
}

// Error renders "path: where: err".
func (e FileError) Error() string {
	if e.Where == "" {
		return e.Path + ": " + e.Err.Error()
	}
	return e.Path + ": " + e.Where + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e FileError) Unwrap() error { return e.Err }

// Summary reports what a Run did.
type Summary struct {
	Files, Sources, ChunksNew, ChunksUnchanged, ChunksRemoved, Entities, Failures int
	Seconds                                                                       float64
	Errors                                                                        []FileError
	// Skipped counts files of no known format (and symbolic links), which are not
	// failures; SkippedBy counts them by reason and Skips names each.
	Skipped   int
	SkippedBy map[string]int
	Skips     []FileError
	// Warnings counts Notes.
	Warnings int
	// Notes are repairs and non-failures worth telling (unknown charset decoded as
	// Latin-1, UTF-16 converted, empty file, ...).
	Notes []FileError
}

// Line is the one-line summary printed after every ingest.
func (s *Summary) Line() string {
	return fmt.Sprintf("ingest: %d files, %d sources, %d chunks new, %d unchanged, %d removed, %d entities, %d failures, %.1f s",
		s.Files, s.Sources, s.ChunksNew, s.ChunksUnchanged, s.ChunksRemoved, s.Entities, s.Failures, s.Seconds)
}

// task is one file (or Slack export folder) to read.
type task struct {
	path string // as walked
	rel  string // slash path relative to the ingest root
	kind string // resolved kind: mbox, eml, slack, chatjson (auto JSON), chat, reference, docs
}

type runner struct {
	w     Writer
	mu    sync.Mutex // guards sum while the write pipeline runs
	jobs  chan memtree.SourceInput
	done  chan struct{}
	opt   Options
	log   *slog.Logger
	sum   *Summary
	mails []*mailMsg
	seq   int
}

// maxWalkDepth bounds folder nesting.
const maxWalkDepth = 64

// Run ingests every path (files or folders) into w. It returns the summary; the
// error is non-nil only when the run itself could not proceed (a bad Kind, a
// cancelled context) — per-input problems are in Summary.Errors.
func Run(ctx context.Context, w Writer, paths []string, opt Options) (*Summary, error) {
	start := time.Now()
	r := &runner{w: w, opt: opt, log: opt.Logger, sum: &Summary{}}
	if r.log == nil {
		r.log = slog.Default()
	}
	defer func() { r.sum.Seconds = time.Since(start).Seconds() }()
	if bw, ok := w.(BatchingWriter); ok {
		b, err := bw.NewBatchWriter(ctx)
		if err != nil {
			return r.sum, fmt.Errorf("ingest: %w", err)
		}
		r.startPipeline(ctx, batchSink{b})
		defer r.stopPipeline()
	} else if pw, ok := w.(PreparedWriter); ok {
		r.startPipeline(ctx, preparedSink{ctx, pw})
		defer r.stopPipeline()
	}
	if opt.Kind != KindAuto && !contains(Kinds, opt.Kind) {
		return r.sum, fmt.Errorf("ingest: unknown kind %q: use one of %s, or leave it empty to detect", opt.Kind, strings.Join(Kinds, ", "))
	}
	if len(paths) == 0 {
		return r.sum, errors.New("ingest: no paths given: name mail, chat or document files or folders to ingest")
	}
	var tasks []task
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			r.fail(FileError{Path: p, Err: fmt.Errorf("cannot read: %w", err)})
			continue
		}
		if st.IsDir() {
			tasks = r.plan(p, p, 0, tasks)
			continue
		}
		if k := r.classify(p); k != "" {
			tasks = append(tasks, task{path: p, rel: filepath.ToSlash(filepath.Base(p)), kind: k})
		} else {
			r.skip(p, "not a known mail, chat or document format (use --kind to force one)")
		}
	}
	var bar *progressbar.ProgressBar
	if f, ok := opt.Progress.(*os.File); ok && term.IsTerminal(int(f.Fd())) && len(tasks) > 0 {
		bar = progressbar.NewOptions(len(tasks)+1, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("ingest"),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30))
	}
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return r.sum, fmt.Errorf("ingest interrupted after %d sources: %w", r.sources(), err)
		}
		r.runTask(ctx, t)
		if bar != nil {
			_ = bar.Add(1)
		}
	}
	for _, src := range threadMails(r.mails) {
		if err := ctx.Err(); err != nil {
			return r.sum, fmt.Errorf("ingest interrupted after %d sources: %w", r.sources(), err)
		}
		r.write(ctx, src)
	}
	r.stopPipeline()
	if o, ok := w.(Optimizer); ok && ctx.Err() == nil && r.sum.ChunksNew+r.sum.ChunksRemoved > 0 {
		if err := o.Optimize(ctx); err != nil {
			// Every source is stored; only query speed suffers until the next run.
			r.log.Warn("ingest: could not compact the full-text index", "err", err)
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err := ctx.Err(); err != nil {
		return r.sum, fmt.Errorf("ingest interrupted after %d sources: %w", r.sources(), err)
	}
	return r.sum, nil
}

// sink is the write end of the pipeline: write stores one prepared source (maybe in
// an open batch), flush commits what write left open, due says a flush is wanted now
// and wait how long the open batch may wait for another source.
type sink interface {
	write(p *memtree.Prepared) (memtree.IngestStats, error)
	flush() error
	due() bool
	wait() time.Duration
	pending() int
}

// preparedSink commits every source in its own transaction.
type preparedSink struct {
	ctx context.Context
	pw  PreparedWriter
}

func (s preparedSink) write(p *memtree.Prepared) (memtree.IngestStats, error) {
	return s.pw.IngestPrepared(s.ctx, p)
}
func (preparedSink) flush() error        { return nil }
func (preparedSink) due() bool           { return false }
func (preparedSink) wait() time.Duration { return 0 }
func (preparedSink) pending() int        { return 0 }

// batchSink groups sources into memtree batches.
type batchSink struct{ b *memtree.BatchWriter }

func (s batchSink) write(p *memtree.Prepared) (memtree.IngestStats, error) { return s.b.Write(p) }
func (s batchSink) flush() error                                           { return s.b.Flush() }
func (s batchSink) due() bool                                              { return s.b.Due() }
func (s batchSink) wait() time.Duration                                    { return s.b.Remaining() }
func (s batchSink) pending() int                                           { return s.b.Pending() }

// startPipeline runs preparation and writing on two goroutines fed by write, so
// parsing, preparing and committing overlap. The writer records a source's outcome
// once its batch commits (a failed commit fails every source of the batch); it commits
// a batch when it is due, when no source arrives before the batch's time is up, and at
// the end of the run (also a cancelled one: the whole sources written so far stay).
func (r *runner) startPipeline(ctx context.Context, out sink) {
	type prepared struct {
		src memtree.SourceInput
		p   *memtree.Prepared
		err error
	}
	type written struct {
		src memtree.SourceInput
		st  memtree.IngestStats
	}
	r.jobs = make(chan memtree.SourceInput, 16)
	r.done = make(chan struct{})
	ready := make(chan prepared, 16)
	go func() {
		defer close(ready)
		for src := range r.jobs {
			if ctx.Err() != nil {
				continue
			}
			p, err := memtree.Prepare(src)
			ready <- prepared{src: src, p: p, err: err}
		}
	}()
	go func() {
		defer close(r.done)
		var batch []written
		flush := func() {
			err := out.flush()
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, w := range batch {
				r.record(ctx, w.src, w.st, err)
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
			}
			if !ok {
				return
			}
			if ctx.Err() != nil {
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
				r.mu.Lock()
				r.record(ctx, x.src, st, err)
				r.mu.Unlock()
			} else {
				batch = append(batch, written{x.src, st})
			}
			if out.due() {
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

func (r *runner) sources() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sum.Sources
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// plan walks dir (never following symbolic links, skipping hidden entries) and
// appends the files to read.
func (r *runner) plan(root, dir string, depth int, tasks []task) []task {
	if depth > maxWalkDepth {
		r.fail(FileError{Path: dir, Err: fmt.Errorf("folders nested deeper than %d levels: not descended", maxWalkDepth)})
		return tasks
	}
	if (r.opt.Kind == KindAuto || r.opt.Kind == KindSlack) && isSlackExport(dir) {
		return append(tasks, task{path: dir, rel: relTo(root, dir), kind: KindSlack})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		r.fail(FileError{Path: dir, Err: fmt.Errorf("cannot list folder: %w", err)})
		return tasks
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".") {
			continue
		}
		switch {
		case e.Type()&os.ModeSymlink != 0:
			r.skip(p, "symbolic link: not followed")
		case e.IsDir():
			tasks = r.plan(root, p, depth+1, tasks)
		case e.Type().IsRegular():
			if k := r.classify(p); k != "" {
				tasks = append(tasks, task{path: p, rel: relTo(root, p), kind: k})
			} else {
				r.skip(p, "not a known mail, chat or document format")
			}
		default:
			r.skip(p, "not a regular file")
		}
	}
	return tasks
}

func relTo(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

// classify resolves the kind of one file ("" = unknown, skipped).
func (r *runner) classify(p string) string {
	ext := strings.ToLower(filepath.Ext(p))
	switch r.opt.Kind {
	case KindMbox, KindEML, KindDocs, KindReference:
		return r.opt.Kind
	case KindChat:
		return KindChat
	case KindSlack:
		return "" // Slack exports are folders
	}
	switch ext {
	case ".mbox", ".mbx":
		return KindMbox
	case ".eml":
		return KindEML
	case ".json":
		return "json"
	case ".md", ".markdown", ".mdown", ".mkd", ".txt", ".text":
		return KindDocs
	case "":
		if f, err := os.Open(p); err == nil {
			head := make([]byte, 5)
			n, _ := io.ReadFull(f, head)
			f.Close()
			if string(head[:n]) == "From " {
				return KindMbox
			}
		}
	}
	return ""
}

func (r *runner) fail(fe FileError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failLocked(fe)
}

func (r *runner) failLocked(fe FileError) {
	r.sum.Errors = append(r.sum.Errors, fe)
	r.sum.Failures++
	r.log.Debug("ingest: failed", "path", fe.Path, "where", fe.Where, "err", fe.Err)
}

func (r *runner) note(path, where, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.Notes = append(r.sum.Notes, FileError{Path: path, Where: where, Err: errors.New(msg)})
	r.log.Info("ingest: "+msg, "path", path, "where", where)
}

func (r *runner) skip(path, why string) {
	r.sum.Skipped++
	r.log.Debug("ingest: skipped", "path", path, "why", why)
}

// write stores one source (through the pipeline when one runs) and adds its stats.
func (r *runner) write(ctx context.Context, src memtree.SourceInput) {
	if r.jobs != nil {
		r.jobs <- src
		return
	}
	st, err := r.w.Ingest(ctx, src)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(ctx, src, st, err)
}

// record adds one source's outcome to the summary; r.mu must be held.
func (r *runner) record(ctx context.Context, src memtree.SourceInput, st memtree.IngestStats, err error) {
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		r.failLocked(FileError{Path: src.Origin, Where: "source " + src.SourceID, Err: fmt.Errorf("store: %w", err)})
		return
	}
	r.sum.Sources++
	r.sum.ChunksNew += st.NewChunks
	r.sum.ChunksUnchanged += st.UnchangedChunks
	r.sum.ChunksRemoved += st.RemovedChunks
	r.sum.Entities += st.Entities
}

func (r *runner) runTask(ctx context.Context, t task) {
	switch t.kind {
	case KindSlack:
		srcs, errs, files, err := readSlackExport(t.path, func(p string) string { return p })
		r.sum.Files += files
		if err != nil {
			r.fail(FileError{Path: t.path, Err: fmt.Errorf("Slack export: %w", err)})
			return
		}
		for _, fe := range errs {
			r.fail(fe)
		}
		for _, s := range srcs {
			r.write(ctx, s)
		}
	case KindMbox:
		r.sum.Files++
		r.readMboxFile(t)
	case KindEML:
		r.sum.Files++
		b, err := readFileLimited(t.path)
		if err != nil {
			r.fail(FileError{Path: t.path, Err: err})
			return
		}
		r.addMail(t.path, "", b, time.Time{}, KindEML)
	case KindDocs:
		r.sum.Files++
		r.readDoc(ctx, t)
	default: // "json", chat, reference
		r.sum.Files++
		r.readJSONInput(ctx, t)
	}
}

func (r *runner) readMboxFile(t task) {
	err := readMbox(t.path, func(m mboxMessage) error {
		where := fmt.Sprintf("message %d (byte %d)", m.num, m.offset)
		if m.err != nil {
			r.fail(FileError{Path: t.path, Where: where, Err: m.err})
			return nil
		}
		r.addMail(t.path, where, m.raw, m.envDate, KindMbox)
		return nil
	})
	switch {
	case errors.Is(err, errEmpty):
		r.note(t.path, "", "empty mbox: nothing to ingest")
	case err != nil:
		r.fail(FileError{Path: t.path, Err: err})
	}
}

// addMail parses one message and queues it for threading.
func (r *runner) addMail(path, where string, raw []byte, envDate time.Time, prov string) {
	pm, err := parseMail(raw, envDate)
	if err != nil {
		r.fail(FileError{Path: path, Where: where, Err: err})
		return
	}
	for _, n := range pm.notes {
		r.note(path, where, n)
	}
	if pm.bodyErr != nil {
		r.fail(FileError{Path: path, Where: where, Err: pm.bodyErr})
	}
	r.seq++
	pm.m.seq = r.seq
	pm.m.prov = prov
	pm.m.origin = path
	if where != "" {
		pm.m.origin = path + " " + where
	}
	r.mails = append(r.mails, pm.m)
}

func (r *runner) readDoc(ctx context.Context, t task) {
	b, err := readFileLimited(t.path)
	if err != nil {
		r.fail(FileError{Path: t.path, Err: err})
		return
	}
	tf, err := decodeTextFile(b)
	if errors.Is(err, errEmpty) {
		r.note(t.path, "", "empty file: nothing to ingest")
		return
	}
	if err != nil {
		r.fail(FileError{Path: t.path, Err: err})
		return
	}
	for _, n := range tf.notes {
		r.note(t.path, "", n)
	}
	src, err := parseDocument(tf.text, t.rel, modTime(t.path))
	if errors.Is(err, errEmpty) {
		r.note(t.path, "", "no text: nothing to ingest")
		return
	}
	if err != nil {
		r.fail(FileError{Path: t.path, Err: err})
		return
	}
	src.Origin = t.path
	r.write(ctx, *src)
}

func modTime(p string) time.Time {
	if st, err := os.Stat(p); err == nil {
		return st.ModTime().UTC()
	}
	return time.Now().UTC()
}

func (r *runner) readJSONInput(ctx context.Context, t task) {
	b, err := readFileLimited(t.path)
	if err != nil {
		r.fail(FileError{Path: t.path, Err: err})
		return
	}
	b = trimUTF8BOM(b)
	if err := checkJSON(b); err != nil {
		if errors.Is(err, errEmpty) {
			r.note(t.path, "", "empty file: nothing to ingest")
			return
		}
		r.fail(FileError{Path: t.path, Err: err})
		return
	}
	shape := "chat"
	if t.kind != KindChat {
		shape, err = jsonShape(b)
		if err != nil {
			if errors.Is(err, errUnknownJSON) && t.kind == "json" {
				r.skip(t.path, err.Error())
				r.sum.Files--
				return
			}
			r.fail(FileError{Path: t.path, Err: err})
			return
		}
	}
	var src *memtree.SourceInput
	switch shape {
	case "chat":
		src, err = parseChatBatch(b)
	case "emailthread":
		src, err = parseEmailThread(b)
	default:
		src, err = parseDocumentInput(b, t.rel, modTime(t.path))
	}
	if errors.Is(err, errEmpty) {
		r.note(t.path, "", "no messages: nothing to ingest")
		return
	}
	if err != nil {
		r.fail(FileError{Path: t.path, Err: err})
		return
	}
	src.Origin = t.path
	r.write(ctx, *src)
}
