package watch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// syncBuffer is a log target the test reads while the loop writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hits counts the search hits for word whose text holds it.
func hits(t *testing.T, st *memtree.Store, word string) int {
	t.Helper()
	res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: word, K: 50})
	if err != nil {
		t.Fatalf("search %q: %v", word, err)
	}
	n := 0
	for _, h := range res.Chunks {
		text := h.Snippet
		for _, m := range h.Messages {
			text += "\n" + m.Text
		}
		if strings.Contains(strings.ToLower(text), strings.ToLower(word)) {
			n++
		}
	}
	return n
}

// waitHits waits (up to 10 s, the acceptance bound) until word has want hits.
func waitHits(t *testing.T, st *memtree.Store, word string, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := hits(t, st, word)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q has %d hits after 10 s, want %d", what, word, n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mailMsg(id, inReplyTo, subject, body string, day int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "From: Ann Lee <ann@example.org>\nTo: Bob Ray <bob@example.org>\nSubject: %s\n", subject)
	fmt.Fprintf(&b, "Date: Mon, %02d Nov 2026 10:00:00 +0000\nMessage-ID: <%s>\n", day, id)
	if inReplyTo != "" {
		fmt.Fprintf(&b, "In-Reply-To: <%s>\nReferences: <%s>\n", inReplyTo, inReplyTo)
	}
	fmt.Fprintf(&b, "\n%s\n", body)
	return b.String()
}

