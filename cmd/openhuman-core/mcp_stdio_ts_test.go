package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The official TypeScript SDK's stdio client spawns `openhuman-core mcp`, lists
// the tools and calls each memory tool once; every result validates against the
// tool's outputSchema. Over stdio a plain tools/call takes the server's own fast
// path (internal/mcpserver/fastcall.go), so this is that path against a client
// we did not write. A client named claude-ai gets portable tool names, the MCP Inspector the spec's.
func TestMCPOverStdioWithTypeScriptSDK(t *testing.T) {
	modules := nodeModules(t)
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "mcp_http_client.cjs"))
	for _, name := range []string{"mcp-inspector", "claude-ai"} {
		cmd := exec.Command("node", script, "stdio", e.bin, name)
		cmd.Env = append(e.environ(), "OH_NODE_MODULES="+modules)
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("%s: %v\n%s", name, err, stderr)
		}
		var r struct {
			Tools []string          `json:"tools"`
			Calls map[string]string `json:"calls"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if len(r.Calls) != 6 {
			t.Errorf("%s called %d tools: %+v", name, len(r.Calls), r)
		}
		for tool, verdict := range r.Calls {
			if verdict != "ok" {
				t.Errorf("%s: %s: %s", name, tool, verdict)
			}
		}
		want := "memory.search"
		if name == "claude-ai" {
			want = "memory_search"
		}
		if !strings.Contains(strings.Join(r.Tools, ","), want) {
			t.Errorf("%s: tools %v, want %s among them", name, r.Tools, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(e.ohome, "workspace", "audit", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var en struct{ Session string }
		if json.Unmarshal([]byte(l), &en) == nil {
			per[en.Session]++
		}
	}
	if per["mcp:mcp-inspector"] != 6 || per["mcp:claude-ai"] != 6 {
		t.Errorf("audit lines per session = %v, want 6 for mcp:mcp-inspector and mcp:claude-ai", per)
	}
}
