//go:build linux

package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/policy"
)

var memRead = []string{"memory.read"}

const (
	// deadlineSlack is how long past its deadline a call may be answered (the
	// issue: no call outlives its deadline by more than 1 s).
	deadlineSlack = time.Second
	// callBudgetKB is what one call may add to mcp's resident size beyond its
	// module's compiled code: 64 MiB + memory_mib (4 MiB here).
	callBudgetKB = (64 + 4) << 10
)

// listEntry is one module of `tools list --json` (schema openhuman.tools/1,
// unchanged since 3656465).
type listEntry struct {
	Module string   `json:"module"`
	File   string   `json:"file"`
	Tools  []string `json:"tools"`
	State  string   `json:"state"`
	Error  string   `json:"error"`
}

// toolsList runs `tools list --json` and returns its modules by file name.
func toolsList(t *testing.T, h *home, limit time.Duration) (map[string]listEntry, *child) {
	t.Helper()
	c := runCLI(t, h, limit, "tools", "list", "--json", "--wait", "60s")
	var out struct {
		Modules []listEntry `json:"modules"`
	}
	json.Unmarshal([]byte(c.stdout.String()), &out)
	m := map[string]listEntry{}
	for _, e := range out.Modules {
		m[filepath.Base(e.File)] = e
		if e.File == "" {
			m[e.Module] = e
		}
	}
	return m, c
}

// audit runs `tools audit FILE` (text unless args say otherwise).
func auditFile(t *testing.T, h *home, limit time.Duration, file string, args ...string) *child {
	t.Helper()
	return runCLI(t, h, limit, append([]string{"tools", "audit", filepath.Join(h.tools(), file)}, args...)...)
}

// Finding 1: oh_alloc calling the host while the host delivers a reply.
// Every call is answered within its 1 s deadline + 1 s, as a failure naming
// oh_alloc, and mcp's resident size grows by less than 64 MiB + memory_mib.
// Base: the first call recursed in the host past its deadline to gigabytes.
func TestFinding01ReentrantAlloc(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "nest.wasm", raw: wasmgen.Nesting(wasmgen.FromAllocReply), tool: "nest", caps: memRead, pinned: true})
	c, why := startMCP(t, h, 90*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	if r, why := c.call("tools/list", map[string]any{}, 20*time.Second); r == nil {
		t.Fatal(why)
	}
	base := c.resetPeak()
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("nest-%d", i)
		start := time.Now()
		c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": "nest", "arguments": map[string]any{}}})
		r, why := c.await(id, 10*time.Second)
		if r == nil {
			t.Fatalf("call %d: %s", i, why)
		}
		if d := time.Since(start); d > time.Second+deadlineSlack {
			t.Errorf("call %d answered after %v; its deadline is 1 s", i, d)
		}
		if failedText(r) == "" {
			t.Errorf("call %d succeeded: %.500v", i, r)
		}
	}
	grew := c.peakRSS.Load() - base
	t.Logf("VmRSS %s before 5 calls, peak growth %s", mib(base), mib(grew))
	if grew > callBudgetKB {
		t.Errorf("mcp's resident size grew by %s over the calls (bound %s)", mib(grew), mib(callBudgetKB))
	}
	c.stdin.Close()
	c.exited(20 * time.Second)
	seen := 0
	for _, l := range h.auditLines(t) {
		if id, _ := l["request_id"].(string); strings.HasPrefix(id, "nest-") {
			seen++
			if e, _ := l["error"].(string); !strings.Contains(e, "oh_alloc") || len(e) > 4096 {
				t.Errorf("audit line of %s: the error does not name oh_alloc in bounded text (%d bytes): %.300q", id, len(e), e)
			}
		}
	}
	if seen != 5 {
		t.Errorf("%d audit lines for the 5 calls", seen)
	}
	if !strings.Contains(c.stderr.String(), "oh_alloc") {
		t.Errorf("the server log does not name oh_alloc:\n%s", c.logTail())
	}
}

