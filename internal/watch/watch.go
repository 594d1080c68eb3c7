// Package watch keeps the memory tree current with the files it was ingested
// from: it reads its roots once, then follows them with file events
// (github.com/fsnotify/fsnotify), a periodic rescan as the fallback where events
// are not delivered (network and container file systems), and the pollers it is
// given (IMAP mailboxes synced into local Maildir mirrors).
//
// What changed is found by comparing each root's files (size and modification
// time) with the state file, which is written after the store commits each
// batch: a kill at any moment leaves the old state, and the next start reads the
// files changed since, which the store turns into a no-op where it already holds
// them (an unchanged source writes nothing). Nothing is stored twice: documents
// are keyed by path, mail threads by Message-ID.
//
// How much a change reads again (classify): a document alone; for any mail file,
// every Maildir and mbox of the roots together, since mail is threaded across
// files and a thread source is written whole (a reply appended to an mbox joins a
// thread stored from an earlier part of it); for other files (chat export
// folders) their whole root. Deleted files are forgotten; a renamed document is
// read at its new path and forgotten at its old one.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Root is one watched file or folder.
type Root struct {
	Path string // absolute
	Kind string // ingest kind to force; "" detects
}

// Poller fetches from elsewhere into a watched root (an IMAP mailbox into its
// Maildir mirror). Poll runs on its own goroutine, never concurrently with
// itself; it returns when ctx ends, calling changed after each fetch that wrote
// files so that the loop reads them at once.
type Poller struct {
	Name string
	Run  func(ctx context.Context, changed func()) error
}

// Options configure a Watcher.
type Options struct {
	Store *memtree.Store
	Roots []Root
	// StatePath is the state file (see the package doc).
	StatePath string
	// Debounce is how long file events must settle before a batch is read;
	// MaxDelay bounds how long a stream of events can delay it.
	Debounce, MaxDelay time.Duration
	// Rescan is the period of the fallback rescan; 0 turns it off.
	Rescan time.Duration
	// NoEvents asks for no file events: the rescan alone finds changes (as on a
	// file system that delivers none).
	NoEvents bool
	// Pollers run beside the loop.
	Pollers []Poller
	// Log gets one line per batch and the problems of each; Progress gets the
	// progress bar of a long first pass (only when it is a terminal).
	Log      *slog.Logger
	Progress io.Writer
	// AfterBatch runs after each batch that changed the store (embedding the new
	// chunks); its error is logged.
	AfterBatch func(ctx context.Context) error
	// Ready, when set, is closed once the first pass or catch-up is done and the
	// folders are watched.
	Ready chan<- struct{}
	// Once makes Run return after the first pass or catch-up (sync uses it).
	Once bool
}

// Batch is what one batch changed.
type Batch struct {
	Added, Changed, Deleted, Renamed int
	Forgotten                        int // sources forgotten
	ChunksNew, ChunksRemoved         int
	Failures                         int
	Seconds                          float64
}

func (b Batch) empty() bool { return b.Added+b.Changed+b.Deleted == 0 }

// Watcher is the loop; make one with New and Run it.
type Watcher struct {
	opt   Options
	st    *state
	fsw   *fsnotify.Watcher
	dirs  map[string]bool // folders being watched
	log   *slog.Logger
	total Batch // every batch of this run, summed (for tests and the final line)
}

