//go:build linux

package hostile

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// Issue 39: the fourth review's findings (availability and accounting). Each
// test fails on ecfd484 and passes on this tree; figures are in doc.go.

const hostileToken = "hostile-suite-token-0123456789"

// spinRoomy loops until its deadline like spin, with room (2 MiB) for a
// 1 MiB request.
func spinRoomy() []byte {
	var b wasmbin.Builder
	b.Memory(32)
	b.Func("oh_alloc", allocType, []byte{0x41, 0x80, 0x08})
	b.Func("oh_call", callType, []byte{0x03, 0x40, 0x0c, 0, 0x0b, 0x42, 0})
	return b.Bytes()
}

// mcpPost sends one JSON-RPC message to serve's /mcp as a Streamable HTTP
// client that opens no GET stream, returning the status, session id and body.
func mcpPost(client *http.Client, url, session string, body io.Reader) (int, string, string, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", body)
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+hostileToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), nil
}

// mcpSession initializes a session with no GET stream.
func mcpSession(t *testing.T, client *http.Client, url, name string) string {
	t.Helper()
	st, sid, body, err := mcpPost(client, url, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+name+`","version":"0"}}}`))
	if err != nil || st != http.StatusOK || sid == "" {
		t.Fatalf("initialize %s: HTTP %d %v %.300s", name, st, err, body)
	}
	mcpPost(client, url, sid, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return sid
}

