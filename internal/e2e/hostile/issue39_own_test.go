//go:build linux

package hostile

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 39's own hostile inputs, against what this tree has of the wave's
// surfaces: configured URLs and tokens, serve's /mcp headers and streams,
// the files every command reads before anything else. (PostgreSQL, watch,
// IMAP and MCP resources are built on other branches.) Each test says what
// ecfd484 did.

// Own 1: the bearer token file (workspace/core.token) is a link to
// /dev/zero. serve refuses it at once, naming why, in bounded memory.
// Base: read it whole and crashed out of memory.
func TestIssue39OwnTokenFileIsADevice(t *testing.T) {
	h := newHome(t)
	os.MkdirAll(h.workspace(), 0o700)
	if err := os.Symlink("/dev/zero", filepath.Join(h.workspace(), "core.token")); err != nil {
		t.Fatal(err)
	}
	c := runCLI(t, h, 20*time.Second, "serve", "--addr", "127.0.0.1:0")
	t.Logf("serve: %s", c.describe())
	if c.killedFor() != "" || c.exitCode() == 0 || !strings.Contains(c.logTail(), "not a regular file") || c.peakMiB() > 128 {
		t.Errorf("serve with core.token → /dev/zero: %s; want a refusal naming it, under 128 MiB\n%s", c.describe(), c.logTail())
	}
}

// Own 2: config.toml and policy.toml are named pipes no one writes. Every
// command ends at once naming the file. Base: hung on the open.
func TestIssue39OwnConfigFilesArePipes(t *testing.T) {
	for _, name := range []string{"config.toml", "policy.toml"} {
		t.Run(name, func(t *testing.T) {
			h := newHome(t)
			mkfifo(t, filepath.Join(h.dir, name))
			start := time.Now()
			c := runCLI(t, h, 15*time.Second, "tools", "list", "--json")
			t.Logf("tools list with %s a FIFO: %s", name, c.describe())
			if c.killedFor() != "" || !strings.Contains(c.logTail(), "named pipe") || time.Since(start) > 10*time.Second {
				t.Errorf("tools list with %s a FIFO: %s; want an error naming the pipe\n%s", name, c.describe(), c.logTail())
			}
		})
	}
}

// Own 3: passwords in configured URLs ([memory_tree] endpoint, searxng
// base_url) never appear in doctor's or status's output. Base: doctor,
// status --json and ingest printed them.
func TestIssue39OwnURLPasswordsNotShown(t *testing.T) {
	h := newHome(t)
	h.writeConfig(t, "[memory_tree]\nembedder = \"openai\"\nendpoint = \"http://user:s3cret-embed@127.0.0.1:9/v1\"\nmodel = \"m\"\n")
	for _, args := range [][]string{{"doctor"}, {"status", "--json"}} {
		c := runCLI(t, h, 30*time.Second, args...)
		if out := c.stdout.String() + c.stderr.String(); strings.Contains(out, "s3cret") || !strings.Contains(out, "127.0.0.1:9") {
			t.Errorf("%s shows the endpoint's password (or no endpoint at all):\n%.2000s", strings.Join(args, " "), out)
		}
	}
	h.writeConfig(t, "[searxng]\nenabled = true\nbase_url = \"http://u:s3cret-searx@127.0.0.1:9\"\n")
	c := runCLI(t, h, 30*time.Second, "doctor")
	if out := c.stdout.String() + c.stderr.String(); strings.Contains(out, "s3cret") || !strings.Contains(out, "base_url") {
		t.Errorf("doctor shows the SearXNG base_url's password (or says nothing of it):\n%.2000s", out)
	}
}

// Own 4: an /mcp client forges the request id the audit line records (the
// header this tree uses internally, and the _meta key stdio's line filter
// uses). The line keeps the JSON-RPC id. Base: took the _meta value.
func TestIssue39OwnForgedAuditRequestID(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "ok.wasm", raw: okModule(), tool: "ok", pinned: true})
	_, url := startServe(t, h, hostileToken)
	client := &http.Client{Timeout: 20 * time.Second}
	sid := mcpSession(t, client, url, "forger")
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"real-id","method":"tools/call","params":{"name":"ok","arguments":{},"_meta":{"openhuman-core/request_id":"forged-meta"}}}`))
	req.Header.Set("Authorization", "Bearer "+hostileToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("X-Openhuman-Core-Request-Id", "forged-header")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range h.auditLines(t) {
			if l["tool"] == "ok" {
				if l["request_id"] != "real-id" {
					t.Errorf("the audit line records request_id %q; the client's JSON-RPC id is real-id", l["request_id"])
				}
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no audit line for the call")
}

// Own 5: one token opens 24 sessions, each with its GET stream. Beyond the
// token's 16 streams the server answers 429 naming the bound, and /rpc and
// /mcp still answer. Base: every stream was held open, without bound.
func TestIssue39OwnGETStreamsBounded(t *testing.T) {
	h := newHome(t)
	_, url := startServe(t, h, hostileToken)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	statuses := map[int]int{}
	var open sync.WaitGroup
	for i := 0; i < 24; i++ {
		sid := mcpSession(t, client, url, fmt.Sprintf("streamer-%d", i))
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+hostileToken)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := (&http.Client{}).Do(req) // a stream: no client timeout
		if err != nil {
			t.Fatalf("GET stream %d: %v", i, err)
		}
		mu.Lock()
		statuses[resp.StatusCode]++
		mu.Unlock()
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			continue
		}
		open.Add(1)
		go func() {
			defer open.Done()
			defer resp.Body.Close()
			buf := make([]byte, 512)
			resp.Body.Read(buf)
			<-ctx.Done()
		}()
	}
	t.Logf("24 GET streams: %v", statuses)
	if statuses[http.StatusOK] > 16 || statuses[http.StatusTooManyRequests] == 0 {
		t.Errorf("24 GET streams from one token: %v; want at most 16 open and the rest refused with 429", statuses)
	}
	st, _, body, err := mcpPost(client, url, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"after","version":"0"}}}`))
	if err != nil || st != http.StatusOK {
		t.Errorf("a new session while the streams are open: HTTP %d %v %.300s", st, err, body)
	}
	cancel()
	open.Wait()
}

// Own 6: a 48 KB Mcp-Session-Id full of control characters. The request is
// answered with a 4xx and the server goes on. Held on the base too.
func TestIssue39OwnHostileSessionHeader(t *testing.T) {
	h := newHome(t)
	_, url := startServe(t, h, hostileToken)
	client := &http.Client{Timeout: 10 * time.Second}
	sid := strings.Repeat("\x1b[2J\x07", 12<<10)
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+hostileToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header["Mcp-Session-Id"] = []string{sid}
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("a hostile session id: HTTP %d, want a 4xx", resp.StatusCode)
		}
	} // a client library may refuse to send it: then nothing reached the server
	mcpSession(t, client, url, "after-hostile-header")
}
