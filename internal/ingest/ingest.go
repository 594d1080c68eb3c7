// Package ingest reads mail, chat and document exports, cleans them, and writes
// them into the memory tree.
//
// Where things are: the readers live in one package per format family — mail
// (mbox, eml, emlx, Maildir, parsing, cleaning, threading), chat (Slack, Telegram,
// WhatsApp, Discord, Signal and the other chat exports), notes (documents, notes
// apps, Evernote, Notion CSV, address books), archive (the file system every
// reader opens files through, which reads a zip archive's members in place like
// files) — over readkit, which they all import and which imports none of them
// but archive (the reader contract, the report, text decoding, JSON helpers).
// This package holds what runs them: Run, the walk and format detection
// (registry.go lists the readers in the order they are asked), the write
// pipeline, the reference JSON shapes (jsoninputs.go) and the watch loop's hooks.
//
// Shape: each format has one reader (readkit.Reader) that says whether it
// recognises a file or folder and streams what it reads to an output. The runner
// only walks the paths, detects, hands each input to its reader, batches the
// writes and reports. Mail messages are parsed on every
// core (the mail family's parse pool) and handed in file order to a threader that spills them to an
// unlinked temporary file and keeps 48 bytes of threading keys a message in memory
// (plus its Message-ID's node in a hashed union-find), then writes one source per
// thread once every file is read (threads span files: a Maildir holds one message
// per file).
//
// Memory is bounded whatever the input's size, but for the threader's keys: the
// parse pool holds at most 8 MiB of raw mail, chat coalescing 16 MiB of messages,
// the write pipeline 8 MiB of source text in flight (two sources always, so the
// largest source, a busy conversation's month, sets the peak), the store its page
// cache. With a debug logger (ingest --verbose) Run logs one line saying where the
// time went.
//
// Sources are written in batches (memtree.BatchWriter: up to 256 sources or 250 ms
// per transaction). A source that fails is rolled back alone and reported; a
// killed ingest loses at most the open batch and never leaves part of a source
// (WAL, synchronous=NORMAL); a cancelled one commits the sources written so far.
// Each source's outcome is recorded once its batch commits.
//
// Chat sources are one per conversation per month with memtree's Merge, so a later
// export adds to an earlier one. A document's source id is its absolute path; its
// source_ref is its path relative to the ingest root (the folder given on the
// command line, or the folder holding a file given directly).
//
// Bad input never stops a run: each malformed file (or message) yields one
// FileError naming the file and, where it applies, the message number or byte
// offset, and saying what was lost; repairs and guesses are warnings; every path
// given that yields nothing is named in Summary.Unread with why.
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
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/mail"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
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

// Kinds lists the values Options.Kind accepts (besides "" for detection).
var Kinds = []string{KindMbox, KindEML, KindEmlx, KindMaildir, KindSlack, KindChat, KindTelegram, KindWhatsApp, KindDiscord, KindMessenger, KindGoogleChat, KindDocs, KindEnex, KindContacts, KindNotionCSV, KindIRC, KindIMessage, KindLINE, KindMatrix, KindSignal, KindHangouts, KindZulip, KindTeams, KindMattermost, KindKeep, KindDayOne, KindRoam, KindChatLines, KindAppleNotes, KindReference}

// Options tune a Run.
type Options struct {
	Kind     string    // "" = detect; "mbox", "eml", "slack", "chat", "docs", "reference" to force
	Progress io.Writer // progress bar target (only used when it is a terminal); nil = none
	Logger   *slog.Logger
	// Root, when set, is the ingest root of the paths given that are files under
	// it (source_ref is relative to it), instead of the folder holding each: the
	// watch loop reads one changed file of a watched folder as the folder's ingest did.
	Root string
	// Report keeps every file handed to a reader, with its format and yield, for
	// Summary.Outcomes (ingest --report); off, a run keeps only what went wrong.
	Report bool
	// Written, when set, is told the id of every source the run stored (unchanged
	// ones too), as its write returns; a caller that re-reads a whole folder learns
	// which of the sources it held before were not written again. Calls are
	// serialised.
	Written func(sourceID string)
}

// task is one file or folder handed to a reader.
type task struct {
	in    readkit.Input
	r     readkit.Reader
	arg   int // index of the path given to Run it came from
	files int // files it holds (1 for a file), for the progress bar
	dir   bool
}

