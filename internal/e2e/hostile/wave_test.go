//go:build linux

package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Hostile inputs against what the fourth wave added (issues 37, 38, 40): IMAP
// sync against a loopback server of the test's own that speaks hostile IMAP,
// watch over a folder of traps, MCP resources with forged URIs and cursors,
// and the new ingest readers (vCard, Google Contacts CSV) with inputs shaped to
// make a parser quadratic or unbounded.

// imapScript is a hostile IMAP server's behaviour: greet writes the greeting
// (nil: the standard one), answer answers one tagged command (nil: the
// standard answer of a mailbox holding msg as UID 1).
type imapScript struct {
	greet    func(w *bufio.Writer)
	validity func() uint32 // UIDVALIDITY on EXAMINE
	fetch    func(w *bufio.Writer, tag string)
	search   func(w *bufio.Writer, tag string)
	msg      string
	size     int64 // the RFC822.SIZE the server claims (0: the message's)
}

// hostileMessage is the one message the scripted mailbox holds.
const hostileMessage = "From: alice@example.org\r\nTo: bob@example.org\r\nSubject: Hostile sync\r\n" +
	"Message-ID: <hostile-1@example.org>\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\n\r\n" +
	"The only message of this mailbox, about zanzibarite.\r\n"

// startIMAP serves s on a loopback port until the test ends; it returns the
// port and counts the connections.
func startIMAP(t *testing.T, s imapScript) (port int, conns *int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	})
	if s.msg == "" {
		s.msg = hostileMessage
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			open = append(open, c)
			mu.Unlock()
			go serveIMAP(c, s)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, &n
}

func serveIMAP(c net.Conn, s imapScript) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := bufio.NewWriterSize(c, 1<<16)
	if s.greet != nil {
		s.greet(w)
		w.Flush()
		return
	}
	w.WriteString("* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] hostile IMAP ready\r\n")
	w.Flush()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		tag, cmd := f[0], strings.ToUpper(f[1])
		if cmd == "UID" && len(f) > 2 {
			cmd += " " + strings.ToUpper(f[2])
		}
		switch cmd {
		case "CAPABILITY":
			w.WriteString("* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n" + tag + " OK done\r\n")
		case "LOGIN":
			w.WriteString(tag + " OK logged in\r\n")
		case "SELECT", "EXAMINE":
			v := uint32(7)
			if s.validity != nil {
				v = s.validity()
			}
			fmt.Fprintf(w, "* 1 EXISTS\r\n* 0 RECENT\r\n* OK [UIDVALIDITY %d] ok\r\n* OK [UIDNEXT 2] ok\r\n* FLAGS (\\Seen)\r\n%s OK [READ-ONLY] examined\r\n", v, tag)
		case "UID SEARCH", "SEARCH":
			if s.search != nil {
				s.search(w, tag)
			} else {
				w.WriteString("* SEARCH 1\r\n" + tag + " OK searched\r\n")
			}
		case "UID FETCH", "FETCH":
			if strings.Contains(strings.ToUpper(line), "RFC822.SIZE") && !strings.Contains(strings.ToUpper(line), "BODY") {
				size := int64(len(s.msg))
				if s.size != 0 {
					size = s.size
				}
				fmt.Fprintf(w, "* 1 FETCH (UID 1 RFC822.SIZE %d)\r\n%s OK fetched\r\n", size, tag)
			} else if s.fetch != nil {
				s.fetch(w, tag)
			} else {
				fmt.Fprintf(w, "* 1 FETCH (UID 1 INTERNALDATE \"01-Jan-2024 10:00:00 +0000\" BODY[] {%d}\r\n%s)\r\n%s OK fetched\r\n", len(s.msg), s.msg, tag)
			}
		case "LOGOUT":
			w.WriteString("* BYE bye\r\n" + tag + " OK logged out\r\n")
			w.Flush()
			return
		case "NOOP":
			w.WriteString(tag + " OK noop\r\n")
		default:
			w.WriteString(tag + " BAD unknown command\r\n")
		}
		if w.Flush() != nil {
			return
		}
	}
}

