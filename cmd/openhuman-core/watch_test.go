package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// watchProc is a running `openhuman-core watch`.
type watchProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	ready  chan struct{}
	exited chan struct{}
}

// startWatch starts `watch args...` and waits for its first pass or catch-up.
func startWatch(t *testing.T, e *cliEnv, args ...string) *watchProc {
	t.Helper()
	cmd := exec.Command(e.bin, append([]string{"watch"}, args...)...)
	cmd.Env = e.environ()
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &watchProc{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			w.mu.Lock()
			w.stderr.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if strings.Contains(sc.Text(), "watch: watching") {
				once.Do(func() { close(w.ready) })
			}
		}
		io.Copy(io.Discard, pr)
		cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-w.exited
	})
	select {
	case <-w.ready:
	case <-w.exited:
		t.Fatalf("watch exited at start:\n%s", w.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("watch did not start in 30 s:\n%s", w.log())
	}
	return w
}

func (w *watchProc) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stderr.String()
}

// cliHits counts the hits of `search --json word` whose text holds word.
func cliHits(t *testing.T, e *cliEnv, word string) int {
	t.Helper()
	out, errOut, code := e.run("", "search", "--json", "-k", "50", word)
	if code != 0 {
		if strings.Contains(errOut, "no memory tree") {
			return 0
		}
		t.Fatalf("search %s: exit %d\n%s", word, code, errOut)
	}
	var res abi.SearchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("search --json: %v\n%s", err, out)
	}
	n := 0
	for _, h := range res.Chunks {
		text := h.Snippet
		for _, m := range h.Messages {
			text += "\n" + m.Text
		}
		if strings.Contains(text, word) {
			n++
		}
	}
	return n
}

// waitCLIHits waits up to 10 s (the acceptance bound) for word to have want hits
// and returns how long it took.
func waitCLIHits(t *testing.T, e *cliEnv, w *watchProc, word string, want int, what string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		n := cliHits(t, e, word)
		if n == want {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s: %q has %d hits after 10 s, want %d\nwatch's stderr:\n%s", what, word, n, want, w.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func watchMail(id, subject, body string, day int) string {
	return fmt.Sprintf("From: Ann Lee <ann@example.org>\nTo: bob@example.org\nSubject: %s\nDate: Mon, %02d Nov 2026 09:00:00 +0000\nMessage-ID: <%s>\n\n%s\n", subject, day, id, body)
}

// TestWatchCommandKeepsMemoryCurrent is the first acceptance point end to end:
// `watch` over a notes folder, a Maildir and an mbox; a new note, an edit, a
// deletion, a Maildir delivery and an mbox append are each found by `search`
// within 10 s; after kill -9 and a restart a note written meanwhile is caught up
// and nothing is stored twice; SIGINT ends it cleanly.
func TestWatchCommandKeepsMemoryCurrent(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	notes, maildir, mbox := filepath.Join(dir, "notes"), filepath.Join(dir, "Maildir"), filepath.Join(dir, "inbox.mbox")
	writeFile(t, filepath.Join(notes, "plan.md"), "# Plan\n\nThe bramblegate repairs start in May.\n")
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(maildir, sub), 0o755)
	}
	writeFile(t, filepath.Join(maildir, "cur", "1790000000.1.host:2,S"), watchMail("a1@example.org", "Hello", "The thornbush delivery is late.", 2))
	writeFile(t, mbox, "From ann@example.org Mon Nov  2 09:00:00 2026\n"+watchMail("b1@example.org", "Accounts", "The ledgerbook is balanced.", 3)+"\n")

	w := startWatch(t, e, notes, maildir, mbox)
	// "watching" is logged before the first pass: wait for its words.
	for _, word := range []string{"bramblegate", "thornbush", "ledgerbook"} {
		waitCLIHits(t, e, w, word, 1, "first pass")
	}
	var took []string
	note := func(what string, d time.Duration) { took = append(took, fmt.Sprintf("%s %.2f s", what, d.Seconds())) }

	writeFile(t, filepath.Join(notes, "idea.md"), "# Idea\n\nA cobblestone path by the pond.\n")
	note("new note", waitCLIHits(t, e, w, "cobblestone", 1, "new note"))

	writeFile(t, filepath.Join(notes, "plan.md"), "# Plan\n\nThe willowgate repairs start in May.\n")
	note("edit", waitCLIHits(t, e, w, "willowgate", 1, "edited note"))
	waitCLIHits(t, e, w, "bramblegate", 0, "edited note's old words")

	os.Remove(filepath.Join(notes, "idea.md"))
	note("deletion", waitCLIHits(t, e, w, "cobblestone", 0, "deleted note"))

	writeFile(t, filepath.Join(maildir, "tmp", "1790000200.2.host"), watchMail("a2@example.org", "Gate", "The hingepin arrived.", 4))
	os.Rename(filepath.Join(maildir, "tmp", "1790000200.2.host"), filepath.Join(maildir, "new", "1790000200.2.host"))
	note("Maildir delivery", waitCLIHits(t, e, w, "hingepin", 1, "Maildir delivery"))

	f, err := os.OpenFile(mbox, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, "From ann@example.org Mon Nov  2 09:00:00 2026\n"+watchMail("b2@example.org", "Stock", "The barleycorn count is done.", 5)+"\n")
	f.Close()
	note("mbox append", waitCLIHits(t, e, w, "barleycorn", 1, "mbox append"))
	t.Logf("write to search hit: %s", strings.Join(took, ", "))

	// kill -9, a note written meanwhile, a restart.
	w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
	writeFile(t, filepath.Join(notes, "meanwhile.md"), "# Meanwhile\n\nThe flintstone wall is finished.\n")
	w = startWatch(t, e, notes, maildir, mbox)
	waitCLIHits(t, e, w, "flintstone", 1, "note written while watch was killed")
	for _, word := range []string{"willowgate", "thornbush", "hingepin", "ledgerbook", "barleycorn"} {
		if n := cliHits(t, e, word); n != 1 {
			t.Errorf("after kill -9 and restart %q has %d hits, want 1 (nothing stored twice)", word, n)
		}
	}
	st := e.status()
	if st.Store.Sources["document"] != 2 || st.Store.Sources["email"] != 4 {
		t.Errorf("sources after the restart: %v, want 2 documents and 4 mail threads", st.Store.Sources)
	}

	// SIGINT ends it cleanly.
	start := time.Now()
	w.cmd.Process.Signal(os.Interrupt)
	select {
	case <-w.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("watch still running 10 s after SIGINT\n%s", w.log())
	}
	t.Logf("watch stopped %.2f s after SIGINT", time.Since(start).Seconds())
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("watch exited %d after SIGINT\n%s", code, w.log())
	}
	if !strings.Contains(w.log(), `msg="watch: stopped"`) {
		t.Errorf("no closing line after SIGINT:\n%s", w.log())
	}
}

