package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// nodeModules returns the node_modules folder holding the official MCP
// TypeScript SDK (.ci/run installs it into .ci/node; OPENHUMAN_NODE_MODULES
// overrides), or "" after saying why the test cannot run. Under CI=true a
// missing node or SDK fails the test.
func nodeModules(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OPENHUMAN_NODE_MODULES")
	if dir == "" {
		root, _ := filepath.Abs(filepath.Join("..", ".."))
		dir = filepath.Join(root, ".ci", "node", "node_modules")
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing = "the MCP TypeScript SDK is not installed in " + dir + " (npm install --prefix .ci/node @modelcontextprotocol/sdk, as .ci/run does)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot run the TypeScript SDK client: %s", missing)
		}
		t.Skipf("not run: %s", missing)
	}
	return dir
}

// serveProcess starts `openhuman-core serve` on a free loopback port with token
// and returns its base URL; the process stops with the test.
func (e *cliEnv) serveProcess(t *testing.T, token string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, e.bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(e.environ(), "OPENHUMAN_CORE_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not start listening")
	}
	return ""
}

// The official TypeScript SDK client, over Streamable HTTP with the bearer
// token, lists the tools of a real serve process and calls all six memory
// tools, each result valid against its outputSchema; two concurrent sessions
// keep their own labels in the audit log; no token → 401, a foreign Origin → 403.
func TestMCPOverHTTPWithTypeScriptSDK(t *testing.T) {
	modules := nodeModules(t)
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	const token = "test-token-0123456789abcdef0123456789abcdef"
	base := e.serveProcess(t, token)

	script, _ := filepath.Abs(filepath.Join("testdata", "mcp_http_client.cjs"))
	type report struct {
		Tools []string          `json:"tools"`
		Calls map[string]string `json:"calls"`
	}
	clients := []string{"claude-code", "claude-ai (via mcp-remote 0.15.1)"}
	reports := make([]report, len(clients))
	var wg sync.WaitGroup
	for i, name := range clients {
		wg.Go(func() {
			cmd := exec.Command("node", script, base+"/mcp", token, name)
			cmd.Env = append(os.Environ(), "OH_NODE_MODULES="+modules)
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Errorf("%s: %v\n%s", name, err, stderr)
				return
			}
			if err := json.Unmarshal(out, &reports[i]); err != nil {
				t.Errorf("%s: %v\n%s", name, err, out)
			}
		})
	}
	wg.Wait()
	for i, r := range reports {
		if len(r.Calls) != 6 {
			t.Errorf("%s called %d tools: %+v", clients[i], len(r.Calls), r)
		}
		for tool, verdict := range r.Calls {
			if verdict != "ok" {
				t.Errorf("%s: %s: %s", clients[i], tool, verdict)
			}
		}
	}
	if !strings.Contains(strings.Join(reports[0].Tools, ","), "memory.search") || !strings.Contains(strings.Join(reports[1].Tools, ","), "memory_search") {
		t.Errorf("tool names: claude-code %v, claude-ai via mcp-remote %v", reports[0].Tools, reports[1].Tools)
	}

	// Each session's calls are audited under its own label.
	data, err := os.ReadFile(filepath.Join(e.ohome, "workspace", "audit", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The bridged session's label is the client's own; the bridge and its
	// version are in the line's bridge field.
	per := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var en struct{ Session, Bridge string }
		if json.Unmarshal([]byte(l), &en) == nil {
			per[en.Session+"|"+en.Bridge]++
		}
	}
	if per["mcp:claude-code|"] != 6 || per["mcp:claude-ai|mcp-remote 0.15.1"] != 6 {
		t.Errorf("audit lines per session|bridge = %v, want 6 for mcp:claude-code| and mcp:claude-ai|mcp-remote 0.15.1", per)
	}

	// No token: 401. A foreign Origin (with the token): 403.
	post := func(hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := post(map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("foreign Origin: %d, want 403", code)
	}

	// Browsers: a preflight from an allowed origin is answered without the
	// token, naming the origin; the answer to the real request names it too and
	// exposes Mcp-Session-Id; a foreign origin's preflight stays 403.
	u, _ := url.Parse(base)
	origin := "http://localhost:" + u.Port()
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, base+"/mcp", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := preflight(origin); resp.StatusCode/100 != 2 || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight from %s: %d %v", origin, resp.StatusCode, resp.Header)
	}
	if resp := preflight("https://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from a foreign origin: %d %v, want 403 without Access-Control-Allow-Origin", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a-web-page","version":"0"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Origin", origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize from %s: %d %v", origin, resp.StatusCode, resp.Header)
	}

	// Without the token the answer says there is no OAuth (mcp-remote would
	// otherwise go looking for it); every route list names /mcp.
	resp, err = http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "no OAuth") || !strings.Contains(string(body), "--header") {
		t.Errorf("401 without the token: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/", "/register"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "/mcp") {
			t.Errorf("GET %s does not name /mcp: %s", path, body)
		}
	}
}