// imapHome is a home whose sync has a password in its environment.
func imapHome(t *testing.T) *home {
	h := newHome(t)
	h.extra = append(h.extra, "OPENHUMAN_IMAP_PASSWORD=hostile")
	return h
}

func imapURL(port int) string { return fmt.Sprintf("imap://tester@127.0.0.1:%d/INBOX", port) }

// storeStatus is status --json's store section: chunks and sources.
func storeStatus(t *testing.T, h *home) (chunks int, sources map[string]int) {
	t.Helper()
	c := runCLI(t, h, 30*time.Second, "status", "--json")
	var st struct {
		Store struct {
			TotalChunks int            `json:"total_chunks"`
			Sources     map[string]int `json:"sources"`
		} `json:"store"`
	}
	if err := json.Unmarshal([]byte(c.stdout.String()), &st); err != nil {
		t.Fatalf("status --json: %v\n%.1000s\n%s", err, c.stdout.String(), c.logTail())
	}
	return st.Store.TotalChunks, st.Store.Sources
}

// Wave 1: the IMAP server accepts the connection and never finishes its
// greeting (a few bytes, then silence). SIGTERM ends sync at once, naming
// the greeting; nothing hangs.
func TestWaveIMAPGreetingNeverEnds(t *testing.T) {
	h := imapHome(t)
	port, _ := startIMAP(t, imapScript{greet: func(w *bufio.Writer) {
		w.WriteString("* OK [CAPABILITY IMAP4rev1")
		w.Flush()
		time.Sleep(time.Minute)
	}})
	c := spawn(t, h, 30*time.Second, false, "sync", "--insecure", imapURL(port))
	c.stdin.Close()
	if c.exited(2 * time.Second) {
		t.Fatalf("sync ended before its greeting came: %s\n%s", c.describe(), c.logTail())
	}
	syscall.Kill(c.cmd.Process.Pid, syscall.SIGTERM)
	start := time.Now()
	ended := c.exited(5 * time.Second)
	t.Logf("sync with a greeting that never ends, SIGTERM after 2 s: %s, %v after the signal\n%s", c.describe(), time.Since(start).Round(time.Millisecond), c.logTail())
	if !ended {
		t.Fatalf("sync did not end within 5 s of SIGTERM while waiting for a greeting: %s", c.describe())
	}
	if c.killedFor() != "" || !strings.Contains(c.logTail(), "greeting") {
		t.Errorf("sync: %s; want an end naming the greeting\n%s", c.describe(), c.logTail())
	}
}

// Wave 2: the server announces a 4 GB message ({4000000000}) and sends bytes
// without end. sync refuses the literal for its size, naming it, in bounded
// memory, keeping nothing of it.
func TestWaveIMAPEndlessLiteral(t *testing.T) {
	h := imapHome(t)
	port, _ := startIMAP(t, imapScript{fetch: func(w *bufio.Writer, tag string) {
		w.WriteString("* 1 FETCH (UID 1 INTERNALDATE \"01-Jan-2024 10:00:00 +0000\" BODY[] {4000000000}\r\n")
		chunk := []byte(strings.Repeat("x", 1<<16))
		for i := 0; i < (4000000000 >> 16); i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}})
	c := runCLI(t, h, 60*time.Second, "sync", "--insecure", imapURL(port))
	t.Logf("sync of a 4 GB literal: %s\n%s", c.describe(), c.logTail())
	if c.killedFor() != "" || c.peakMiB() > 256 {
		t.Fatalf("sync of an endless literal: %s (bound 256 MiB, 60 s)", c.describe())
	}
	if c.exitCode() == 0 || !strings.Contains(c.logTail(), "4000000000") {
		t.Errorf("sync of a 4 GB literal: exit %d; want a failure naming its size\n%s", c.exitCode(), c.logTail())
	}
	if left, _ := filepath.Glob(filepath.Join(h.workspace(), "imap", "*", "*", "*", "*")); len(left) != 0 {
		t.Errorf("the mirror keeps part of the refused message: %v", left)
	}
}