type runner struct {
	w     Writer
	opt   Options
	rep   *readkit.Report
	sum   *Summary
	jobs  chan job
	done  chan struct{}
	bud   *readkit.Budget
	times *readkit.RunTimes
	thr   mail.Threader
	order []readkit.Reader
	// yield counts, per path given to Run, the sources and messages read from it.
	yield []int
	arg   int
	cur   int // index into sum.ReadFiles of the file being read (-1 when not kept)
	// pending holds Merge sources gathered by coalesce, by source id.
	pending      map[string]*pendingSource
	pendingOrder []string
	pendingBytes int
	touch        int // counts coalesce calls (pendingSource.touch)
	// mounted lists the archives this run mounted (package archive), unmounted at its end.
	mounted []string
	// contactFiles holds the address books read, written at the end of the run.
	contactFiles []contactFile
}

// Run ingests every path (files or folders) into w. It returns the summary; the
// error is non-nil only when the run itself could not proceed (a bad Kind, a
// cancelled context) — per-input problems are in Summary.Errors.
//
// The runner walks the paths, detects each file's or folder's format (readers()
// lists them in the order they are asked), and hands it to its reader, which
// streams sources to the write pipeline. Mail messages are threaded across all the
// files of the run before they are written (see threader).
func Run(ctx context.Context, w Writer, paths []string, opt Options) (*Summary, error) {
	start := time.Now()
	rep := readkit.NewReport(opt.Logger)
	r := &runner{w: w, opt: opt, rep: rep, sum: rep.Sum, order: readers(), times: rep.Times, cur: -1}
	defer func() { r.sum.Seconds = time.Since(start).Seconds() }()
	defer func() {
		for _, p := range r.mounted {
			archive.Unmount(p)
		}
	}()
	defer r.thr.Close()
	if opt.Kind != KindAuto && r.forced() == nil {
		return r.sum, fmt.Errorf("ingest: unknown kind %q: use one of %s, or leave it empty to detect", opt.Kind, strings.Join(Kinds, ", "))
	}
	if len(paths) == 0 {
		return r.sum, errors.New("ingest: no paths given: name mail, chat or document files or folders to ingest")
	}
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
	r.yield = make([]int, len(paths))
	var tasks []task
	fails := make([]int, len(paths)) // failures per path given
	for i, p := range paths {
		before := r.failures()
		st, err := os.Stat(p)
		if err != nil {
			rep.Fail(FileError{Path: p, Err: fmt.Errorf("cannot read: %w", err)})
			continue
		}
		if st.IsDir() {
			tasks = r.plan(i, p, p, 0, tasks)
		} else if !st.Mode().IsRegular() {
			// A FIFO, device or socket named directly: opening a FIFO blocks until
			// someone writes, and a device never ends. Named, as inside a folder.
			rep.Skip(p, readkit.ReasonNotRegular)
		} else {
			tasks = r.planFile(i, fileRoot(opt.Root, p), p, 0, tasks)
		}
		fails[i] += r.failures() - before
	}
	files := 0
	for _, t := range tasks {
		files += t.files
	}
	var bar *progressbar.ProgressBar
	if f, ok := opt.Progress.(*os.File); ok && term.IsTerminal(int(f.Fd())) && files > 0 {
		bar = progressbar.NewOptions(files, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("ingest: files"),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30))
	}
	for _, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		before := r.failures()
		r.arg = t.arg
		if !t.dir {
			rep.File() // a folder reader counts the files it reads
		}
		r.cur = -1
		if opt.Report {
			r.sum.ReadFiles = append(r.sum.ReadFiles, readkit.FileRead{Path: t.in.Path, Kind: t.r.Kind()})
			r.cur = len(r.sum.ReadFiles) - 1
		}
		t0, thr0, blk0 := time.Now(), r.times.Thread, r.times.Blocked
		t.r.Read(ctx, t.in, r, rep)
		r.times.Add(&r.times.Read, time.Since(t0)-(r.times.Thread-thr0)-(r.times.Blocked-blk0))
		fails[t.arg] += r.failures() - before
		if bar != nil {
			_ = bar.Add(t.files)
		}
	}
	r.cur = -1
	if bar != nil {
		_ = bar.Clear()
	}
	if ctx.Err() == nil {
		r.flushPending(ctx)
		r.writeThreads(ctx)
	}
	r.stopPipeline()
	if ctx.Err() == nil {
		r.writeContacts(ctx)
	}
	if o, ok := w.(Optimizer); ok && ctx.Err() == nil && r.sum.ChunksNew+r.sum.ChunksRemoved > 0 {
		t0 := time.Now()
		if err := o.Optimize(ctx); err != nil {
			// Every source is stored; only query speed suffers until the next run.
			r.rep.Log.Warn("ingest: could not compact the full-text index", "err", err)
		}
		r.times.Optimize = time.Since(t0)
	}
	r.rep.Log.Debug(r.times.Line(time.Since(start)))
	for i, p := range paths {
		if r.yield[i] > 0 || fails[i] > 0 || ctx.Err() != nil {
			continue
		}
		r.sum.Unread = append(r.sum.Unread, FileError{Path: p, Err: errors.New(r.why(p, tasks, i))})
	}
	if err := ctx.Err(); err != nil {
		r.sum.Interrupted = true
		return r.sum, fmt.Errorf("ingest interrupted after %d sources: %w", r.sum.Sources, err)
	}
	return r.sum, nil
}