func mboxEntry(msg string) string {
	return "From ann@example.org Mon Nov  2 10:00:00 2026\n" + msg + "\n"
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	dir, notes, maildir, mbox, state string
	store                            *memtree.Store
	log                              *syncBuffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, notes: filepath.Join(dir, "notes"), maildir: filepath.Join(dir, "Maildir"),
		mbox: filepath.Join(dir, "archive.mbox"), state: filepath.Join(dir, "ws", "watch-state.json"), log: &syncBuffer{}}
	write(t, filepath.Join(f.notes, "garden.md"), "# Garden\n\nPlant the marigoldseed along the fence in April.\n")
	write(t, filepath.Join(f.notes, "sub", "trip.md"), "# Trip\n\nBook the ferrytrip to the islands for June.\n")
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(f.maildir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(f.maildir, "cur", "1790000000.1.host:2,S"), mailMsg("m1@example.org", "", "Boat", "The sailcloth order arrives on Friday.", 2))
	write(t, f.mbox, mboxEntry(mailMsg("x1@example.org", "", "Budget", "The lanternfund needs another review.", 3)))
	st, err := memtree.Open(filepath.Join(dir, "ws", "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.store = st
	return f
}

// start runs a watcher over the fixture's three roots until the test ends (or
// stop is called) and waits for its first pass.
func (f *fixture) start(t *testing.T) (stop func()) {
	t.Helper()
	ready := make(chan struct{})
	w, err := New(Options{Store: f.store, StatePath: f.state, Debounce: 100 * time.Millisecond, Ready: ready,
		Roots: []Root{{Path: f.notes}, {Path: f.maildir}, {Path: f.mbox}},
		Log:   slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("watch ended before its first pass: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no first pass in 30 s")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			start := time.Now()
			if err := <-done; err != nil {
				t.Errorf("watch: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("watch took %v to stop", d)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestWatchKeepsNotesMaildirAndMboxCurrent is the first acceptance point in
// process: a new note, an edit, a deletion, a rename, a Maildir delivery (and its
// move to cur/ with flags) and mbox appends are each found, or gone, within 10 s.
func TestWatchKeepsNotesMaildirAndMboxCurrent(t *testing.T) {
	f := newFixture(t)
	f.start(t)
	st := f.store
	for _, w := range []string{"marigoldseed", "ferrytrip", "sailcloth", "lanternfund"} {
		if n := hits(t, st, w); n != 1 {
			t.Fatalf("first pass: %q has %d hits, want 1\n%s", w, n, f.log.String())
		}
	}

	// A new note.
	write(t, filepath.Join(f.notes, "sub", "new.md"), "# New\n\nThe quillwort survey starts Monday.\n")
	waitHits(t, st, "quillwort", 1, "new note")

	// An edit: the old words are gone, the new ones found.
	write(t, filepath.Join(f.notes, "garden.md"), "# Garden\n\nPlant the snapdragonbulb along the fence in April.\n")
	waitHits(t, st, "snapdragonbulb", 1, "edited note")
	waitHits(t, st, "marigoldseed", 0, "edited note's old text")

	// A rename: found once, at the new path.
	if err := os.Rename(filepath.Join(f.notes, "sub", "trip.md"), filepath.Join(f.notes, "trip-2027.md")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: "ferrytrip", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Chunks) > 0 && strings.HasSuffix(res.Chunks[0].SourceID, "/trip-2027.md") && hits(t, st, "ferrytrip") == 1 {
			if res.Chunks[0].SourceRef != "trip-2027.md" {
				t.Errorf("renamed note's source_ref = %q, want trip-2027.md (relative to the watched folder)", res.Chunks[0].SourceRef)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("renamed note not found once at its new path in 10 s: %+v", res.Chunks)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A deletion.
	if err := os.Remove(filepath.Join(f.notes, "sub", "new.md")); err != nil {
		t.Fatal(err)
	}
	waitHits(t, st, "quillwort", 0, "deleted note")

	// A Maildir delivery: written in tmp/, moved to new/, then to cur/ with flags —
	// one message throughout.
	name := "1790000100.2.host"
	write(t, filepath.Join(f.maildir, "tmp", name), mailMsg("m2@example.org", "", "Dock", "The moorpost inspection is booked.", 4))
	if err := os.Rename(filepath.Join(f.maildir, "tmp", name), filepath.Join(f.maildir, "new", name)); err != nil {
		t.Fatal(err)
	}
	waitHits(t, st, "moorpost", 1, "Maildir delivery")
	if err := os.Rename(filepath.Join(f.maildir, "new", name), filepath.Join(f.maildir, "cur", name+":2,S")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // the move's batch
	waitHits(t, st, "moorpost", 1, "Maildir message moved to cur/ with flags")

	// An mbox append: a new thread, then a reply to the first thread, which must
	// join it, not replace it.
	appendFile(t, f.mbox, mboxEntry(mailMsg("x2@example.org", "", "Roof", "The slatetile quote came in.", 5)))
	waitHits(t, st, "slatetile", 1, "mbox append")
	appendFile(t, f.mbox, mboxEntry(mailMsg("x3@example.org", "x1@example.org", "Re: Budget", "Approved; the copperbeam stays in.", 6)))
	waitHits(t, st, "copperbeam", 1, "mbox reply append")
	if n := hits(t, st, "lanternfund"); n != 1 {
		t.Errorf("after a reply was appended, the thread's first message has %d hits, want 1", n)
	}

	// A Maildir message deleted: forgotten.
	if err := os.Remove(filepath.Join(f.maildir, "cur", name+":2,S")); err != nil {
		t.Fatal(err)
	}
	waitHits(t, st, "moorpost", 0, "deleted Maildir message")
	if n := hits(t, st, "sailcloth"); n != 1 {
		t.Errorf("the other Maildir message has %d hits, want 1", n)
	}
	if !strings.Contains(f.log.String(), `msg="watch: batch"`) {
		t.Errorf("no batch line on the log:\n%s", f.log.String())
	}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWatchCatchesUpAfterAStop: what changes while no watcher runs (a note
// written, one deleted, an mbox rewritten without a message) is caught up at the
// next start, and nothing is stored twice.
func TestWatchCatchesUpAfterAStop(t *testing.T) {
	f := newFixture(t)
	stop := f.start(t)
	stop()
	write(t, filepath.Join(f.notes, "meanwhile.md"), "# Meanwhile\n\nThe driftwood sculpture is finished.\n")
	if err := os.Remove(filepath.Join(f.notes, "sub", "trip.md")); err != nil {
		t.Fatal(err)
	}
	write(t, f.mbox, mboxEntry(mailMsg("x9@example.org", "", "Other", "Only the pebblepath remains.", 7)))
	f.start(t)
	waitHits(t, f.store, "driftwood", 1, "note written while stopped")
	waitHits(t, f.store, "ferrytrip", 0, "note deleted while stopped")
	waitHits(t, f.store, "lanternfund", 0, "message gone from a rewritten mbox")
	waitHits(t, f.store, "pebblepath", 1, "rewritten mbox's message")
	for _, w := range []string{"marigoldseed", "sailcloth"} {
		if n := hits(t, f.store, w); n != 1 {
			t.Errorf("%q has %d hits after the restart, want 1", w, n)
		}
	}
}

// TestFirstPassCutOffCatchesUp: a first pass killed after the store took its
// files but before the state recorded them is read again at the next start; a
// note and a mail thread that went meanwhile must not outlive it (a kill -9 test
// found the note kept forever when the repeated pass also met a file it could
// not read).
func TestFirstPassCutOffCatchesUp(t *testing.T) {
	f := newFixture(t)
	// What the killed pass left: everything stored, no state file.
	if _, err := ingest.Run(context.Background(), f.store, []string{f.notes, f.maildir, f.mbox}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ferrytrip", "sailcloth"} {
		if n := hits(t, f.store, w); n != 1 {
			t.Fatalf("%q has %d hits before the restart, want 1", w, n)
		}
	}
	if err := os.Remove(filepath.Join(f.notes, "sub", "trip.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.maildir, "cur", "1790000000.1.host:2,S")); err != nil {
		t.Fatal(err)
	}
	f.start(t)
	waitHits(t, f.store, "ferrytrip", 0, "note deleted after a cut-off first pass")
	waitHits(t, f.store, "sailcloth", 0, "message deleted after a cut-off first pass")
	for _, w := range []string{"marigoldseed", "lanternfund"} {
		if n := hits(t, f.store, w); n != 1 {
			t.Errorf("%q has %d hits after the restart, want 1", w, n)
		}
	}
	// The same with a file the repeated pass cannot read: the gone note still goes
	// (its absence is the evidence), the unreadable file keeps nothing it lost.
	g := newFixture(t)
	if _, err := ingest.Run(context.Background(), g.store, []string{g.notes}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(g.notes, "sub", "trip.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(g.notes, "binary.md"), "# Binary\n\x00\x01 the quietroom key.\n")
	g.start(t)
	if !strings.Contains(g.log.String(), "binary.md") {
		t.Errorf("the unreadable file is not named:\n%s", g.log.String())
	}
	waitHits(t, g.store, "ferrytrip", 0, "note deleted, next to an unreadable one")
	if n := hits(t, g.store, "marigoldseed"); n != 1 {
		t.Errorf("marigoldseed has %d hits, want 1", n)
	}
}

// TestStateSurvivesAndIsAtomic: the state file round-trips, and a torn or foreign
// one starts over instead of failing.
func TestStateSurvivesAndIsAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s", "watch-state.json")
	s, err := loadState(p)
	if err != nil || len(s.Roots) != 0 {
		t.Fatalf("missing state: %v %+v", err, s)
	}
	s.Roots["/r"] = map[string]fileState{"a.md": {Size: 3, MtimeNS: 7}}
	if err := s.save(p); err != nil {
		t.Fatal(err)
	}
	s2, err := loadState(p)
	if err != nil || s2.Roots["/r"]["a.md"] != (fileState{Size: 3, MtimeNS: 7}) {
		t.Fatalf("round trip: %v %+v", err, s2)
	}
	if err := os.WriteFile(p, []byte(`{"version":1,"roots":{"/r":`), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, err := loadState(p)
	if err != nil || len(s3.Roots) != 0 {
		t.Fatalf("torn state: %v %+v", err, s3)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".watch-state-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// BenchmarkScan10k measures one comparison pass over 10,000 notes in 100
// folders (what each batch and each periodic rescan does before reading):
//
//	go test ./internal/watch -run '^$' -bench Scan10k
func BenchmarkScan10k(b *testing.B) {
	root := b.TempDir()
	for d := 0; d < 100; d++ {
		for f := 0; f < 100; f++ {
			p := filepath.Join(root, fmt.Sprintf("d%02d", d), fmt.Sprintf("n%03d.md", f))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("# n\n\ntext\n"), 0o644)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s := scanRoot(root); len(s.files) != 10000 {
			b.Fatalf("%d files", len(s.files))
		}
	}
}

// TestWatchFolderMovesAndHiddenFiles: a folder made with notes, a folder moved in
// from outside, a folder removed and one moved away are each read or forgotten
// whole; files in hidden folders (.git, .obsidian) are not read.
func TestWatchFolderMovesAndHiddenFiles(t *testing.T) {
	f := newFixture(t)
	f.start(t)
	st := f.store
	outside := filepath.Join(f.dir, "outside")
	write(t, filepath.Join(outside, "proj", "a.md"), "# A\n\nThe tamarindseed plan.\n")
	write(t, filepath.Join(outside, "proj", "deep", "b.md"), "# B\n\nThe lotuspond plan.\n")
	if err := os.Rename(filepath.Join(outside, "proj"), filepath.Join(f.notes, "proj")); err != nil {
		t.Fatal(err)
	}
	waitHits(t, st, "tamarindseed", 1, "folder moved in")
	waitHits(t, st, "lotuspond", 1, "folder moved in, nested note")

	if err := os.MkdirAll(filepath.Join(f.notes, "made", "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.notes, "made", "inner", "c.md"), "# C\n\nThe juniperbush plan.\n")
	waitHits(t, st, "juniperbush", 1, "note in a folder just made")

	write(t, filepath.Join(f.notes, ".git", "notes.md"), "# hidden\n\nThe hiddenword plan.\n")
	write(t, filepath.Join(f.notes, "made", "d.md"), "# D\n\nThe beaconlight plan.\n")
	waitHits(t, st, "beaconlight", 1, "note beside a hidden folder")
	if n := hits(t, st, "hiddenword"); n != 0 {
		t.Errorf("a file in .git was read (%d hits)", n)
	}

	if err := os.Rename(filepath.Join(f.notes, "proj"), filepath.Join(outside, "proj-away")); err != nil {
		t.Fatal(err)
	}
	waitHits(t, st, "tamarindseed", 0, "folder moved away")
	waitHits(t, st, "lotuspond", 0, "folder moved away, nested note")
	if err := os.RemoveAll(filepath.Join(f.notes, "made")); err != nil {
		t.Fatal(err)
	}
	waitHits(t, st, "juniperbush", 0, "folder removed")
	waitHits(t, st, "beaconlight", 0, "folder removed")
	if n := hits(t, st, "ferrytrip"); n != 1 {
		t.Errorf("an untouched note has %d hits, want 1", n)
	}
}

// TestOneWatcherPerWorkspace: a second loop on the same state file is refused
// with a message naming the first.
func TestOneWatcherPerWorkspace(t *testing.T) {
	f := newFixture(t)
	f.start(t)
	w, err := New(Options{Store: f.store, StatePath: f.state, Roots: []Root{{Path: f.notes}}})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "another watch") || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("second watcher: %v", err)
	}
}

// TestRescanFindsChangesWithoutEvents: where no file events arrive, the periodic
// rescan finds a new note, an edit and a deletion.
func TestRescanFindsChangesWithoutEvents(t *testing.T) {
	f := newFixture(t)
	ready := make(chan struct{})
	w, err := New(Options{Store: f.store, StatePath: f.state, Ready: ready, NoEvents: true, Rescan: 300 * time.Millisecond,
		Roots: []Root{{Path: f.notes}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-ready
	if len(w.dirs) != 0 {
		t.Fatalf("NoEvents watched %d folders", len(w.dirs))
	}
	write(t, filepath.Join(f.notes, "polled.md"), "# Polled\n\nThe windvane turned.\n")
	waitHits(t, f.store, "windvane", 1, "new note found by the rescan")
	write(t, filepath.Join(f.notes, "garden.md"), "# Garden\n\nPlant the sunflowerseed.\n")
	waitHits(t, f.store, "sunflowerseed", 1, "edit found by the rescan")
	waitHits(t, f.store, "marigoldseed", 0, "edit's old words, by the rescan")
	os.Remove(filepath.Join(f.notes, "polled.md"))
	waitHits(t, f.store, "windvane", 0, "deletion found by the rescan")
}