// Wave 2b: the server holds one message of 100 MiB by its RFC822.SIZE. sync
// names it as skipped for its size and never asks for its body; the sync
// itself succeeds.
func TestWaveIMAPOversizedMessageSkipped(t *testing.T) {
	h := imapHome(t)
	port, _ := startIMAP(t, imapScript{size: 100 << 20, fetch: func(w *bufio.Writer, tag string) {
		w.WriteString(tag + " NO the body of the oversized message was asked for\r\n")
	}})
	c := runCLI(t, h, 60*time.Second, "sync", "--insecure", imapURL(port))
	t.Logf("sync of a mailbox with a 100 MiB message: %s\n%s", c.describe(), c.logTail())
	if c.exitCode() != 0 || !strings.Contains(c.logTail(), "message skipped") || !strings.Contains(c.logTail(), "bytes=104857600") {
		t.Errorf("sync of a 100 MiB message: exit %d; want success naming the message as skipped for its size\n%s", c.exitCode(), c.logTail())
	}
}

// Wave 3: the server answers UID SEARCH with one response line of 100 MB
// (50 million UIDs). sync ends with an error naming the line, in bounded
// memory and time.
func TestWaveIMAPHundredMegabyteLine(t *testing.T) {
	h := imapHome(t)
	port, _ := startIMAP(t, imapScript{search: func(w *bufio.Writer, tag string) {
		w.WriteString("* SEARCH")
		chunk := []byte(strings.Repeat(" 1", 1<<15))
		for n := 0; n < 100<<20; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.WriteString("\r\n" + tag + " OK searched\r\n")
	}})
	c := runCLI(t, h, 60*time.Second, "sync", "--insecure", imapURL(port))
	t.Logf("sync with a 100 MB SEARCH line: %s\n%s", c.describe(), c.logTail())
	if c.killedFor() != "" || c.peakMiB() > 512 {
		t.Fatalf("sync with a 100 MB response line: %s (bound 512 MiB, 60 s)", c.describe())
	}
	if c.exitCode() == 0 || !strings.Contains(c.logTail(), "line") {
		t.Errorf("sync with a 100 MB response line: exit %d; want a failure naming the line\n%s", c.exitCode(), c.logTail())
	}
}

// Wave 4: the server's UIDVALIDITY changes on every EXAMINE (as if the
// mailbox were rebuilt each time). Three syncs read the mailbox again each
// time and store its one message once: one source, the same chunks, one
// file in the mirror.
func TestWaveIMAPUIDValidityChangesEverySelect(t *testing.T) {
	h := imapHome(t)
	var mu sync.Mutex
	v := uint32(100)
	port, _ := startIMAP(t, imapScript{validity: func() uint32 { mu.Lock(); defer mu.Unlock(); v++; return v }})
	var first int
	for i := 0; i < 3; i++ {
		c := runCLI(t, h, 60*time.Second, "sync", "--insecure", imapURL(port))
		if c.exitCode() != 0 {
			t.Fatalf("sync %d: %s\n%s", i+1, c.describe(), c.logTail())
		}
		if i > 0 && !strings.Contains(c.logTail(), "UIDVALIDITY changed") {
			t.Errorf("sync %d does not say the UIDVALIDITY changed:\n%s", i+1, c.logTail())
		}
		chunks, sources := storeStatus(t, h)
		t.Logf("sync %d: %d chunks, sources %v", i+1, chunks, sources)
		total := 0
		for _, n := range sources {
			total += n
		}
		if chunks == 0 || total != 1 {
			t.Fatalf("after sync %d: %d chunks, sources %v; want the one message as one source", i+1, chunks, sources)
		}
		if i == 0 {
			first = chunks
		} else if chunks != first {
			t.Errorf("after sync %d: %d chunks, after the first %d: the message is stored twice", i+1, chunks, first)
		}
	}
	files, _ := filepath.Glob(filepath.Join(h.workspace(), "imap", "*", "*", "cur", "*"))
	if len(files) != 1 {
		t.Errorf("the mirror holds %d files after three revalidations, want 1: %v", len(files), files)
	}
}