// TestServeWatch: `serve --watch` keeps the [[sources]] of config.toml current
// while it serves.
func TestServeWatch(t *testing.T) {
	e := newCLIEnv(t)
	notes := filepath.Join(t.TempDir(), "notes")
	writeFile(t, filepath.Join(notes, "first.md"), "# First\n\nThe millstone turns slowly.\n")
	writeFile(t, filepath.Join(e.ohome, "config.toml"), fmt.Sprintf("[[sources]]\npath = %q\n\n[watch]\ndebounce_ms = 100\n", notes))
	const token = "watch-test-token-0123456789abcdef"
	cmd := exec.Command(e.bin, "serve", "--watch", "--addr", "127.0.0.1:0")
	cmd.Env = append(e.environ(), "OPENHUMAN_CORE_TOKEN="+token)
	stderr := &lineSignal{want: "watch: first pass", ready: make(chan struct{})}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	select {
	case <-stderr.ready:
	case <-exited:
		t.Fatalf("serve --watch exited:\n%s", stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve --watch: no first pass in 60 s:\n%s", stderr.String())
	}
	w := &watchProc{}
	m := regexp.MustCompile(`listening on http://(\S+)`).FindStringSubmatch(stderr.String())
	for m == nil {
		time.Sleep(50 * time.Millisecond)
		m = regexp.MustCompile(`listening on http://(\S+)`).FindStringSubmatch(stderr.String())
	}
	// rpcHits asks the running server (not a fresh process) for word.
	rpcHits := func(word string) int {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":%q,"k":10}}`, word)
		req, _ := http.NewRequest("POST", "http://"+m[1]+"/rpc", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return strings.Count(string(raw), word)
	}
	if n := cliHits(t, e, "millstone"); n != 1 {
		t.Fatalf("first pass under serve --watch: %d hits\n%s", n, stderr.String())
	}
	if rpcHits("millstone") == 0 || rpcHits("waterwheel") != 0 {
		t.Fatalf("serve's memory_tree_search before the second note: millstone %d, waterwheel %d", rpcHits("millstone"), rpcHits("waterwheel"))
	}
	writeFile(t, filepath.Join(notes, "second.md"), "# Second\n\nThe waterwheel needs grease.\n")
	start := time.Now()
	for cliHits(t, e, "waterwheel") != 1 || rpcHits("waterwheel") == 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("note written under serve --watch not found in 10 s\n%s%s", stderr.String(), w.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("serve --watch still running 15 s after SIGINT\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "listening on") {
		t.Errorf("serve did not serve beside the watch loop:\n%s", stderr.String())
	}
}

// stemSafe is a word unique to n that no stemmer folds into another's.
func stemSafe(prefix string, n int) string {
	return fmt.Sprintf("%s%c%c%cq", prefix, 'a'+n%26, 'a'+n/26%26, 'a'+n/676%26)
}

// TestWatchSurvivesKill9AtAnyMoment: watch is killed with SIGKILL at varied
// moments (during its catch-up, mid-batch, idle) while notes are written, edited
// and deleted, mail delivered to a Maildir and appended to an mbox; after a last
// start everything is caught up, each text stored once, the deleted gone.
func TestWatchSurvivesKill9AtAnyMoment(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	notes, maildir, mbox := filepath.Join(dir, "notes"), filepath.Join(dir, "Maildir"), filepath.Join(dir, "box.mbox")
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(maildir, sub), 0o755)
	}
	writeFile(t, mbox, "")
	live := map[string]bool{} // word -> should be found
	n := 0
	note := func() {
		w := stemSafe("nkw", n)
		writeFile(t, filepath.Join(notes, fmt.Sprintf("n%03d.md", n)), "# Note\n\nAbout the "+w+" today.\n")
		live[w] = true
		n++
	}
	for range 10 {
		note()
	}
	mails := 0
	delays := []time.Duration{0, 150 * time.Millisecond, 350 * time.Millisecond, 600 * time.Millisecond, 50 * time.Millisecond, 1200 * time.Millisecond}
	var all []*watchProc
	for round, d := range delays {
		w := startWatch(t, e, notes, maildir, mbox)
		all = append(all, w)
		for range 4 {
			note()
		}
		// Edit one note, delete another.
		edit := stemSafe("nkw", round*3)
		if live[edit] {
			live[edit] = false
			nw := stemSafe("edw", round)
			writeFile(t, filepath.Join(notes, fmt.Sprintf("n%03d.md", round*3)), "# Note\n\nNow about the "+nw+".\n")
			live[nw] = true
		}
		del := round*3 + 1
		if p := filepath.Join(notes, fmt.Sprintf("n%03d.md", del)); fileExists(p) {
			os.Remove(p)
			for word := range live {
				if word == stemSafe("nkw", del) {
					live[word] = false
				}
			}
		}
		mw := stemSafe("mdw", mails)
		name := fmt.Sprintf("17900%05d.%d.host", mails, mails)
		writeFile(t, filepath.Join(maildir, "tmp", name), watchMail(fmt.Sprintf("md%d@example.org", mails), "Delivery", "Carrying the "+mw+".", 2))
		os.Rename(filepath.Join(maildir, "tmp", name), filepath.Join(maildir, "new", name))
		live[mw] = true
		bw := stemSafe("mbw", mails)
		f, err := os.OpenFile(mbox, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(f, "From ann@example.org Mon Nov  2 09:00:00 2026\n"+watchMail(fmt.Sprintf("mb%d@example.org", mails), "Append", "Adding the "+bw+".", 3)+"\n")
		f.Close()
		live[bw] = true
		mails++
		time.Sleep(d)
		w.cmd.Process.Signal(syscall.SIGKILL)
		<-w.exited
	}
	w := startWatch(t, e, notes, maildir, mbox)
	deadline := time.Now().Add(120 * time.Second) // a bound on catching up, generous for a loaded machine (each check spawns a search)
	for word, want := range live {
		wantHits := 0
		if want {
			wantHits = 1
		}
		for {
			got := cliHits(t, e, word)
			if got == wantHits {
				break
			}
			if time.Now().After(deadline) {
				for i, x := range all {
					t.Logf("round %d:\n%s", i, x.log())
				}
				t.Fatalf("%q: %d hits after the kills and a restart, want %d\n%s", word, got, wantHits, w.log())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	docs := 0
	for word, ok := range live {
		if ok && (strings.HasPrefix(word, "nkw") || strings.HasPrefix(word, "edw")) {
			docs++
		}
	}
	st := e.status()
	if st.Store.Sources["document"] != docs || st.Store.Sources["email"] != 2*mails {
		t.Errorf("after %d kills: sources %v, want %d documents and %d mail threads", len(delays), st.Store.Sources, docs, 2*mails)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestWatchBadInput: a path that does not exist, or nothing to watch, is a clear
// error at start (exit 2), not a loop that waits forever.
func TestWatchBadInput(t *testing.T) {
	e := newCLIEnv(t)
	missing := filepath.Join(t.TempDir(), "no-such-notes")
	_, errOut, code := e.run("", "watch", missing)
	if code != 2 || !strings.Contains(errOut, "no-such-notes") || !strings.Contains(errOut, "no such file") {
		t.Errorf("watch of a missing path: exit %d\n%s", code, errOut)
	}
	_, errOut, code = e.run("", "watch")
	if code != 2 || !strings.Contains(errOut, "[[sources]]") {
		t.Errorf("watch with nothing to watch: exit %d\n%s", code, errOut)
	}
	_, errOut, code = e.run("", "sync", "imaps://user:secret@imap.example.org/INBOX")
	if code != 2 || strings.Contains(errOut, "secret") {
		t.Errorf("sync with a password in the URL: exit %d\n%s", code, errOut)
	}
}
