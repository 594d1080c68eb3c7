package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The official TypeScript SDK over serve's /mcp: the resource templates are
// listed, a search hit's resource_link reads back the hit's text (with its
// source and time), and a tool installed while the session is open arrives as
// notifications/tools/list_changed and is callable within 5 s.
func TestMCPOverHTTPReloadsAndResources(t *testing.T) {
	modules := nodeModules(t)
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	const token = "reload-token-0123456789abcdef0123456789abcdef"
	base := e.serveProcess(t, token)

	script, _ := filepath.Abs(filepath.Join("testdata", "mcp_http_resources.cjs"))
	cmd := exec.Command("node", script, base+"/mcp", token, "claude-code", "c.hello", `{"name":"Ada"}`)
	cmd.Env = append(os.Environ(), "OH_NODE_MODULES="+modules)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string, within time.Duration) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: the client ended\n%s", what, stderr.String())
			}
			return l
		case <-time.After(within):
			t.Fatalf("%s: nothing within %s\n%s", what, within, stderr.String())
		}
		return ""
	}

	var first struct {
		Templates []string
		Links     []string
		Read      *struct{ URI, MimeType, Text string }
	}
	if err := json.Unmarshal([]byte(next("resources", 60*time.Second)), &first); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(first.Templates, "memory://chunk/{id}") || !slices.Contains(first.Templates, "memory://source/{id}") {
		t.Errorf("resource templates %v", first.Templates)
	}
	if len(first.Links) == 0 || first.Read == nil {
		t.Fatalf("no resource_link in the search result or nothing read: %+v", first)
	}
	if r := first.Read; r.URI != first.Links[0] || r.MimeType != "text/plain" || !strings.Contains(strings.ToLower(r.Text), "brake") ||
		!strings.Contains(r.Text, "time: ") || !strings.Contains(r.Text, "source: ") {
		t.Errorf("read %s: %+v", first.Links[0], r)
	}

	// Install c.hello while the session is open.
	dir := t.TempDir()
	v1 := helloVersion(t, filepath.Join(dir, "v1"), "v1")
	if out, errOut, code := e.run("", "tools", "install", v1, "--manifest", filepath.Join(dir, "v1", "tool.toml")); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errOut)
	}
	installed := time.Now()
	var second struct {
		Changed bool
		Tools   []string
		Call    json.RawMessage
	}
	if err := json.Unmarshal([]byte(next("list_changed", 30*time.Second)), &second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(installed)
	t.Logf("c.hello listed and called %s after install", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("c.hello arrived %s after install, want within 5 s", took)
	}
	if !second.Changed || !slices.Contains(second.Tools, "c.hello") || !strings.Contains(string(second.Call), `"greeting"`) {
		t.Errorf("after list_changed: %+v %s", second, second.Call)
	}
}