// New checks the options.
func New(opt Options) (*Watcher, error) {
	if opt.Store == nil {
		return nil, errors.New("watch: no store")
	}
	if len(opt.Roots) == 0 {
		return nil, errors.New("watch: nothing to watch: name files or folders, or add [[sources]] to config.toml")
	}
	if opt.StatePath == "" {
		return nil, errors.New("watch: no state file")
	}
	if opt.Debounce <= 0 {
		opt.Debounce = 300 * time.Millisecond
	}
	if opt.MaxDelay < opt.Debounce {
		opt.MaxDelay = max(2*time.Second, 4*opt.Debounce)
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for i, r := range opt.Roots {
		a, err := filepath.Abs(r.Path)
		if err != nil {
			return nil, fmt.Errorf("watch %s: %w", r.Path, err)
		}
		opt.Roots[i].Path = filepath.Clean(a)
	}
	return &Watcher{opt: opt, dirs: map[string]bool{}, log: opt.Log}, nil
}

// Total is what every batch of the run changed, summed.
func (w *Watcher) Total() Batch { return w.total }

// Run reads the roots (a first pass for roots the state file does not know, a
// catch-up of what changed while nothing watched for the others), then follows
// them until ctx ends. A batch being written when ctx ends is committed whole
// (ingest commits the sources written so far) and the state saved; Run then
// returns nil.
func (w *Watcher) Run(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(w.opt.StatePath), 0o700); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	release, err := lockState(w.opt.StatePath)
	if err != nil {
		return err
	}
	defer release()
	st, err := loadState(w.opt.StatePath)
	if err != nil {
		return err
	}
	w.st = st
	w.fsw, err = fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: file events: %w", err)
	}
	defer w.fsw.Close()

	if err := w.firstPass(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	w.sync(ctx, w.opt.Roots)
	// The first pass may have grown the heap (ingest's pipeline); an idle watcher
	// need not keep it.
	debug.FreeOSMemory()
	if w.opt.Ready != nil {
		close(w.opt.Ready)
	}
	if w.opt.Once {
		return nil
	}

	kick := make(chan struct{}, 1)
	changed := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		w.runPollers(ctx, changed)
	}()

	var rescan <-chan time.Time
	if w.opt.Rescan > 0 {
		t := time.NewTicker(w.opt.Rescan)
		defer t.Stop()
		rescan = t.C
	}
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	var first time.Time // first event of the pending batch
	// dirty holds, per root, the folders events named (true: the whole subtree); a
	// root mapped to nil is compared whole.
	dirty := map[string]map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			w.mark(dirty, ev)
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			wait := min(w.opt.Debounce, w.opt.MaxDelay-now.Sub(first))
			debounce.Reset(max(wait, 0))
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			// An overflowed event queue loses events: compare everything.
			w.log.Warn("watch: file events", "err", err)
			for _, r := range w.opt.Roots {
				dirty[r.Path] = nil
			}
			debounce.Reset(w.opt.Debounce)
		case <-debounce.C:
			w.syncScoped(ctx, dirty)
			clear(dirty)
			first = time.Time{}
		case <-kick:
			w.sync(ctx, w.opt.Roots)
		case <-rescan:
			w.sync(ctx, w.opt.Roots)
		}
	}
}

// mark records the folder an event concerns: the folder holding a file, or a
// folder itself (whole) when it was made, moved in, removed or moved away.
func (w *Watcher) mark(dirty map[string]map[string]bool, ev fsnotify.Event) {
	r := w.rootOf(ev.Name)
	if r == "" {
		return
	}
	if sc, ok := dirty[r]; ok && sc == nil {
		return // already compared whole
	}
	if !isDir(r) {
		dirty[r] = nil // a file root: cheap to compare whole
		return
	}
	sc := dirty[r]
	if sc == nil {
		sc = map[string]bool{}
		dirty[r] = sc
	}
	if isDir(ev.Name) {
		sc[ev.Name] = true
		return
	}
	if d := filepath.Dir(ev.Name); !sc[d] && within(r, d) {
		sc[d] = false
	}
	if ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
		sc[ev.Name] = true // it may have been a folder: what the state holds under it goes
	}
}

// runPollers runs each poller until ctx ends, restarting one that fails after a
// pause that grows to 5 minutes.
func (w *Watcher) runPollers(ctx context.Context, changed func()) {
	done := make(chan struct{}, len(w.opt.Pollers))
	for _, p := range w.opt.Pollers {
		go func() {
			defer func() { done <- struct{}{} }()
			pause := 5 * time.Second
			for ctx.Err() == nil {
				err := p.Run(ctx, changed)
				if ctx.Err() != nil {
					return
				}
				w.log.Warn("watch: "+p.Name, "err", err, "retry_in", pause.String())
				select {
				case <-ctx.Done():
					return
				case <-time.After(pause):
				}
				pause = min(2*pause, 5*time.Minute)
			}
		}()
	}
	for range w.opt.Pollers {
		<-done
	}
}