// Finding 2: a start function (and oh_alloc) calling memory_search. `tools
// list` ends in bounded time and memory with the module refused for its start
// function; `tools audit` refuses it too; `mcp` with no call stays small.
// Base: tools list passed 2 GB in 2.5 s, mcp 3.1 GB in 3 s.
func TestFinding02StartFunctionHostCall(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "start.wasm", raw: startAndAlloc(), tool: "start", caps: memRead, pinned: true})
	list, c := toolsList(t, h, 60*time.Second)
	t.Logf("tools list: %s", c.describe())
	if c.killedFor() != "" {
		t.Errorf("tools list: %s", c.describe())
	}
	if e := list["start.wasm"]; e.State != "refused" || !strings.Contains(e.Error, "start function") {
		t.Errorf("tools list: start.wasm %s %q; want refused for its start function", e.State, e.Error)
	}
	if p := c.peakMiB(); p > 512 {
		t.Errorf("tools list peaked at %.0f MiB", p)
	}
	a := auditFile(t, h, 60*time.Second, "start.wasm")
	if a.exitCode() == 0 || !strings.Contains(a.stdout.String(), "start function") {
		t.Errorf("tools audit: exit %d (%s), want a refusal naming the start function:\n%.2000s", a.exitCode(), a.describe(), a.stdout.String())
	}
	m, why := startMCP(t, h, 60*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	time.Sleep(3 * time.Second) // the compile worker's warm instance would run the start function
	if p := m.peakMiB(); p > 512 || m.killedFor() != "" {
		t.Errorf("mcp with no call: %s", m.describe())
	}
	t.Logf("mcp with no call: peak %.0f MiB", m.peakMiB())
}

