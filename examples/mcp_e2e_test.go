package examples

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// buildGo builds a Go package (a wasip1 module when wasm is set) into dir.
func buildGo(t *testing.T, pkg, out string, wasm bool) {
	t.Helper()
	args := []string{"build", "-trimpath", "-o", out}
	if wasm {
		args = append(args, "-buildmode=c-shared", `-ldflags=-s -w`)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = ".."
	cmd.Env = os.Environ()
	if wasm {
		cmd.Env = append(cmd.Env, "GOOS=wasip1", "GOARCH=wasm")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// mcpChild is a running `openhuman-core mcp` with line-oriented stdout.
type mcpChild struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan map[string]any
	stderr *syncBuffer
	nextID int
}

func startMCP(t *testing.T, bin string, env []string) *mcpChild {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--verbose")
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &mcpChild{t: t, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 64), stderr: newSyncBuffer()}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"_bad_line": sc.Text()}
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

func (c *mcpChild) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to mcp: %v\nstderr:\n%s", err, c.stderr.String())
	}
}

// wait returns the first line matching pred, collecting notifications seen on the way.
func (c *mcpChild) wait(what string, timeout time.Duration, pred func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("mcp exited while waiting for %s\nstderr:\n%s", what, c.stderr.String())
			}
			if pred(m) {
				return m
			}
		case <-deadline:
			c.t.Fatalf("no %s within %s\nstderr:\n%s", what, timeout, c.stderr.String())
		}
	}
}

func (c *mcpChild) request(method string, params any) map[string]any {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return c.wait(fmt.Sprintf("reply to %s (id %d)", method, id), 60*time.Second, func(m map[string]any) bool {
		f, ok := m["id"].(float64)
		return ok && int(f) == id
	})
}

func (c *mcpChild) toolNames() []string {
	c.t.Helper()
	r := c.request("tools/list", map[string]any{})
	res, _ := r["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

func (c *mcpChild) waitListChanged() {
	c.t.Helper()
	c.wait("notifications/tools/list_changed (is toolwatch.Start wired into cmd/openhuman-core/mcp.go? see the report for the call site)", 30*time.Second,
		func(m map[string]any) bool { return m["method"] == "notifications/tools/list_changed" })
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestMCPServesDirectoryTool drives a real `openhuman-core mcp` child: dropping the
// timeline example with a policy entry makes it listed (after list_changed) and
// callable; removing the entry refuses it with the reason logged; a tampered signed
// copy and a name collision are refused while the served tools stay.
func TestMCPServesDirectoryTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a Go module; run without -short")
	}
	work := t.TempDir()
	bin := os.Getenv("OPENHUMAN_E2E_BINARY") // a prebuilt binary, to save the build
	if bin == "" {
		bin = filepath.Join(work, "openhuman-core")
		buildGo(t, "./cmd/openhuman-core", bin, false)
	} else {
		t.Logf("using the prebuilt binary %s (OPENHUMAN_E2E_BINARY)", bin)
	}
	raw := filepath.Join(work, "timeline.raw.wasm")
	buildGo(t, "./examples/timeline", raw, true)
	code, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join("timeline", "tool.toml"))
	if err != nil {
		t.Fatal(err)
	}
	timeline, err := wasmbin.SetCustomSection(code, "openhuman.manifest", manifest)
	if err != nil {
		t.Fatal(err)
	}

	home := filepath.Join(work, "home")
	tools := filepath.Join(home, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(os.TempDir(), "openhuman-examples-test-cache")
	env := append(os.Environ(), "OPENHUMAN_HOME="+home, "OPENHUMAN_WORKSPACE="+filepath.Join(home, "workspace"), "XDG_CACHE_HOME="+cache,
		"OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=") // no paraphrase table: it takes seconds to build
	// A small store with one entity.
	doc := filepath.Join(work, "notes.md")
	os.WriteFile(doc, []byte("# Budget\n\nAsk alice@example.com about the Q3 budget review.\n\nAlso alice@example.com wants the slides.\n"), 0o644)
	ing := exec.Command(bin, "ingest", doc)
	ing.Env = env
	if b, err := ing.CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, b)
	}
	policyFile := filepath.Join(home, "policy.toml")
	writePolicy := func(s string) {
		t.Helper()
		if err := os.WriteFile(policyFile, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy("")

	c := startMCP(t, bin, env)
	c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "mcp-inspector", "version": "0"}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if names := c.toolNames(); has(names, "memory.timeline") {
		t.Fatalf("memory.timeline listed before it was installed: %v", names)
	}

	// Install: file + policy entry.
	entry := fmt.Sprintf("[[module]]\nfile = \"timeline.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n", sum(timeline))
	if err := os.WriteFile(filepath.Join(tools, "timeline.wasm"), timeline, 0o644); err != nil {
		t.Fatal(err)
	}
	writePolicy(entry)
	c.waitListChanged()
	if names := c.toolNames(); !has(names, "memory.timeline") || !has(names, "memory.search") {
		t.Fatalf("after install: %v", names)
	}
	r := c.request("tools/call", map[string]any{"name": "memory.timeline", "arguments": map[string]any{"entity": "email:alice@example.com"}})
	res, _ := r["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if res == nil || res["isError"] == true || sc == nil || sc["entity"] != "email:alice@example.com" {
		t.Fatalf("tools/call memory.timeline: %v", r)
	}
	if total, _ := sc["total"].(float64); total < 1 {
		t.Errorf("timeline found no chunk for alice: %v", sc)
	}

	// A tampered signed copy and a colliding copy are refused; the served tool stays.
	_, key, _ := signature.GenerateKey(nil)
	signed, err := signature.Sign(timeline, key)
	if err != nil {
		t.Fatal(err)
	}
	bad := tamper(t, timeline, key)
	os.WriteFile(filepath.Join(tools, "tampered.wasm"), bad, 0o644)
	os.WriteFile(filepath.Join(tools, "again.wasm"), signed, 0o644)
	writePolicy(entry + fmt.Sprintf("[[module]]\nfile = \"tampered.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n[[module]]\nfile = \"again.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n[trust]\nkeys = [%q]\n",
		sum(bad), sum(signed), signature.FormatPublicKey(key.Public().(ed25519.PublicKey))))
	deadline := time.Now().Add(30 * time.Second)
	for !(strings.Contains(c.stderr.String(), "changed after signing") && strings.Contains(c.stderr.String(), "already served")) {
		if time.Now().After(deadline) {
			t.Fatalf("tampered/colliding modules not refused with a logged reason\nstderr:\n%s", c.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if names := c.toolNames(); !has(names, "memory.timeline") {
		t.Fatalf("the served tool was disturbed by refused modules: %v", names)
	}

	// Remove the policy entry: refused, reason logged, list_changed sent.
	os.Remove(filepath.Join(tools, "tampered.wasm"))
	os.Remove(filepath.Join(tools, "again.wasm"))
	writePolicy("")
	c.waitListChanged()
	if names := c.toolNames(); has(names, "memory.timeline") {
		t.Fatalf("memory.timeline still listed after its policy entry was removed: %v", names)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(c.stderr.String(), "refused timeline.wasm: no policy entry pins sha256 "+sum(timeline)) {
		if time.Now().After(deadline) {
			t.Fatalf("refusal reason not logged\nstderr:\n%s", c.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	r = c.request("tools/call", map[string]any{"name": "memory.timeline", "arguments": map[string]any{"entity": "email:alice@example.com"}})
	if r["error"] == nil {
		t.Errorf("calling a removed tool did not fail: %v", r)
	}
}