// why says why path (the i-th given to Run) yielded nothing.
func (r *runner) why(p string, tasks []task, i int) string {
	n := 0
	for _, t := range tasks {
		if t.arg == i {
			n++
		}
	}
	for _, fe := range r.sum.Errors {
		if fe.Path == p {
			return "nothing ingested: " + fe.Err.Error()
		}
	}
	if n > 0 {
		return fmt.Sprintf("nothing ingested: %d file(s) read, none held a message or text (see the warnings above)", n)
	}
	var reasons []string
	counts := map[string]int{}
	prefix := p + string(filepath.Separator)
	for _, s := range r.sum.Skips {
		if s.Path == p || strings.HasPrefix(s.Path, prefix) {
			if counts[s.Err.Error()] == 0 {
				reasons = append(reasons, s.Err.Error())
			}
			counts[s.Err.Error()]++
		}
	}
	if len(reasons) == 0 {
		return "nothing ingested: no files in it"
	}
	parts := make([]string, len(reasons))
	for k, why := range reasons {
		parts[k] = fmt.Sprintf("%d %s", counts[why], why)
	}
	return "nothing ingested: skipped " + strings.Join(parts, "; ")
}

// forced returns the reader Options.Kind names (nil when none or unknown).
func (r *runner) forced() readkit.Reader {
	for _, x := range r.order {
		if x.Kind() == r.opt.Kind {
			return x
		}
	}
	return nil
}

// planFile decides what becomes of one regular file, on disk or in an archive: a
// zip archive is mounted and walked as a folder (an archive inside an archive is
// refused), any other file goes to its reader or is skipped with why.
func (r *runner) planFile(arg int, root, p string, depth int, tasks []task) []task {
	head := readkit.ReadHead(p)
	if readkit.ZipDocumentExts[strings.ToLower(filepath.Ext(p))] {
		r.rep.Skip(p, readkit.UnknownReason(p, head))
		return tasks
	}
	if archive.IsZipHead(head) || archive.NestedName(p) {
		if archive.IsMember(p) {
			r.rep.Skip(p, readkit.ReasonNestedArchive)
			return tasks
		}
		if !archive.IsZipHead(head) {
			r.rep.Skip(p, readkit.UnknownReason(p, head))
			return tasks
		}
		if err := archive.Mount(p); err != nil {
			r.rep.Fail(FileError{Path: p, Err: err})
			return tasks
		}
		r.mounted = append(r.mounted, p)
		return r.plan(arg, root, p, depth+1, tasks)
	}
	if t, ok := r.detectFile(arg, root, p, head); ok {
		return append(tasks, t)
	}
	r.rep.Skip(p, readkit.UnknownReason(p, head))
	return tasks
}

// detectFile finds the reader of one file whose first bytes are head.
func (r *runner) detectFile(arg int, root, p string, head []byte) (task, bool) {
	in := readkit.Input{Path: p, Root: root, Rel: relTo(root, p)}
	if f := r.forced(); f != nil {
		in.Forced = true
		return task{in: in, r: f, arg: arg, files: 1}, true
	}
	for _, x := range r.order {
		if x.Detect(p, false, head) {
			return task{in: in, r: x, arg: arg, files: 1}, true
		}
	}
	return task{}, false
}