// Finding 3: modules whose cost is in section entries, not linear memory.
// Under memory_mib = 4, four concurrent calls to each add less than 64 MiB +
// 4 MiB to mcp (they are refused before compiling now, naming the limit).
// Base: loaded, 0.9–3 GB per call for 12 M globals.
func TestFinding03EntryShapes(t *testing.T) {
	h := newHome(t)
	const n = 1_500_000
	h.install(t,
		module{file: "globals.wasm", raw: wasmgen.Entries(wasmgen.ShapeGlobals, n), tool: "globals", caps: memRead, pinned: true},
		module{file: "elems.wasm", raw: wasmgen.Entries(wasmgen.ShapeElems, n), tool: "elems", caps: memRead, pinned: true},
	)
	a := auditFile(t, h, 60*time.Second, "globals.wasm")
	if a.exitCode() == 0 || !strings.Contains(a.stdout.String(), "globals") {
		t.Errorf("tools audit globals.wasm: exit %d (%s), want a refusal naming the globals limit:\n%.1500s", a.exitCode(), a.describe(), a.stdout.String())
	}
	c, why := startMCP(t, h, 90*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	if r, why := c.call("tools/list", map[string]any{}, 20*time.Second); r == nil {
		t.Fatal(why)
	}
	base := c.resetPeak()
	for _, tool := range []string{"globals", "elems"} {
		ids := []int{}
		for i := 0; i < 4; i++ {
			c.nextID++
			ids = append(ids, c.nextID)
			c.send(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": map[string]any{}}})
		}
		for _, id := range ids {
			if r, why := c.await(id, 30*time.Second); r == nil {
				t.Fatalf("%s: %s", tool, why)
			}
		}
	}
	grew := c.peakRSS.Load() - base
	t.Logf("8 calls to %d-entry modules: VmRSS %s before, peak growth %s", n, mib(base), mib(grew))
	if grew > callBudgetKB {
		t.Errorf("mcp's resident size grew by %s (bound %s)", mib(grew), mib(callBudgetKB))
	}
}

// Finding 4: an unpinned 60 MB file in tools/ and a 64 MiB + 1 file given to
// `tools audit`. mcp answers initialize with its resident size under 60 MiB
// above a run without the file; audit refuses the big file from its size.
// Base: the unpinned file was parsed three times (~60 bytes per byte); audit
// of 60 MB passed 3 GB.
func TestFinding04PinBeforeParse(t *testing.T) {
	h0 := newHome(t)
	c0, why := startMCP(t, h0, 60*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	time.Sleep(time.Second)
	ref := c0.peakMiB()
	c0.kill("done")

	h := newHome(t)
	if err := writeGlobals(filepath.Join(h.tools(), "big.wasm"), 12_000_000); err != nil { // 60 MB
		t.Fatal(err)
	}
	h.writePolicy(t, "")
	c, why := startMCP(t, h, 60*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatalf("%s (%s)", why, c.describe())
	}
	time.Sleep(time.Second)
	t.Logf("mcp peak %.0f MiB with an unpinned 60 MB file, %.0f MiB without", c.peakMiB(), ref)
	if c.peakMiB() > ref+60+16 {
		t.Errorf("an unpinned 60 MB file took mcp to %.0f MiB (%.0f without it)", c.peakMiB(), ref)
	}
	c.kill("done")

	if err := writeGlobals(filepath.Join(h.tools(), "over.wasm"), (64<<20)/5+1000); err != nil { // just over 64 MiB
		t.Fatal(err)
	}
	a := auditFile(t, h, 60*time.Second, "over.wasm")
	t.Logf("tools audit of 64 MiB + 1 KiB: %s", a.describe())
	if code := a.exitCode(); code == 0 || a.killedFor() != "" || a.peakMiB() > 256 {
		t.Errorf("tools audit of a file over 64 MiB: exit %d, %s; want a refusal in bounded memory", code, a.describe())
	}
	if out := a.stdout.String() + a.stderr.String(); !strings.Contains(out, "MiB") {
		t.Errorf("tools audit does not say the size is the reason:\n%.1500s", out)
	}
}

// embedCounter is a loopback OpenAI-compatible embeddings endpoint counting requests.
func embedCounter(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		var data []string
		for i := range req.Input {
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[1,0,0,0]}`, i))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","model":"m","data":[%s]}`, strings.Join(data, ","))
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// ingestFixture writes a small document and ingests it.
func ingestFixture(t *testing.T, h *home) {
	t.Helper()
	docs := filepath.Join(h.dir, "docs")
	os.MkdirAll(docs, 0o755)
	os.WriteFile(filepath.Join(docs, "phoenix.md"), []byte("# Phoenix launch\n\nThe Phoenix launch slipped two weeks because the payment integration failed review.\n"), 0o644)
	c := runCLI(t, h, 120*time.Second, "ingest", docs)
	if c.exitCode() != 0 {
		t.Fatalf("ingest: %s\n%s", c.describe(), c.logTail())
	}
}

// Finding 5: a memory.read module reaching the network through the
// embedder. One call looping on memory_recall reaches the embedder a bounded
// number of times (the per-call host budget, 256), and `tools audit` names the
// egress. Base: every recall was an embedder request (about 600 a second),
// and audit did not say so.
func TestFinding05EgressThroughEmbedder(t *testing.T) {
	h := newHome(t)
	srv, requests := embedCounter(t)
	h.writeConfig(t, fmt.Sprintf("[memory_tree]\nembedder = \"openai\"\nendpoint = %q\nmodel = \"m\"\ntimeout_ms = 2000\n", srv.URL))
	ingestFixture(t, h)
	h.install(t, module{file: "recaller.wasm", raw: hostLoopOK("memory_recall", `{"query":"phoenix launch","k":5}`, 3000), tool: "recaller", caps: memRead, pinned: true,
		limits: "timeout_ms = 5000\nmemory_mib = 4"})
	a := auditFile(t, h, 60*time.Second, "recaller.wasm")
	if out := a.stdout.String(); !strings.Contains(out, "egress") || !strings.Contains(out, "embedder") {
		t.Errorf("tools audit does not name the egress to the embedder (%s):\n%.2000s", a.describe(), out)
	}
	c, why := startMCP(t, h, 90*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	// Issue 39: the module's own query ("phoenix launch", text the client
	// did not send: it could as well be text read from the store) never
	// reaches the embedder. Base ecfd484: 20 requests (the budget's share).
	before := requests.Load()
	r, d, why := c.toolCall("recaller", map[string]any{}, 20*time.Second)
	if r == nil {
		t.Fatal(why)
	}
	notTheClients := requests.Load() - before
	t.Logf("one call of 3,000 recalls of the module's own text: %d embedder requests in %v (%s)", notTheClients, d.Round(time.Millisecond), failedText(r))
	if notTheClients != 0 {
		t.Errorf("a memory.read module sent text its client did not send to the embedder %d times in one call", notTheClients)
	}
	// When the client asked about it, the same query is the client's text:
	// it is embedded, within the per-call host budget.
	before = requests.Load()
	r, d, why = c.toolCall("recaller", map[string]any{"question": "what happened to the phoenix launch?"}, 20*time.Second)
	if r == nil {
		t.Fatal(why)
	}
	sent := requests.Load() - before
	c.stdin.Close()
	c.exited(10 * time.Second)
	t.Logf("one call of 3,000 recalls of the client's text: %d embedder requests in %v (%s)", sent, d.Round(time.Millisecond), failedText(r))
	if sent == 0 {
		t.Fatalf("no embedder request at all for the client's own text: the test does not reach the embedder\n%s", c.logTail())
	}
	if sent > 256 {
		t.Errorf("one call reached the embedder %d times (budget 256)", sent)
	}
}

// Finding 6: a client whose request ids and clientInfo.name are 500 KB each
// cannot rotate away another client's history: its lines are bounded (original
// lengths recorded) and its budget runs out. Base: each line was ~1 MB, and a
// few calls erased the 2 MiB history configured here.
func TestFinding06AuditHistoryKept(t *testing.T) {
	h := newHome(t)
	h.writeConfig(t, "[audit]\nmax_file_mib = 1\nmax_files = 1\n")
	v, why := startMCP(t, h, 60*time.Second, 20*time.Second, "victim")
	if why != "" {
		t.Fatal(why)
	}
	v.send(map[string]any{"jsonrpc": "2.0", "id": "keep-me", "method": "tools/call", "params": map[string]any{"name": "memory.search", "arguments": map[string]any{"query": "x"}}})
	if r, why := v.await("keep-me", 30*time.Second); r == nil {
		t.Fatal(why)
	}
	v.stdin.Close()
	v.exited(20 * time.Second)
	if !hasRequestID(h.auditLines(t), "keep-me") {
		t.Fatal("the victim's line is not in the audit log to begin with")
	}

	huge := strings.Repeat("n", 450<<10)
	f, why := startMCP(t, h, 120*time.Second, 20*time.Second, huge)
	if why != "" {
		t.Fatal(why)
	}
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("%d-%s", i, huge)
		f.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": "memory.search", "arguments": map[string]any{"query": "x"}}})
		if r, why := f.await(id, 30*time.Second); r == nil {
			t.Fatalf("flood call %d: %s", i, why)
		}
	}
	f.stdin.Close()
	f.exited(20 * time.Second)
	lines := h.auditLines(t)
	if !hasRequestID(lines, "keep-me") {
		t.Errorf("12 calls of one client erased the victim's line (%d lines left)", len(lines))
	}
	for _, l := range lines {
		b, _ := json.Marshal(l)
		if len(b) > 16<<10 {
			t.Errorf("an audit line of %d bytes", len(b))
			break
		}
		if s, _ := l["session"].(string); strings.Contains(s, "nnnn") {
			if tr, _ := l["truncated"].(map[string]any); tr["request_id"] == nil {
				t.Errorf("a cut line does not record the request id's original length: %v", tr)
				break
			}
		}
	}
}

func hasRequestID(lines []map[string]any, id string) bool {
	for _, l := range lines {
		if l["request_id"] == id {
			return true
		}
	}
	return false
}

// Finding 7: reads of a call that then fails are audited. Base: host_calls {}.
func TestFinding07FailedCallReadsAudited(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "after.wasm", raw: wasmgen.Nesting(wasmgen.AfterHostCall), tool: "after", caps: memRead, pinned: true})
	c, why := startMCP(t, h, 60*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": "after-1", "method": "tools/call", "params": map[string]any{"name": "after", "arguments": map[string]any{}}})
	r, why := c.await("after-1", 20*time.Second)
	if r == nil {
		t.Fatal(why)
	}
	if failedText(r) == "" {
		t.Fatalf("the call did not fail: %v", r)
	}
	c.stdin.Close()
	c.exited(20 * time.Second)
	for _, l := range h.auditLines(t) {
		if l["request_id"] != "after-1" {
			continue
		}
		caps, _ := l["capabilities"].(map[string]any)
		hc, _ := caps["host_calls"].(map[string]any)
		if hc["memory_search"] != float64(1) {
			t.Errorf("the failed call's audit line: host_calls %v, want memory_search: 1 (its reply was delivered to the module)", hc)
		}
		return
	}
	t.Errorf("no audit line for the failed call")
}

// Finding 8: module-supplied names printed raw by `tools audit`. The text
// report carries no control character, names both imports, and --json is
// unchanged. Base: the escape sequences reached the terminal.
func TestFinding08AuditTextEscapesControls(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "ctl.wasm", raw: controlExports(), tool: "ctl", caps: []string{"memory.read", "web.searxng"}})
	a := auditFile(t, h, 60*time.Second, "ctl.wasm")
	out := a.stdout.String()
	if out == "" {
		t.Fatalf("tools audit printed nothing: %s", a.describe())
	}
	for i, r := range out {
		if r == 0x1b || r < 0x20 && r != '\n' && r != '\t' {
			t.Errorf("tools audit's text has control character %q at byte %d: %q", r, i, out[max(0, i-20):min(len(out), i+40)])
			break
		}
	}
	for _, want := range []string{"memory_search", "searxng_search"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not name %s", want)
		}
	}
	l, _ := toolsList(t, h, 60*time.Second)
	_ = l
}