// Wave 5: watch over a folder of traps (a symbolic-link loop, links that point
// at each other, a FIFO no one writes, a link to /dev/zero) and, as paths of
// their own, the FIFO and /dev/zero. The one note is stored, every trap is
// named as skipped, and SIGTERM ends watch at once. Then 2,000 files created
// in one burst are all read, each once.
func TestWaveWatchTraps(t *testing.T) {
	h := newHome(t)
	dir := filepath.Join(h.dir, "notes")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "note.md"), []byte("# Note\n\nThe zanzibarite note.\n"), 0o644)
	os.Symlink(".", filepath.Join(dir, "loop"))
	os.Symlink("b", filepath.Join(dir, "a"))
	os.Symlink("a", filepath.Join(dir, "b"))
	os.Symlink("/dev/zero", filepath.Join(dir, "zero.md"))
	fifo := filepath.Join(h.dir, "pipe.md")
	mkfifo(t, fifo)
	mkfifo(t, filepath.Join(dir, "inner-pipe.md"))
	c := spawn(t, h, 90*time.Second, false, "watch", dir, fifo, "/dev/zero")
	c.stdin.Close()
	waitLog := func(what string, d time.Duration) bool {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if strings.Contains(c.stderr.String(), what) {
				return true
			}
			if c.exited(50 * time.Millisecond) {
				return false
			}
		}
		return false
	}
	if !waitLog("first pass", 30*time.Second) {
		t.Fatalf("watch over the traps: no first pass: %s\n%s", c.describe(), c.logTail())
	}
	for _, trap := range []string{"loop", "/a:", "/b:", "zero.md", "inner-pipe.md", fifo + ":", "/dev/zero:"} {
		if !strings.Contains(c.stderr.String(), "skipped: ") || !strings.Contains(c.stderr.String(), trap) {
			t.Errorf("watch does not name %s as skipped:\n%s", trap, c.logTail())
		}
	}
	// 2,000 files in one burst.
	const burst = 2000
	for i := 0; i < burst; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("burst-%04d.md", i)), []byte(fmt.Sprintf("# Burst %d\n\nburstword%d\n", i, i)), 0o644)
	}
	deadline := time.Now().Add(60 * time.Second)
	added := 0
	for time.Now().Before(deadline) && added < burst {
		added = 0
		for _, l := range strings.Split(c.stderr.String(), "\n") {
			if strings.Contains(l, "watch: batch") {
				var n int
				if i := strings.Index(l, " added="); i >= 0 {
					fmt.Sscanf(l[i+len(" added="):], "%d", &n)
				}
				added += n
			}
		}
		if c.exited(200 * time.Millisecond) {
			break
		}
	}
	t.Logf("watch: %d of %d burst files read in batches; peak %.0f MiB", added, burst, c.peakMiB())
	if added != burst {
		t.Errorf("watch read %d files of a burst of %d\n%s", added, burst, c.logTail())
	}
	syscall.Kill(c.cmd.Process.Pid, syscall.SIGTERM)
	if !c.exited(5 * time.Second) {
		t.Fatalf("watch did not end within 5 s of SIGTERM: %s", c.describe())
	}
	t.Logf("watch over traps: %s", c.describe())
	if c.killedFor() != "" || c.peakMiB() > 512 {
		t.Errorf("watch over traps: %s (bound 512 MiB)", c.describe())
	}
	chunks, sources := storeStatus(t, h)
	if sources["document"] != burst+1 || chunks != burst+1 {
		t.Errorf("after the burst: %d chunks, sources %v; want %d documents, each once", chunks, sources, burst+1)
	}
}

