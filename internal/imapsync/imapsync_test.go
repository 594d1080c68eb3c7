package imapsync_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap"
	"github.com/emersion/go-imap/client"

	"github.com/openhuman/openhuman-core/internal/imapsync"
	"github.com/openhuman/openhuman-core/internal/imapsync/dovecottest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/watch"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// word is a letters-only word unique to message i, for searching.
func word(i int) string {
	b := []byte("kelpword")
	for k := 0; k < 4; k++ {
		b = append(b, byte('a'+i%26))
		i /= 26
	}
	return string(b)
}

func message(i int, mailbox string) string {
	return fmt.Sprintf("From: Ann Lee <ann@example.org>\r\nTo: Bob Ray <bob@example.org>\r\nSubject: Note %d\r\n"+
		"Date: Mon, 02 Nov 2026 10:%02d:%02d +0000\r\nMessage-ID: <msg%d.%s@example.org>\r\n\r\n"+
		"Message %d says %s about the harbour. %s\r\n", i, i/60%60, i%60, i, mailbox, i, word(i), strings.Repeat("Padding text for the fetch. ", 20))
}

func dial(t *testing.T, s *dovecottest.Server) *client.Client {
	t.Helper()
	c, err := client.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Login(s.User, s.Pass); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Logout() })
	return c
}

// appendN delivers messages from..to-1 with APPEND through a real IMAP client;
// every third is \Seen.
func appendN(t *testing.T, c *client.Client, mailbox string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		var flags []string
		if i%3 == 0 {
			flags = []string{imap.SeenFlag}
		}
		if err := c.Append(mailbox, flags, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), bytes.NewBufferString(message(i, mailbox))); err != nil {
			t.Fatalf("APPEND %d: %v", i, err)
		}
	}
}