// Finding 9: `tools audit` and the loader agree on each case (audit's exit
// status non-zero exactly when `tools list` reports the module refused or
// failed), and each case is refused (a WASI import of the wrong type loaded on
// 3656465, and then every call failed).
// Base: audit said WOULD LOAD for every one of these, the loader refused them.
func TestFinding09AuditAndLoaderAgree(t *testing.T) {
	h := newHome(t)
	var mods []module
	for i, f := range []wasmgen.Feature{wasmgen.MultiMemory, wasmgen.Memory64, wasmgen.Threads, wasmgen.TailCalls, wasmgen.Exceptions, wasmgen.WASIWrongType} {
		mods = append(mods, module{file: fmt.Sprintf("f%d.wasm", i), raw: wasmgen.Uses(f), tool: fmt.Sprintf("f%d", i), pinned: true})
	}
	mods = append(mods,
		module{file: "start.wasm", raw: wasmgen.Nesting(wasmgen.FromStart), tool: "start", caps: memRead, pinned: true},
		module{file: "globals.wasm", raw: wasmgen.Entries(wasmgen.ShapeGlobals, policy.MaxGlobals+1), tool: "globals", pinned: true},
		module{file: "dup.wasm", raw: okModule(), tool: "memory.search", pinned: true},
	)
	h.install(t, mods...)
	list, c := toolsList(t, h, 120*time.Second)
	if c.killedFor() != "" {
		t.Fatalf("tools list: %s", c.describe())
	}
	for _, m := range mods {
		e, ok := list[m.file]
		if !ok {
			t.Errorf("%s: not in tools list", m.file)
			continue
		}
		a := auditFile(t, h, 60*time.Second, m.file)
		loads := e.State == "ready"
		if loads {
			t.Errorf("%s: the loader serves it; every call of it fails or it breaks a limit", m.file)
		}
		if (a.exitCode() == 0) != loads {
			t.Errorf("%s: tools audit exit %d, loader %s %q", m.file, a.exitCode(), e.State, e.Error)
		}
		if !loads && (strings.Contains(a.stdout.String(), "WOULD LOAD") || !strings.Contains(a.stdout.String(), "verdict: ")) {
			t.Errorf("%s: the loader refuses it (%q) but the audit's verdict is not a refusal:\n%.1500s", m.file, e.Error, a.stdout.String())
		}
	}
}