// plan walks dir (never following symbolic links, skipping hidden entries) and
// appends the files and folders to read.
func (r *runner) plan(arg int, root, dir string, depth int, tasks []task) []task {
	if depth > readkit.MaxWalkDepth {
		r.rep.Fail(FileError{Path: dir, Err: fmt.Errorf("folders nested deeper than %d levels: not descended", readkit.MaxWalkDepth)})
		return tasks
	}
	in := readkit.Input{Path: dir, Root: root, Rel: relTo(root, dir)}
	f := r.forced()
	for _, x := range r.order {
		if (f == nil || f == x) && x.Detect(dir, true, nil) {
			in.Forced = f != nil
			return append(tasks, task{in: in, r: x, arg: arg, files: countFiles(dir, 0), dir: true})
		}
	}
	entries, err := archive.ReadDir(dir)
	if err != nil {
		r.rep.Fail(FileError{Path: dir, Err: fmt.Errorf("cannot list folder: %w", err)})
		return tasks
	}
	archive.SortEntries(entries)
	owned := appleMailAttachments(dir)
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		if owned[name] {
			r.skipTree(p, readkit.ReasonAppleAttachment, 0)
			continue
		}
		if strings.HasPrefix(name, ".") || name == "__MACOSX" {
			r.skipHidden(p, name, e.IsDir())
			continue
		}
		switch {
		case e.Type()&os.ModeSymlink != 0:
			r.rep.Skip(p, readkit.ReasonSymlink)
		case e.IsDir():
			tasks = r.plan(arg, root, p, depth+1, tasks)
		case e.Type().IsRegular():
			tasks = r.planFile(arg, root, p, depth, tasks)
		default:
			r.rep.Skip(p, readkit.ReasonNotRegular)
		}
	}
	return tasks
}

// countFiles counts the regular files under dir (for the progress bar of a folder
// reader), at most 1<<20.
func countFiles(dir string, depth int) int {
	entries, err := archive.ReadDir(dir)
	if err != nil || depth > readkit.MaxWalkDepth {
		return 0
	}
	n := 0
	for _, e := range entries {
		switch {
		case e.Type().IsRegular():
			n++
		case e.IsDir():
			n += countFiles(filepath.Join(dir, e.Name()), depth+1)
		}
		if n >= 1<<20 {
			break
		}
	}
	return n
}

// fileRoot is the ingest root of a file given to Run: root when the file is under
// it, else the folder holding the file.
func fileRoot(root, p string) string {
	if root != "" {
		if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return root
		}
	}
	return filepath.Dir(p)
}

func relTo(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

func (r *runner) failures() int {
	r.rep.Mu.Lock()
	defer r.rep.Mu.Unlock()
	return r.sum.Failures
}

// Source is the output readers hand whole sources to: it writes them.
func (r *runner) Source(src memtree.SourceInput) {
	r.yield[r.arg]++
	if r.cur >= 0 {
		r.sum.ReadFiles[r.cur].Yield++
	}
	if src.Origin == "" {
		src.Origin = "(unknown file)"
	}
	if src.Merge {
		r.coalesce(src)
		return
	}
	r.write(context.Background(), src)
}

// coalesceBytes bounds the chat messages the runner gathers before it writes them.
var coalesceBytes = 16 << 20

// pendingSource is a Merge source coalesce gathers: its messages so far, their size
// (as coalesce counts it) and when a file last added to it.
type pendingSource struct {
	src   memtree.SourceInput
	bytes int
	touch int
}

// coalesce gathers the Merge sources of a run by source id (chat exports split
// over many files put the same month of a channel in many of them), so that a month
// is chunked and written once instead of merged with the store once per file, which
// re-chunked the whole month on the writer each time. When coalesceBytes of messages
// are waiting it writes the sources no file added to for the longest time until half
// of that is left: exports come roughly in time order, so those are the months that
// are complete, and the months still being added to stay gathered (writing them all
// at once merged every open month with the store at each flush). The rest is written
// at the end of the run.
func (r *runner) coalesce(src memtree.SourceInput) {
	if r.pending == nil {
		r.pending = map[string]*pendingSource{}
	}
	r.touch++
	p := r.pending[src.SourceID]
	if p == nil {
		p = &pendingSource{src: src}
		p.src.Messages = append([]memtree.MessageInput(nil), src.Messages...)
		r.pending[src.SourceID] = p
		r.pendingOrder = append(r.pendingOrder, src.SourceID)
	} else {
		p.src.Messages = append(p.src.Messages, src.Messages...)
	}
	p.touch = r.touch
	r.writeEarlierMonths(context.Background(), src.SourceID)
	n := 0
	for _, m := range src.Messages {
		n += len(m.Text) + len(m.Author) + len(m.Ref) + 64
	}
	p.bytes += n
	r.pendingBytes += n
	if r.pendingBytes >= coalesceBytes {
		r.evictPending(context.Background(), coalesceBytes/2)
	}
}

// writeEarlierMonths writes the gathered months of id's conversation that are
// earlier than id's month (ChatSources names a source "<conversation>/<YYYY-MM>"):
// exports come in time order, so a conversation's next month means the earlier
// ones are complete. A file that still brings messages of an earlier month merges
// them with the store as any later export does: nothing is lost, it only costs
// preparing that month again.
func (r *runner) writeEarlierMonths(ctx context.Context, id string) {
	conv, month, ok := splitMonth(id)
	if !ok {
		return
	}
	var done []string
	for _, other := range r.pendingOrder {
		if c, m, ok := splitMonth(other); ok && c == conv && m < month {
			done = append(done, other)
		}
	}
	if len(done) == 0 {
		return
	}
	for _, other := range done {
		r.writePending(ctx, r.pending[other])
	}
	r.dropWrittenFromOrder()
}

// splitMonth splits a chat source id "<conversation>/<YYYY-MM>" (see ChatSources).
func splitMonth(id string) (conv, month string, ok bool) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 || len(id)-i-1 != 7 || id[i+5] != '-' {
		return "", "", false
	}
	for _, c := range id[i+1:] {
		if c != '-' && (c < '0' || c > '9') {
			return "", "", false
		}
	}
	return id[:i], id[i+1:], true
}