// flags returns each message's \Seen flag by UID.
func seenFlags(t *testing.T, c *client.Client, mailbox string) map[uint32]bool {
	t.Helper()
	if _, err := c.Select(mailbox, true); err != nil {
		t.Fatal(err)
	}
	set := new(imap.SeqSet)
	set.AddRange(1, 0)
	ch := make(chan *imap.Message, 64)
	done := make(chan error, 1)
	go func() { done <- c.UidFetch(set, []imap.FetchItem{imap.FetchUid, imap.FetchFlags}, ch) }()
	out := map[uint32]bool{}
	for m := range ch {
		seen := false
		for _, f := range m.Flags {
			seen = seen || f == imap.SeenFlag
		}
		out[m.Uid] = seen
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return out
}

func target(s *dovecottest.Server, mailbox string) imapsync.Target {
	return imapsync.Target{User: s.User, Host: s.Host, Port: s.Port, Mailbox: mailbox, Insecure: true}
}

func openStore(t *testing.T, dir string) *memtree.Store {
	t.Helper()
	st, err := memtree.Open(filepath.Join(dir, "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// ingestMirror reads the mirror into the store as sync does (watch, once).
func ingestMirror(t *testing.T, st *memtree.Store, state string, dirs ...string) watch.Batch {
	t.Helper()
	var roots []watch.Root
	for _, d := range dirs {
		roots = append(roots, watch.Root{Path: d})
	}
	w, err := watch.New(watch.Options{Store: st, Roots: roots, StatePath: state, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w.Total()
}

// hits counts the hits for w whose text holds it.
func hits(t *testing.T, st *memtree.Store, w string) int {
	t.Helper()
	res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: w, K: 50})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range res.Chunks {
		text := h.Snippet
		for _, m := range h.Messages {
			text += m.Text
		}
		if strings.Contains(text, w) {
			n++
		}
	}
	return n
}

// TestSync500ReadOnlyAndIncremental: 500 messages synced from a real Dovecot and
// found; every message keeps its \Seen flag as it was; a second sync fetches
// nothing; 20 more APPENDed are fetched alone.
func TestSync500ReadOnlyAndIncremental(t *testing.T) {
	s := dovecottest.Start(t)
	c := dial(t, s)
	appendN(t, c, "INBOX", 0, 500)
	before := seenFlags(t, c, "INBOX")
	dir := t.TempDir()
	mirror := filepath.Join(dir, "mirror")
	tg := target(s, "INBOX")
	res, err := imapsync.Sync(context.Background(), tg, mirror, imapsync.Options{Password: s.Pass})
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, s.Log())
	}
	if res.Fetched != 500 || res.OnServer != 500 {
		t.Fatalf("first sync: %+v, want 500 fetched", res)
	}
	t.Logf("IMAP sync throughput from the local Dovecot: %d messages in %.2f s = %.0f messages/s", res.Fetched, res.Seconds, float64(res.Fetched)/res.Seconds)
	after := seenFlags(t, c, "INBOX")
	if len(after) != 500 {
		t.Fatalf("server holds %d messages after the sync, want 500", len(after))
	}
	for uid, seen := range before {
		if after[uid] != seen {
			t.Fatalf("UID %d: \\Seen was %v before the sync, %v after", uid, seen, after[uid])
		}
	}
	st := openStore(t, dir)
	state := filepath.Join(dir, "watch-state.json")
	ingestMirror(t, st, state, mirror)
	for _, i := range []int{0, 1, 250, 499} {
		if n := hits(t, st, word(i)); n != 1 {
			t.Fatalf("message %d (%s): %d hits, want 1", i, word(i), n)
		}
	}
	res, err = imapsync.Sync(context.Background(), tg, mirror, imapsync.Options{Password: s.Pass})
	if err != nil || res.Fetched != 0 || res.Removed != 0 {
		t.Fatalf("second sync: %+v %v, want nothing fetched", res, err)
	}
	appendN(t, c, "INBOX", 500, 520)
	res, err = imapsync.Sync(context.Background(), tg, mirror, imapsync.Options{Password: s.Pass})
	if err != nil || res.Fetched != 20 {
		t.Fatalf("sync after 20 APPENDs: %+v %v, want 20 fetched", res, err)
	}
	b := ingestMirror(t, st, state, mirror)
	if b.Added != 20 {
		t.Errorf("ingest after the incremental sync read %d new files, want 20", b.Added)
	}
	if n := hits(t, st, word(510)); n != 1 {
		t.Errorf("message 510: %d hits, want 1", n)
	}
}

// TestSyncUIDValidityChange: the mailbox is deleted and made again (a new
// UIDVALIDITY) with the same messages: the mirror is read again and the store
// holds each message once.
func TestSyncUIDValidityChange(t *testing.T) {
	s := dovecottest.Start(t)
	c := dial(t, s)
	if err := c.Create("Archive"); err != nil {
		t.Fatal(err)
	}
	appendN(t, c, "Archive", 0, 10)
	dir := t.TempDir()
	mirror := filepath.Join(dir, "mirror")
	tg := target(s, "Archive")
	first, err := imapsync.Sync(context.Background(), tg, mirror, imapsync.Options{Password: s.Pass})
	if err != nil || first.Fetched != 10 {
		t.Fatalf("first sync: %+v %v", first, err)
	}
	st := openStore(t, dir)
	state := filepath.Join(dir, "watch-state.json")
	ingestMirror(t, st, state, mirror)
	if err := c.Delete("Archive"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // Dovecot derives UIDVALIDITY from the clock
	if err := c.Create("Archive"); err != nil {
		t.Fatal(err)
	}
	appendN(t, c, "Archive", 0, 10)
	res, err := imapsync.Sync(context.Background(), tg, mirror, imapsync.Options{Password: s.Pass})
	if err != nil {
		t.Fatal(err)
	}
	if res.UIDValidity == first.UIDValidity {
		t.Fatalf("UIDVALIDITY did not change (%d): the test proves nothing", res.UIDValidity)
	}
	if !res.Revalidated || res.Fetched != 10 || res.Removed != 10 {
		t.Fatalf("sync after a UIDVALIDITY change: %+v, want revalidated, 10 fetched, 10 old removed", res)
	}
	ingestMirror(t, st, state, mirror)
	for i := 0; i < 10; i++ {
		if n := hits(t, st, word(i)); n != 1 {
			t.Errorf("message %d after the re-sync: %d hits, want 1 (no duplicates)", i, n)
		}
	}
}

// cutProxy forwards to addr and cuts every connection after limit bytes from the
// server, while cut is set.
type cutProxy struct {
	addr  string
	limit int64
	cut   atomic.Bool
	ln    net.Listener
}

func newCutProxy(t *testing.T, addr string, limit int64) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: addr, limit: limit, ln: ln}
	p.cut.Store(true)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(cc)
		}
	}()
	return p
}

func (p *cutProxy) serve(cc net.Conn) {
	defer cc.Close()
	sc, err := net.Dial("tcp", p.addr)
	if err != nil {
		return
	}
	defer sc.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); io.Copy(sc, cc); sc.Close() }()
	if p.cut.Load() {
		io.CopyN(cc, sc, p.limit)
	} else {
		io.Copy(cc, sc)
	}
	cc.Close()
	sc.Close()
	wg.Wait()
}

func (p *cutProxy) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, p.ln.Addr().String())
}