// rootOf is the root an event's path belongs to ("" when none).
func (w *Watcher) rootOf(p string) string {
	for _, r := range w.opt.Roots {
		if within(r.Path, p) {
			return r.Path
		}
	}
	return ""
}

// firstPass ingests, in one run (so mail threads across them join), the roots the
// state file does not know, and records their files.
func (w *Watcher) firstPass(ctx context.Context) error {
	var fresh []Root
	for _, r := range w.opt.Roots {
		if _, ok := w.st.Roots[r.Path]; !ok {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	start := time.Now()
	// Snapshot before reading: a file changed during the pass differs from the
	// snapshot afterwards and is read again by the catch-up.
	snaps := make([]snapshot, len(fresh))
	for i, r := range fresh {
		snaps[i] = scanRoot(r.Path)
	}
	var b Batch
	var present []Root // a root not there yet (an IMAP mirror before its first sync) is read once it appears
	for _, r := range fresh {
		if _, err := os.Stat(r.Path); err == nil {
			present = append(present, r)
		}
	}
	for _, group := range groupByKind(present) {
		written := map[string]bool{}
		sum, err := ingest.Run(ctx, w.opt.Store, rootPaths(group), ingest.Options{Kind: group[0].Kind, Progress: w.opt.Progress, Logger: w.log,
			Written: func(id string) { written[id] = true }})
		w.report(sum)
		if sum != nil {
			b.ChunksNew += sum.ChunksNew
			b.ChunksRemoved += sum.ChunksRemoved
			b.Failures += sum.Failures
		}
		if err != nil && ctx.Err() == nil {
			w.log.Warn("watch: first pass", "err", err)
		}
		if ctx.Err() != nil {
			return nil // the state stays without these roots: the next start reads them again
		}
		clean := err == nil && sum != nil && sum.Failures == 0 && !sum.Interrupted
		for _, r := range group {
			w.dropStale(ctx, &b, r.Path, written, clean, true)
		}
	}
	for i, r := range fresh {
		w.st.Roots[r.Path] = snaps[i].files
		b.Added += len(snaps[i].files)
	}
	if err := w.st.save(w.opt.StatePath); err != nil {
		return err
	}
	b.Seconds = time.Since(start).Seconds()
	w.logBatch("first pass", b)
	w.afterBatch(ctx, b)
	return nil
}

func groupByKind(roots []Root) [][]Root {
	var out [][]Root
	idx := map[string]int{}
	for _, r := range roots {
		i, ok := idx[r.Kind]
		if !ok {
			i = len(out)
			idx[r.Kind] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

func rootPaths(roots []Root) []string {
	out := make([]string, len(roots))
	for i, r := range roots {
		out[i] = r.Path
	}
	return out
}

// abs is the absolute path of a file of root by its state key.
func abs(root, rel string) string {
	if st, err := os.Stat(root); err == nil && !st.IsDir() || rel == filepath.Base(root) && !isDir(root) {
		return root
	}
	return filepath.Join(root, rel)
}

// change is one file that differs from the state.
type change struct {
	root    Root
	rel     string
	path    string
	deleted bool
	added   bool
	fs      fileState
	old     fileState
}

// sync compares the roots, whole, with the state and reads what changed.
func (w *Watcher) sync(ctx context.Context, roots []Root) {
	dirty := map[string]map[string]bool{}
	for _, r := range roots {
		dirty[r.Path] = nil
	}
	w.syncScoped(ctx, dirty)
}

// syncScoped compares the parts of the roots dirty names (a root mapped to nil
// whole; else the folders named, each alone or with its subtree) with the state,
// reads what changed as one batch, and records it; it also makes sure every folder
// seen is watched.
func (w *Watcher) syncScoped(ctx context.Context, dirty map[string]map[string]bool) {
	added := w.syncOnce(ctx, dirty)
	// A folder starts sending events only once it is watched: what was written in
	// it between its listing and its watch is found by listing it again (with its
	// subtree), until no new folder turns up.
	for len(added) > 0 && ctx.Err() == nil {
		again := map[string]map[string]bool{}
		for _, d := range added {
			if slices.Contains(added, filepath.Dir(d)) {
				continue // under another new folder, listed with it
			}
			r := w.rootOf(d)
			if r == "" {
				continue
			}
			if !isDir(r) {
				again[r] = nil
				continue
			}
			if again[r] == nil {
				again[r] = map[string]bool{}
			}
			again[r][d] = true
		}
		added = w.syncOnce(ctx, again)
	}
}

// syncOnce is one comparison and batch of syncScoped; it returns the folders it
// started watching.
func (w *Watcher) syncOnce(ctx context.Context, dirty map[string]map[string]bool) (added []string) {
	if len(dirty) == 0 || ctx.Err() != nil {
		return nil
	}
	start := time.Now()
	var changes []change
	next := map[string]map[string]fileState{} // each root's files after this batch
	for _, r := range w.opt.Roots {
		scopes, ok := dirty[r.Path]
		if !ok {
			continue
		}
		old := w.st.Roots[r.Path]
		var s snapshot
		var in func(rel string) bool
		if scopes == nil {
			s = scanRoot(r.Path)
			in = func(string) bool { return true }
		} else {
			s = scanScopes(r.Path, scopes)
			in = func(rel string) bool { return inScopes(r.Path, rel, scopes) }
		}
		added = append(added, w.watchDirs(s.dirs)...)
		files := make(map[string]fileState, len(old)+len(s.files))
		for rel, fs := range old {
			if !in(rel) {
				files[rel] = fs
			}
		}
		for rel, fs := range s.files {
			files[rel] = fs
			o, ok := old[rel]
			if ok && o == fs {
				continue
			}
			changes = append(changes, change{root: r, rel: rel, path: abs(r.Path, rel), added: !ok, fs: fs, old: o})
		}
		for rel, o := range old {
			if _, ok := s.files[rel]; !ok && in(rel) {
				changes = append(changes, change{root: r, rel: rel, path: abs(r.Path, rel), deleted: true, old: o})
			}
		}
		next[r.Path] = files
	}
	if len(changes) == 0 {
		return added
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].path < changes[j].path })
	b := w.apply(ctx, changes, next)
	if ctx.Err() != nil && b.Failures > 0 {
		// Cut short: leave the state as it was; the next start reads it all again.
		return nil
	}
	for root, files := range next {
		w.st.Roots[root] = files
	}
	if err := w.st.save(w.opt.StatePath); err != nil {
		w.log.Error("watch: could not save the state; the next start reads this batch again", "err", err)
	}
	b.Seconds = time.Since(start).Seconds()
	w.logBatch("batch", b)
	w.afterBatch(ctx, b)
	return added
}

// watchDirs adds file-event watches on the folders not watched yet (and returns
// them) and drops those of folders that are gone.
func (w *Watcher) watchDirs(dirs []string) (added []string) {
	if w.opt.NoEvents {
		return nil
	}
	for _, d := range dirs {
		if w.dirs[d] {
			continue
		}
		if err := w.fsw.Add(d); err != nil {
			// Out of inotify watches, or the folder went: the periodic rescan still
			// finds its changes.
			w.log.Warn("watch: no file events for a folder; the rescan covers it", "dir", d, "err", err)
			continue
		}
		w.dirs[d] = true
		added = append(added, d)
	}
	for d := range w.dirs {
		if !isDir(d) {
			_ = w.fsw.Remove(d)
			delete(w.dirs, d)
		}
	}
	return added
}

// apply reads and forgets what changes name, in this order: documents, mail,
// whole roots, then the deleted files (after the reads, so that a renamed
// document is never missing, and a mail thread that lost a message is written
// again, not forgotten).
func (w *Watcher) apply(ctx context.Context, changes []change, next map[string]map[string]fileState) Batch {
	var b Batch
	docs := map[string][]string{} // root -> changed documents
	docRoots := map[string]Root{}
	mail := false
	wholeRoots := map[string]Root{}
	var deleted []change
	var addedDocs []change
	for _, c := range changes {
		switch {
		case c.deleted:
			b.Deleted++
			deleted = append(deleted, c)
		case c.added:
			b.Added++
		default:
			b.Changed++
		}
		kind, _ := classify(c.root.Path, c.root.Kind, c.path)
		switch kind {
		case unitMail:
			mail = true
		case unitRoot:
			if !c.deleted {
				wholeRoots[c.root.Path] = c.root
			}
		case unitDocument:
			if !c.deleted {
				docs[c.root.Path] = append(docs[c.root.Path], c.path)
				docRoots[c.root.Path] = c.root
				if c.added {
					addedDocs = append(addedDocs, c)
				}
			}
		}
	}
	for rp, files := range docs {
		r := docRoots[rp]
		root := rp
		if !isDir(rp) {
			root = ""
		}
		sum, err := ingest.Run(ctx, w.opt.Store, files, ingest.Options{Kind: r.Kind, Root: root, Logger: w.log})
		w.add(&b, sum, err)
	}
	if mail {
		w.ingestMail(ctx, &b, next)
	}
	for _, r := range wholeRoots {
		sum, err := ingest.Run(ctx, w.opt.Store, []string{r.Path}, ingest.Options{Kind: r.Kind, Logger: w.log})
		w.add(&b, sum, err)
	}
	if ctx.Err() != nil {
		b.Failures++ // the batch was cut short
		return b
	}
	for _, c := range deleted {
		res, err := w.opt.Store.Forget(ctx, memtree.ForgetFilter{Root: c.path}, false)
		if err != nil {
			w.log.Error("watch: forget", "file", ingest.SafeName(c.path), "err", err)
			b.Failures++
			continue
		}
		b.Forgotten += len(res.Sources)
		b.ChunksRemoved += res.Chunks
		for _, a := range addedDocs {
			if a.fs == c.old && ingest.IsDocumentFile(c.path) {
				b.Renamed++
				break
			}
		}
	}
	return b
}

// mailUnits lists every Maildir and mbox of the watched roots (see unitMail),
// from the files this batch leaves (next) or the state.
func (w *Watcher) mailUnits(next map[string]map[string]fileState) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range w.opt.Roots {
		files, ok := next[r.Path]
		if !ok {
			files = w.st.Roots[r.Path]
		}
		rels := make([]string, 0, len(files))
		for rel := range files {
			rels = append(rels, rel)
		}
		sort.Strings(rels)
		for _, rel := range rels {
			p := abs(r.Path, rel)
			if k, unit := classify(r.Path, r.Kind, p); k == unitMail && !seen[unit] {
				seen[unit] = true
				out = append(out, unit)
			}
		}
	}
	return out
}

// ingestMail reads every mail unit again in one run, then forgets the mail
// sources that came from them and were not written again (threads whose
// messages were all deleted, an mbox rewritten without them) — only after a run
// without failures, so that a file that could not be read keeps what it gave.
func (w *Watcher) ingestMail(ctx context.Context, b *Batch, next map[string]map[string]fileState) {
	units := w.mailUnits(next)
	if len(units) == 0 {
		return
	}
	written := map[string]bool{}
	sum, err := ingest.Run(ctx, w.opt.Store, units, ingest.Options{Logger: w.log, Written: func(id string) { written[id] = true }})
	w.add(b, sum, err)
	if err != nil || sum == nil || sum.Failures > 0 || sum.Interrupted {
		return
	}
	for _, u := range units {
		w.dropStale(ctx, b, u, written, true, false)
	}
}

// dropStale forgets the sources read from path (a root or a mail unit) that a
// read of it as a whole just now did not write again: mail threads whose messages
// are all gone or an mbox rewritten without them (only after a clean read: a file
// that could not be read keeps what it gave), and, with docs, documents whose file
// is gone (whatever else failed: the file's absence is the evidence). It is what
// makes a read of a whole root after a crash a catch-up: a first pass killed after
// it stored a file that was deleted meanwhile is read again at the next start, and
// the file must not outlive it. Chat sources are left alone: a conversation's
// month can merge several exports.
func (w *Watcher) dropStale(ctx context.Context, b *Batch, path string, written map[string]bool, clean, docs bool) {
	res, err := w.opt.Store.Forget(ctx, memtree.ForgetFilter{Root: path}, true)
	if err != nil {
		w.log.Error("watch: list the sources of a watched path", "path", ingest.SafeName(path), "err", err)
		b.Failures++
		return
	}
	var stale []string
	for _, s := range res.Sources {
		if written[s.SourceID] {
			continue
		}
		switch {
		case s.Kind == memtree.KindEmail && clean:
			stale = append(stale, s.SourceID)
		case s.Kind == memtree.KindDocument && docs && s.Origin != "":
			if _, err := os.Lstat(s.Origin); errors.Is(err, os.ErrNotExist) {
				stale = append(stale, s.SourceID)
			}
		}
	}
	if len(stale) == 0 {
		return
	}
	res, err = w.opt.Store.Forget(ctx, memtree.ForgetFilter{SourceIDs: stale}, false)
	if err != nil {
		w.log.Error("watch: forget", "path", ingest.SafeName(path), "err", err)
		b.Failures++
		return
	}
	b.Forgotten += len(res.Sources)
	b.ChunksRemoved += res.Chunks
}

// add counts an ingest run into the batch and reports its problems.
func (w *Watcher) add(b *Batch, sum *ingest.Summary, err error) {
	w.report(sum)
	if sum != nil {
		b.ChunksNew += sum.ChunksNew
		b.ChunksRemoved += sum.ChunksRemoved
		b.Failures += sum.Failures
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		w.log.Error("watch: ingest", "err", err)
		b.Failures++
	}
}

// report logs each input ingest could not keep whole, and each it skipped
// (a FIFO, a device, a symbolic link, a file of no known format), as ingest
// names them.
func (w *Watcher) report(sum *ingest.Summary) {
	if sum == nil {
		return
	}
	for _, sk := range sum.Skips {
		w.log.Info("watch: skipped: " + sk.Error())
	}
	for _, fe := range sum.Errors {
		w.log.Error("watch: " + fe.Error())
	}
	for _, n := range sum.Notes {
		w.log.Warn("watch: " + n.Error())
	}
}

// logBatch writes the batch's one line.
func (w *Watcher) logBatch(what string, b Batch) {
	w.total.Added += b.Added
	w.total.Changed += b.Changed
	w.total.Deleted += b.Deleted
	w.total.Renamed += b.Renamed
	w.total.Forgotten += b.Forgotten
	w.total.ChunksNew += b.ChunksNew
	w.total.ChunksRemoved += b.ChunksRemoved
	w.total.Failures += b.Failures
	if b.empty() && b.ChunksNew+b.ChunksRemoved+b.Failures == 0 {
		return
	}
	w.log.Info("watch: "+what, "added", b.Added, "changed", b.Changed, "deleted", b.Deleted, "renamed", b.Renamed,
		"sources_forgotten", b.Forgotten, "chunks_new", b.ChunksNew, "chunks_removed", b.ChunksRemoved,
		"failures", b.Failures, "seconds", fmt.Sprintf("%.2f", b.Seconds))
}

func (w *Watcher) afterBatch(ctx context.Context, b Batch) {
	if w.opt.AfterBatch == nil || ctx.Err() != nil || b.ChunksNew == 0 {
		return
	}
	if err := w.opt.AfterBatch(ctx); err != nil {
		w.log.Warn("watch: after the batch", "err", err)
	}
}

// String names what the watcher watches, for its start line.
func (w *Watcher) String() string {
	return strings.Join(rootPaths(w.opt.Roots), ", ")
}