// Wave 6: MCP resources over stdio with hostile URIs (path climbing, a 1 MiB
// id, percent-encoded NUL and control characters, other schemes), forged
// resources/list cursors, and 64 reads in flight at once. Each is answered
// with a JSON-RPC error (or a page) naming the problem without echoing the
// whole input or any control character, nothing outside the store is read,
// memory stays bounded, and the server still answers a real read afterwards.
func TestWaveResourcesHostileURIs(t *testing.T) {
	h := newHome(t)
	docs := filepath.Join(h.dir, "docs")
	os.MkdirAll(docs, 0o755)
	os.WriteFile(filepath.Join(docs, "note.md"), []byte("# Resource note\n\nThe zanzibarite resource note.\n"), 0o644)
	if c := runCLI(t, h, 60*time.Second, "ingest", docs); c.exitCode() != 0 {
		t.Fatalf("ingest: %s\n%s", c.describe(), c.logTail())
	}
	c, why := startMCP(t, h, 90*time.Second, 30*time.Second, "resource-forger")
	if why != "" {
		t.Fatal(why)
	}
	list, why := c.call("resources/list", map[string]any{}, 20*time.Second)
	if list == nil || list["error"] != nil {
		t.Fatalf("resources/list: %v %s", list, why)
	}
	res, _ := list["result"].(map[string]any)
	items, _ := res["resources"].([]any)
	if len(items) == 0 {
		t.Fatalf("resources/list lists nothing after an ingest: %v", list)
	}
	realURI, _ := items[0].(map[string]any)["uri"].(string)
	base := c.resetPeak()

	hostile := []string{
		"memory://chunk/../../etc/passwd",
		"memory://source/../../../../etc/passwd",
		"memory://chunk/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
		"memory://chunk/" + strings.Repeat("9", 1<<20),
		"memory://source/" + strings.Repeat("A", 1<<20),
		"memory://chunk/1%00",
		"memory://source/doc%00%0a%1b[2J",
		"memory://source/\x1b]0;owned\x07\x00",
		"memory://chunk/-1",
		"memory://chunk/18446744073709551617",
		"file:///etc/passwd",
		"memory://source/",
		"memory://",
		"",
	}
	for _, uri := range hostile {
		r, why := c.call("resources/read", map[string]any{"uri": uri}, 20*time.Second)
		if r == nil {
			t.Fatalf("resources/read %.60q: %s\n%s", uri, why, c.logTail())
		}
		b, _ := json.Marshal(r)
		if r["error"] == nil {
			t.Errorf("resources/read %.60q answered without an error: %.300s", uri, b)
		}
		if strings.Contains(string(b), "root:") {
			t.Errorf("resources/read %.60q answered with /etc/passwd: %.300s", uri, b)
		}
		if len(b) > 64<<10 {
			t.Errorf("resources/read %.60q: the answer is %d bytes (echoes the input?)", uri, len(b))
		}
		if strings.ContainsAny(errorMessage(r), "\x00\x07\x1b") {
			t.Errorf("resources/read %.60q: the error message carries control characters: %.300s", uri, b)
		}
	}
	for _, cursor := range []string{"forged", "-1", "99999999999999999999", strings.Repeat("Z", 1<<20), "\x00\x1b[2J", "eyJvZmZzZXQiOi0xfQ=="} {
		r, why := c.call("resources/list", map[string]any{"cursor": cursor}, 20*time.Second)
		if r == nil {
			t.Fatalf("resources/list with cursor %.40q: %s", cursor, why)
		}
		b, _ := json.Marshal(r)
		if len(b) > 64<<10 || strings.ContainsAny(errorMessage(r), "\x00\x1b") {
			t.Errorf("resources/list with cursor %.40q: %d bytes: %.300s", cursor, len(b), b)
		}
		if r["error"] == nil {
			if res, _ := r["result"].(map[string]any); res == nil {
				t.Errorf("resources/list with cursor %.40q: neither a page nor an error: %.300s", cursor, b)
			}
		}
	}
	// 64 reads in flight at once: each answered (a result or a refusal).
	first := c.nextID + 1
	for i := 0; i < 64; i++ {
		c.nextID++
		c.send(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": "resources/read", "params": map[string]any{"uri": realURI}})
	}
	ok, refused := 0, 0
	for id := first; id <= c.nextID; id++ {
		r, why := c.await(id, 30*time.Second)
		if r == nil {
			t.Fatalf("read %d of 64 in flight: %s", id-first+1, why)
		}
		if r["error"] != nil {
			refused++
		} else {
			ok++
		}
	}
	t.Logf("64 reads in flight: %d answered, %d refused; %d hostile URIs and 6 forged cursors; resident %s → peak %.0f MiB",
		ok, refused, len(hostile), mib(base), c.peakMiB())
	if ok == 0 {
		t.Errorf("none of 64 reads in flight was answered")
	}
	r, why := c.call("resources/read", map[string]any{"uri": realURI}, 20*time.Second)
	if r == nil || r["error"] != nil || !strings.Contains(fmt.Sprint(r), "zanzibarite") {
		t.Errorf("a real read after the hostile ones: %v %s", r, why)
	}
	if c.killedFor() != "" || c.peakMiB() > 512 {
		t.Errorf("mcp under hostile resource requests: %s (bound 512 MiB)", c.describe())
	}
}

// errorMessage is the message of a JSON-RPC error answer, decoded ("" when
// the answer is not an error).
func errorMessage(r map[string]any) string {
	e, _ := r["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// Wave 7: the new ingest readers (issue 40) against inputs shaped to make a
// parser quadratic or unbounded: a vCard whose NOTE is folded over 100,000
// continuation lines, a Google Contacts CSV with 10,000 columns over 300 rows,
// and an IRC log whose second line is 60 MiB (under the 64 MiB bound). Ingest
// ends in bounded time and memory, keeps all 301 contacts, and names the log
// with its reason.
func TestWaveIngestReadersHostileShapes(t *testing.T) {
	h := newHome(t)
	docs := filepath.Join(h.dir, "docs")
	os.MkdirAll(docs, 0o755)

	var vcf strings.Builder
	vcf.WriteString("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Folded Person\r\nEMAIL:folded@example.org\r\nNOTE:start")
	for i := 0; i < 300000; i++ {
		vcf.WriteString("\r\n  fold")
	}
	vcf.WriteString("\r\nEND:VCARD\r\n")
	os.WriteFile(filepath.Join(docs, "folded.vcf"), []byte(vcf.String()), 0o644)

	f, _ := os.Create(filepath.Join(docs, "google.csv"))
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("First Name,Last Name,E-mail 1 - Value")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(w, ",Custom %d", i)
	}
	w.WriteString("\n")
	for r := 0; r < 300; r++ {
		fmt.Fprintf(w, "Wide%d,Columns,wide%d@example.org", r, r)
		for i := 0; i < 10000; i++ {
			w.WriteString(",v")
		}
		w.WriteString("\n")
	}
	w.Flush()
	f.Close()

	f, _ = os.Create(filepath.Join(docs, "channel.log"))
	w = bufio.NewWriterSize(f, 1<<20)
	w.WriteString("[12:00] <alice> the channel opens\n[12:01] <mallory> ")
	word := strings.Repeat("flood ", 1<<10)
	for n := 0; n < 60<<20; n += len(word) {
		w.WriteString(word)
	}
	w.WriteString("\n[12:02] <alice> zanzibarite after the flood\n")
	w.Flush()
	f.Close()

	c := runCLI(t, h, 60*time.Second, "ingest", docs)
	t.Logf("ingest of the hostile shapes: %s\n%s", c.describe(), c.logTail())
	if c.killedFor() != "" || c.peakMiB() > 1024 {
		t.Fatalf("ingest of the hostile shapes: %s (bound 1 GiB, 60 s)", c.describe())
	}
	out := c.logTail()
	if !strings.Contains(out, "301 contacts") {
		t.Errorf("ingest does not keep the folded vCard's contact and the CSV's 300 rows (301 contacts):\n%s", out)
	}
	if !strings.Contains(out, "channel.log: ") {
		t.Errorf("the 60 MiB-line IRC log is neither read nor named:\n%s", out)
	}
	if c.exitCode() != 0 {
		t.Errorf("ingest of the hostile shapes exited %d", c.exitCode())
	}
}