// TestSyncResumesAfterAConnectionCut: a connection cut mid-fetch keeps only whole
// messages, and the next sync fetches the rest, none twice.
func TestSyncResumesAfterAConnectionCut(t *testing.T) {
	s := dovecottest.Start(t)
	c := dial(t, s)
	appendN(t, c, "INBOX", 0, 100)
	mirror := filepath.Join(t.TempDir(), "mirror")
	proxy := newCutProxy(t, s.Addr, 40_000) // about a third of the messages
	tg := target(s, "INBOX")
	res, err := imapsync.Sync(context.Background(), tg, mirror, imapsync.Options{Password: s.Pass, Dial: proxy.dial, Timeout: 5 * time.Second})
	if err == nil {
		t.Fatalf("sync through a connection cut after 40 kB succeeded: %+v", res)
	}
	kept := checkMirror(t, mirror)
	if kept == 0 || kept >= 100 || kept != res.Fetched {
		t.Fatalf("after the cut the mirror holds %d messages (sync said %d); want some, not all", kept, res.Fetched)
	}
	if left, _ := os.ReadDir(filepath.Join(mirror, "tmp")); len(left) > 1 {
		t.Errorf("tmp/ holds %d partial files", len(left))
	}
	proxy.cut.Store(false)
	res, err = imapsync.Sync(context.Background(), tg, mirror, imapsync.Options{Password: s.Pass, Dial: proxy.dial})
	if err != nil {
		t.Fatalf("sync after the cut: %v", err)
	}
	if res.Fetched != 100-kept {
		t.Errorf("resumed sync fetched %d, want the %d left", res.Fetched, 100-kept)
	}
	if n := checkMirror(t, mirror); n != 100 {
		t.Errorf("mirror holds %d messages, want 100", n)
	}
}

// checkMirror checks that every message of the mirror is whole and there once,
// and counts them.
func checkMirror(t *testing.T, mirror string) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(mirror, "cur"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(mirror, "cur", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m, err := mail.ReadMessage(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		body, _ := io.ReadAll(m.Body)
		if !bytes.HasSuffix(bytes.TrimRight(body, " \r\n"), []byte("Padding text for the fetch.")) {
			t.Errorf("%s: message cut short", e.Name())
		}
		id := m.Header.Get("Message-ID")
		if seen[id] {
			t.Errorf("%s twice in the mirror", id)
		}
		seen[id] = true
	}
	return len(seen)
}

// TestWatchSyncsIMAPWhileRunning: 20 messages APPENDed while watch follows the
// mailbox (IDLE on Dovecot) are all found.
func TestWatchSyncsIMAPWhileRunning(t *testing.T) {
	s := dovecottest.Start(t)
	c := dial(t, s)
	appendN(t, c, "INBOX", 0, 5)
	dir := t.TempDir()
	mirror := filepath.Join(dir, "mirror")
	st := openStore(t, dir)
	tg := target(s, "INBOX")
	const interval = 3 * time.Second
	ready := make(chan struct{})
	var logb bytes.Buffer
	var mu sync.Mutex
	w, err := watch.New(watch.Options{Store: st, StatePath: filepath.Join(dir, "state.json"), Ready: ready, Debounce: 100 * time.Millisecond,
		Roots: []watch.Root{{Path: mirror}},
		Log:   slog.New(slog.NewTextHandler(lockedWriter{&mu, &logb}, nil)),
		Pollers: []watch.Poller{{Name: "imap", Run: func(ctx context.Context, changed func()) error {
			return imapsync.Follow(ctx, tg, mirror, imapsync.Options{Password: s.Pass}, interval, changed)
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-ready
	waitFor(t, 2*interval, func() bool { return hits(t, st, word(4)) == 1 }, "first 5 messages")
	start := time.Now()
	appendN(t, c, "INBOX", 5, 25)
	waitFor(t, interval+2*time.Second, func() bool {
		for i := 5; i < 25; i++ {
			if hits(t, st, word(i)) != 1 {
				return false
			}
		}
		return true
	}, "20 messages APPENDed while watch runs")
	t.Logf("20 APPENDed messages all searchable %.2f s after the first APPEND (interval %v; Dovecot offers IDLE)", time.Since(start).Seconds(), interval)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not stop within 5 s")
	}
	for i := 0; i < 25; i++ {
		if n := hits(t, st, word(i)); n != 1 {
			t.Errorf("message %d: %d hits, want 1", i, n)
		}
	}
	after := seenFlags(t, c, "INBOX")
	for uid, seen := range after {
		if want := (uid-1)%3 == 0; seen != want {
			t.Errorf("UID %d: \\Seen = %v after watch, want %v as APPENDed", uid, seen, want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func waitFor(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSyncRefusesPlaintextWithoutInsecure: imap:// to a server that offers no
// STARTTLS is refused unless --insecure says plaintext on loopback is meant.
func TestSyncRefusesPlaintextWithoutInsecure(t *testing.T) {
	s := dovecottest.Start(t)
	tg := target(s, "INBOX")
	tg.Insecure = false
	_, err := imapsync.Sync(context.Background(), tg, filepath.Join(t.TempDir(), "m"), imapsync.Options{Password: s.Pass})
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("plaintext without --insecure: %v", err)
	}
}