// Finding 1: one token, 64 /mcp sessions, 8 calls in flight on each with a
// 1 MiB body, to a tool that holds its sandbox until its deadline. serve's
// resident size grows by less than 384 MiB (the token's 32 MiB of bodies,
// decoded), every request gets an HTTP answer, and those beyond the token's
// bounds are refused at once naming them. Base: 28 → 1,520 MB, 85
// connections reset; no request refused.
func TestIssue39Finding01MCPBoundedPerToken(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "spin.wasm", raw: spinRoomy(), tool: "spin", caps: memRead, pinned: true, limits: "timeout_ms = 3000\nmemory_mib = 4"})
	c, url := startServe(t, h, hostileToken)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 600}, Timeout: 8 * time.Second}
	var sessions []string
	for i := 0; i < 64; i++ {
		sessions = append(sessions, mcpSession(t, client, url, fmt.Sprintf("flood-%d", i)))
	}
	pad := bytes.Repeat([]byte("x"), 1<<20-200)
	base := c.resetPeak()
	var refused, answered, failed atomic.Int64
	var firstRefusal atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i, sid := range sessions {
		for j := 0; j < 8; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				head := fmt.Sprintf(`{"jsonrpc":"2.0","id":"f-%d-%d","method":"tools/call","params":{"name":"spin","arguments":{"pad":"`, i, j)
				body := io.MultiReader(strings.NewReader(head), bytes.NewReader(pad), strings.NewReader(`"}}}`))
				st, _, text, err := mcpPost(client, url, sid, body)
				switch {
				case err != nil && errors.Is(err, context.DeadlineExceeded) || err != nil && strings.Contains(err.Error(), "Client.Timeout"):
					answered.Add(1) // held for its sandbox: no answer within the client's patience
				case err != nil:
					failed.Add(1)
				case st == http.StatusTooManyRequests:
					refused.Add(1)
					firstRefusal.CompareAndSwap(nil, text)
				default:
					answered.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	grew := c.peakMiB() - float64(base)/1024
	why, _ := firstRefusal.Load().(string)
	t.Logf("512 calls of 1 MiB over 64 sessions in %v: %d refused at once, %d answered or held, %d transport failures; serve VmRSS %s before, peak growth %.0f MiB; a refusal: %.200s",
		time.Since(start).Round(time.Millisecond), refused.Load(), answered.Load(), failed.Load(), mib(base), grew, why)
	if k := c.killedFor(); k != "" {
		t.Fatalf("serve: %s", c.describe())
	}
	if grew > 384 {
		t.Errorf("serve's resident size grew by %.0f MiB under one token's flood (bound 384 MiB)", grew)
	}
	if refused.Load() == 0 || !strings.Contains(why, "this token") {
		t.Errorf("no request was refused naming the token's bound (%d refused): %.300s", refused.Load(), why)
	}
	if failed.Load() > 0 {
		t.Errorf("%d requests got no HTTP answer (connection reset or closed)", failed.Load())
	}
}

// Finding 6: 64 abandoned /mcp sessions (initialized, never used again, no
// stream open) do not lock a new client out: the official SDK client
// connects and calls a tool. Base: "too many MCP sessions (64)" for 30 min.
func TestIssue39Finding06AbandonedSessionsMakeRoom(t *testing.T) {
	h := newHome(t)
	_, url := startServe(t, h, hostileToken)
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 64; i++ {
		mcpSession(t, client, url, fmt.Sprintf("abandoned-%d", i))
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "newcomer", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{hostileToken}}}, nil)
	if err != nil {
		t.Fatalf("a new client after 64 abandoned sessions: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
}

// Finding 7: an /mcp call's audit line carries its JSON-RPC id and the session
// id serve minted. Base: request_id "" and no session id.
func TestIssue39Finding07MCPAuditLineNamesRequestAndSession(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "ok.wasm", raw: okModule(), tool: "ok", pinned: true})
	_, url := startServe(t, h, hostileToken)
	client := &http.Client{Timeout: 20 * time.Second}
	sid := mcpSession(t, client, url, "audited")
	st, _, body, err := mcpPost(client, url, sid, strings.NewReader(`{"jsonrpc":"2.0","id":"call-39-7","method":"tools/call","params":{"name":"ok","arguments":{}}}`))
	if err != nil || st != http.StatusOK {
		t.Fatalf("tools/call: HTTP %d %v %.300s", st, err, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, l := range h.auditLines(t) {
			if l["tool"] != "ok" {
				continue
			}
			if l["request_id"] != "call-39-7" || l["session_id"] != sid {
				t.Errorf("the /mcp call's audit line: request_id %q session_id %q; want call-39-7 and %s", l["request_id"], l["session_id"], sid)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no audit line for the /mcp call")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Finding 8: a stdio client over its audit budget (1 MiB an hour here) that
// leaves leaves no call uncounted: the lines written plus the dropped lines
// the rate_limited lines count are its 400 calls. Base: the count waited
// for a next admitted line that never came (hundreds of calls, no trace).
func TestIssue39Finding08OverBudgetCountedAtExit(t *testing.T) {
	h := newHome(t)
	h.writeConfig(t, "[audit]\nmax_file_mib = 1\nmax_files = 1\n")
	h.install(t, module{file: "ok.wasm", raw: okModule(), tool: "ok", pinned: true})
	c, why := startMCP(t, h, 90*time.Second, 20*time.Second, "leaver")
	if why != "" {
		t.Fatal(why)
	}
	args := map[string]any{}
	for k := 0; k < 35; k++ {
		args[fmt.Sprintf("%03d%s", k, strings.Repeat("k", 195))] = strings.Repeat("v", 200)
	}
	const calls = 400
	for sent := 0; sent < calls; {
		var ids []string
		for j := 0; j < 30 && sent < calls; j++ {
			id := fmt.Sprintf("b-%d", sent)
			ids = append(ids, id)
			c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": "ok", "arguments": args}})
			sent++
		}
		for _, id := range ids {
			if r, why := c.await(id, 20*time.Second); r == nil {
				t.Fatalf("%s: %s", id, why)
			}
		}
	}
	c.stdin.Close()
	if !c.exited(20 * time.Second) {
		t.Fatalf("mcp did not exit after stdin closed: %s", c.describe())
	}
	written, counted := 0, 0
	for _, l := range h.auditLines(t) {
		if id, _ := l["request_id"].(string); strings.HasPrefix(id, "b-") {
			written++
		}
		if l["outcome"] == "rate_limited" {
			d, _ := l["details"].(map[string]any)
			n, _ := d["dropped_lines"].(float64)
			counted += int(n)
		}
	}
	t.Logf("%d calls: %d lines written, %d counted as dropped", calls, written, counted)
	if written >= calls {
		t.Fatalf("every line was written: the test does not exceed the budget")
	}
	if written+counted != calls {
		t.Errorf("%d calls left %d lines and a count of %d dropped: %d calls have no trace", calls, written, counted, calls-written-counted)
	}
}

// Finding 9: `tools install` of another tool under an installed tool's file
// name is refused (nothing changed) unless --replace; with it, nothing of the
// old pin carries over. Base: exit 0, the new tool inherited the agents.
func TestIssue39Finding09InstallNeverSilentlyReplaces(t *testing.T) {
	h := newHome(t)
	src := t.TempDir()
	write := func(dir, tool string) string {
		p := filepath.Join(src, dir, "same.wasm")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, pack(t, module{raw: okModule(), tool: tool}), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, second := write("a", "alpha"), write("b", "beta")
	if c := runCLI(t, h, 60*time.Second, "tools", "install", first); c.exitCode() != 0 {
		t.Fatalf("installing alpha: %s\n%s%s", c.describe(), c.stdout.String(), c.logTail())
	}
	pol := filepath.Join(h.dir, "policy.toml")
	text, _ := os.ReadFile(pol)
	text = bytes.Replace(text, []byte("file = \"same.wasm\"\n"), []byte("file = \"same.wasm\"\nallowed_agents = [\"mcp:trusted-*\"]\n"), 1)
	os.WriteFile(pol, text, 0o600)
	c := runCLI(t, h, 60*time.Second, "tools", "install", second)
	after, _ := os.ReadFile(pol)
	if c.exitCode() == 0 || !strings.Contains(c.logTail(), "--replace") || !bytes.Equal(after, text) {
		t.Errorf("installing beta as same.wasm over alpha: %s; want refused naming --replace, policy unchanged\n%s%s", c.describe(), c.stdout.String(), c.logTail())
	}
	c = runCLI(t, h, 60*time.Second, "tools", "install", "--replace", second)
	after, _ = os.ReadFile(pol)
	if c.exitCode() != 0 || bytes.Contains(after, []byte("trusted-")) {
		t.Errorf("--replace: %s; the policy after it:\n%s\n%s", c.describe(), after, c.logTail())
	}
}

// Finding 4: 99,000 functions and 10,000 unused types, each within its own
// limit, are refused for the product by `tools audit` (which reports the
// load cost) and by the loader, before compiling. Base: audit WOULD LOAD;
// 15–32 s of compile at every start.
func TestIssue39Finding04CompileCostBounded(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "pairs.wasm", raw: wasmgen.FuncsAndTypes(99_000, 10_000), tool: "pairs", caps: memRead, pinned: true})
	a := auditFile(t, h, 60*time.Second, "pairs.wasm")
	if a.exitCode() != 3 || !strings.Contains(a.stdout.String(), "function-type pairs") {
		t.Errorf("tools audit: exit %d (%s), want 3 naming the function-type pairs:\n%.1500s", a.exitCode(), a.describe(), a.stdout.String())
	}
	list, c := toolsList(t, h, 60*time.Second)
	t.Logf("tools list: %s", c.describe())
	if e := list["pairs.wasm"]; e.State != "refused" || !strings.Contains(e.Error, "function-type pairs") {
		t.Errorf("tools list: pairs.wasm %s %q; want refused for its function-type pairs", e.State, e.Error)
	}
}

// The old finding "audit is bounded like the loader": `tools audit` of a
// 10.5 MB unpinned file of 3.5 M types stays under 64 MiB + the file's size
// and calls it never loadable. Base: 677–688 MB.
func TestIssue39AuditBoundedLikeLoader(t *testing.T) {
	h := newHome(t)
	raw := wasmgen.Entries(wasmgen.ShapeTypes, 3_500_000)
	if err := os.WriteFile(filepath.Join(h.tools(), "types.wasm"), wasmbin.AppendCustomSection(raw, "openhuman.manifest", []byte(manifest("types", nil, defaultLimits))), 0o644); err != nil {
		t.Fatal(err)
	}
	a := auditFile(t, h, 60*time.Second, "types.wasm")
	bound := 64 + float64(len(raw))/(1<<20)
	t.Logf("tools audit of %.1f MB: %s", float64(len(raw))/1e6, a.describe())
	if a.peakMiB() > bound || a.exitCode() != 3 || !strings.Contains(a.stdout.String(), "3500000 types") {
		t.Errorf("tools audit: exit %d, peak %.0f MiB (bound %.0f); want 3 naming the types:\n%.1500s", a.exitCode(), a.peakMiB(), bound, a.stdout.String())
	}
}

// Finding 3: a note whose TOML front matter opens an array and never closes
// it is ingested in time linear in its size. Base: 500 KB took 37 s (the
// harness stops it at 20 s).
func TestIssue39Finding03FrontMatterLinear(t *testing.T) {
	h := newHome(t)
	docs := filepath.Join(h.dir, "docs")
	os.MkdirAll(docs, 0o755)
	var b strings.Builder
	b.WriteString("+++\ntitle = \"Unclosed\"\ntags = [\n")
	for i := 0; i < 40_000; i++ {
		fmt.Fprintf(&b, "\"tag%d\",\n", i)
	}
	b.WriteString("+++\nThe body of the note.\n")
	os.WriteFile(filepath.Join(docs, "note.md"), []byte(b.String()), 0o644)
	start := time.Now()
	c := runCLI(t, h, 20*time.Second, "ingest", docs)
	d := time.Since(start)
	t.Logf("ingest of a %d KB unclosed front matter: %s in %v", b.Len()>>10, c.describe(), d.Round(time.Millisecond))
	if c.exitCode() != 0 || d > 10*time.Second {
		t.Errorf("ingest: %s after %v\n%s", c.describe(), d, c.logTail())
	}
}

// Finding 5: a zip bomb split into members of 1 MiB or less (16 MiB from
// ~25 KB) is refused for its total ratio, naming it, and nothing of it is
// stored. Base: every member ingested (64 MiB: 32,102 chunks in 15.7 s).
func TestIssue39Finding05SplitZipBombRefused(t *testing.T) {
	h := newHome(t)
	docs := filepath.Join(h.dir, "docs")
	os.MkdirAll(docs, 0o755)
	f, err := os.Create(filepath.Join(docs, "split.zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for i := 0; i < 16; i++ {
		w, _ := zw.Create(fmt.Sprintf("part%02d.md", i))
		w.Write(bytes.Repeat([]byte(fmt.Sprintf("word%d ", i)), (1<<20)/7))
	}
	zw.Close()
	f.Close()
	c := runCLI(t, h, 30*time.Second, "ingest", docs)
	t.Logf("ingest: %s", c.describe())
	if out := c.logTail() + c.stdout.String(); !strings.Contains(out, "zip bomb") || !strings.Contains(out, "0 chunks new") {
		t.Errorf("the split zip bomb was not refused:\n%s", out)
	}
}

// Finding 2: an Evernote note of 80 MiB is held to the per-document bound
// (64 MiB) like a .md file, within bounded memory. Base: read whole (80 MiB:
// 464 MB and 36,664 chunks in 44 s; 300 MB: 3.2 GB). The .enex reader is
// issue 40's: this passes once it is merged.
func TestIssue39Finding02EnexNoteBounded(t *testing.T) {
	h := newHome(t)
	docs := filepath.Join(h.dir, "docs")
	os.MkdirAll(docs, 0o755)
	f, err := os.Create(filepath.Join(docs, "big.enex"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<en-export export-date="20240101T000000Z" application="Evernote" version="10">` + "\n")
	w.WriteString(`<note><title>Big</title><created>20240101T000000Z</created><content><![CDATA[<?xml version="1.0" encoding="UTF-8"?><en-note>`)
	para := "<div>lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor</div>\n"
	for n := 0; n < 80<<20; n += len(para) {
		w.WriteString(para)
	}
	w.WriteString("</en-note>]]></content></note>\n</en-export>\n")
	w.Flush()
	f.Close()
	c := runCLI(t, h, 20*time.Second, "ingest", docs)
	t.Logf("ingest of an 80 MiB note: %s\n%s", c.describe(), c.logTail())
	if c.killedFor() != "" || c.peakMiB() > 256 {
		t.Errorf("ingest of an 80 MiB .enex note: %s (bound 256 MiB, 20 s)", c.describe())
	}
	if out := c.logTail(); !strings.Contains(out, "big.enex") {
		t.Errorf("the note over the per-document bound is not named:\n%s", out)
	}
}