// mkfifo makes a FIFO at path.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Finding 10: a FIFO named *.wasm in tools/. mcp answers initialize and
// tools/list, and `tools list` ends, naming the FIFO refused. Base: both hung.
func TestFinding10FIFONeverBlocks(t *testing.T) {
	h := newHome(t)
	h.writePolicy(t, "")
	mkfifo(t, filepath.Join(h.tools(), "fifo.wasm"))
	c, why := startMCP(t, h, 30*time.Second, 10*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	if r, why := c.call("tools/list", map[string]any{}, 10*time.Second); r == nil {
		t.Fatal("tools/list: " + why)
	}
	c.kill("done")
	list, l := toolsList(t, h, 30*time.Second)
	if l.killedFor() != "" {
		t.Fatalf("tools list: %s", l.describe())
	}
	if e := list["fifo.wasm"]; e.State == "ready" || !strings.Contains(e.Error, "regular file") {
		t.Errorf("fifo.wasm: %s %q; want it refused as not a regular file", e.State, e.Error)
	}
}

// Finding 11: a world-writable policy.toml and tools/. Each is refused with
// the reason (`tools list` names it, its modules do not load). Base: used
// without a word.
func TestFinding11WorldWritableRefused(t *testing.T) {
	for _, which := range []string{"policy", "tools"} {
		t.Run(which, func(t *testing.T) {
			h := newHome(t)
			h.install(t, module{file: "ok.wasm", raw: okModule(), tool: "ok", pinned: true})
			path := filepath.Join(h.dir, "policy.toml")
			mode := os.FileMode(0o666)
			if which == "tools" {
				path, mode = h.tools(), 0o777
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			list, c := toolsList(t, h, 60*time.Second)
			out := c.stdout.String() + c.stderr.String()
			if e := list["ok.wasm"]; e.State == "ready" {
				t.Errorf("ok.wasm is ready although %s is mode %04o", path, mode)
			}
			if !strings.Contains(out, "writable") {
				t.Errorf("tools list does not say %s is writable by others (%s):\n%.2000s", path, c.describe(), out)
			}
		})
	}
}

// Finding 12: 256 admitted third-party modules. mcp answers initialize and
// tools/list in bounded time. Base: deadlocked before initialize.
func TestFinding12ManyModulesNoDeadlock(t *testing.T) {
	h := newHome(t)
	var mods []module
	for i := 0; i < 300; i++ {
		mods = append(mods, module{file: fmt.Sprintf("m%03d.wasm", i), raw: okModule(), tool: fmt.Sprintf("m%03d", i), pinned: true})
	}
	h.install(t, mods...)
	c, why := startMCP(t, h, 60*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	if r, why := c.call("tools/list", map[string]any{}, 20*time.Second); r == nil {
		t.Fatal("tools/list: " + why)
	}
	if r, _, why := c.toolCall("m299", map[string]any{}, 30*time.Second); r == nil || failedText(r) != "" {
		t.Errorf("calling the 300th module: %v %s", r, why)
	}
}

// Finding 13: no per-call or per-session bounds.
//
// Host calls: a call of 3,000 memory_recall is served at most 256 (the audit
// line counts them). Base: all 3,000.
//
// Pipelining: 50 calls of 64 KiB arguments sent at once to a module that
// spins to its 5 s deadline; beyond 32 in flight mcp stops reading stdin until
// one is answered (issue 38; issue 29 refused them -32001), none is refused,
// and mcp grows by less than 64 MiB + 4 MiB. Base: all were queued (2,000 of
// them held 1.45 GB).
func TestFinding13PerCallAndSessionBounds(t *testing.T) {
	h := newHome(t)
	h.install(t,
		module{file: "recaller.wasm", raw: hostLoopOK("memory_recall", `{"query":"x","k":5}`, 3000), tool: "recaller", caps: memRead, pinned: true, limits: "timeout_ms = 5000\nmemory_mib = 4"},
		module{file: "spin.wasm", raw: spin(), tool: "spin", pinned: true, limits: "timeout_ms = 5000\nmemory_mib = 4"},
	)
	c, why := startMCP(t, h, 120*time.Second, 20*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	t.Run("host calls", func(t *testing.T) {
		c.send(map[string]any{"jsonrpc": "2.0", "id": "recall-1", "method": "tools/call", "params": map[string]any{"name": "recaller", "arguments": map[string]any{}}})
		if r, why := c.await("recall-1", 20*time.Second); r == nil {
			t.Fatal(why)
		}
		time.Sleep(500 * time.Millisecond) // the audit writer flushes
		for _, l := range h.auditLines(t) {
			if l["request_id"] != "recall-1" {
				continue
			}
			caps, _ := l["capabilities"].(map[string]any)
			hc, _ := caps["host_calls"].(map[string]any)
			n, _ := hc["memory_recall"].(float64)
			t.Logf("3,000 recalls asked: %v served (%v refused)", n, caps["refused_host_calls"])
			if n == 0 || n > 256 {
				t.Errorf("one call was served %v memory_recall host calls; want 1..256", n)
			}
			return
		}
		t.Errorf("no audit line for the call")
	})
	// 64 KiB each: mcp reads a 400 KB line in ~0.15 s on a loaded machine, so
	// with larger arguments the first calls end before the last are read.
	const argBytes = 64 << 10
	t.Run("pipelined", func(t *testing.T) {
		// Warm the spin module so its compile is not in the figure.
		if r, _, why := c.toolCall("spin", map[string]any{}, 20*time.Second); r == nil {
			t.Fatal(why)
		}
		base := c.resetPeak()
		arg := strings.Repeat("a", argBytes)
		const n = 50
		start := time.Now()
		// Issue 38: past the session's 32 calls in flight the server stops
		// reading stdin until one is answered, instead of refusing the rest
		// -32001; the writes beyond the pipe's buffer wait, so they are sent
		// from a goroutine of their own.
		go func() {
			for i := 0; i < n; i++ {
				if !c.send(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("p%d", i), "method": "tools/call", "params": map[string]any{"name": "spin", "arguments": map[string]any{"pad": arg}}}) {
					return // the child ended with the test
				}
			}
		}()
		// The first calls hold their sandboxes for 5 s each (two at a time);
		// the first four answers come within about 10 s, none refused.
		busy, answered := 0, 0
		for i := 0; i < 4; i++ {
			r, why := c.await(fmt.Sprintf("p%d", i), time.Until(start.Add(60*time.Second)))
			if r == nil {
				t.Fatalf("after %d answers: %s", answered, why)
			}
			answered++
			if e, ok := r["error"].(map[string]any); ok && e["code"] == float64(-32001) {
				busy++
			}
		}
		grew := c.peakRSS.Load() - base
		t.Logf("%d calls of 64 KiB pipelined: the first %d answered in %v, %d refused as busy; peak growth %s", n, answered, time.Since(start).Round(time.Millisecond), busy, mib(grew))
		if busy > 0 {
			t.Errorf("%d pipelined calls refused as busy; a pipelining client waits instead", busy)
		}
		if grew > callBudgetKB {
			t.Errorf("mcp grew by %s holding the pipelined calls (bound %s)", mib(grew), mib(callBudgetKB))
		}
	})
}