// evictPending writes the gathered Merge sources least recently added to until at
// most keep bytes of messages are waiting.
func (r *runner) evictPending(ctx context.Context, keep int) {
	lru := make([]*pendingSource, 0, len(r.pending))
	for _, p := range r.pending {
		lru = append(lru, p)
	}
	sort.Slice(lru, func(i, j int) bool { return lru[i].touch < lru[j].touch })
	for _, p := range lru {
		if r.pendingBytes <= keep {
			break
		}
		r.writePending(ctx, p)
	}
	r.dropWrittenFromOrder()
}

// writePending writes a gathered Merge source and stops holding it.
func (r *runner) writePending(ctx context.Context, p *pendingSource) {
	delete(r.pending, p.src.SourceID)
	r.pendingBytes -= p.bytes
	r.write(ctx, p.src)
}

// dropWrittenFromOrder leaves in pendingOrder only the sources still gathered.
func (r *runner) dropWrittenFromOrder() {
	order := r.pendingOrder[:0]
	for _, id := range r.pendingOrder {
		if r.pending[id] != nil {
			order = append(order, id)
		}
	}
	r.pendingOrder = order
}

// flushPending writes the gathered Merge sources, in the order they first came.
func (r *runner) flushPending(ctx context.Context) {
	for _, id := range r.pendingOrder {
		r.write(ctx, r.pending[id].src)
	}
	r.pending, r.pendingOrder, r.pendingBytes = nil, nil, 0
}

// Mail is the output readers hand parsed mail to: it keeps it for threading.
func (r *runner) Mail(m *readkit.MailMessage) {
	r.yield[r.arg]++
	if r.cur >= 0 {
		r.sum.ReadFiles[r.cur].Yield++
	}
	t0 := time.Now()
	if err := r.thr.Add(m); err != nil {
		r.rep.Fail(FileError{Path: m.Origin, Err: err})
	}
	r.times.Add(&r.times.Thread, time.Since(t0))
}

// writeThreads groups the run's mail into threads and writes one source each.
func (r *runner) writeThreads(ctx context.Context) {
	t0, blk0 := time.Now(), r.times.Blocked
	defer func() { r.times.Add(&r.times.Thread, time.Since(t0)-(r.times.Blocked-blk0)) }()
	r.thr.EachThread(func(src memtree.SourceInput) bool {
		if ctx.Err() != nil {
			return false
		}
		r.write(ctx, src)
		return true
	}, func(origin, root string, err error) {
		if origin == "" {
			origin = "(mail of this run)"
		}
		r.rep.Fail(FileError{Path: origin, Where: "thread " + root, Err: err})
	})
}

// record adds one source's outcome to the summary; r.rep.mu must be held.
func (r *runner) record(ctx context.Context, src memtree.SourceInput, st memtree.IngestStats, err error) {
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		r.rep.FailLocked(FileError{Path: src.Origin, Where: "source " + src.SourceID, Err: fmt.Errorf("store: %w", err)})
		return
	}
	r.sum.Sources++
	if r.opt.Written != nil {
		r.opt.Written(src.SourceID)
	}
	r.sum.ChunksNew += st.NewChunks
	r.sum.ChunksUnchanged += st.UnchangedChunks
	r.sum.ChunksRemoved += st.RemovedChunks
	r.sum.Entities += st.Entities
}
