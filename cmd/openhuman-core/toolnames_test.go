package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// portableName is the pattern Claude Desktop and claude.ai hold every tool name to.
var portableName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// mcpSession starts `openhuman-core mcp` as a client would and initializes it
// with the official go-sdk client as clientName.
func (e *cliEnv) mcpSession(t *testing.T, clientName string, env ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.Command(e.bin, "mcp")
	cmd.Env = append(e.environ(), env...)
	client := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect as %s: %v", clientName, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNamesOf(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// callOK calls name with a search for "brake" and fails the test unless the
// call succeeds with a hit.
func callOK(t *testing.T, cs *mcp.ClientSession, name string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"query": "brake quote", "k": 3}})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("call %s: tool error %v", name, res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), "brake") && !strings.Contains(string(b), "Brake") {
		t.Errorf("call %s found no brake hit: %s", name, b)
	}
}

// A session initialized as claude-ai lists only names Claude Desktop accepts and
// can call them; a session as smoke lists the spec's names; both take either
// spelling.
func TestToolNamesPerClient(t *testing.T) {
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}

	claude := e.mcpSession(t, "claude-ai")
	names := toolNamesOf(t, claude)
	if len(names) < 6 {
		t.Fatalf("claude-ai lists %d tools: %v", len(names), names)
	}
	for _, n := range names {
		if !portableName.MatchString(n) {
			t.Errorf("claude-ai is listed %q, which it refuses", n)
		}
	}
	for _, want := range []string{"memory_search", "memory_recall", "tree_read_chunk", "tree_browse", "tree_top_entities", "tree_list_sources"} {
		if !slices.Contains(names, want) {
			t.Errorf("claude-ai is not listed %s: %v", want, names)
		}
	}
	init := claude.InitializeResult()
	if strings.Contains(init.Instructions, "memory.search") || !strings.Contains(init.Instructions, "memory_search") {
		t.Errorf("claude-ai's instructions name tools the way it does not list them:\n%s", init.Instructions)
	}
	res, _ := claude.ListTools(context.Background(), nil)
	for _, tl := range res.Tools {
		if strings.Contains(tl.Description, "tree.read_chunk") {
			t.Errorf("%s's description names tree.read_chunk, which claude-ai is not listed: %s", tl.Name, tl.Description)
		}
	}
	callOK(t, claude, "memory_search")
	callOK(t, claude, "memory.search")

	smoke := e.mcpSession(t, "smoke")
	names = toolNamesOf(t, smoke)
	for _, want := range []string{"memory.search", "memory.recall", "tree.read_chunk", "tree.browse", "tree.top_entities", "tree.list_sources"} {
		if !slices.Contains(names, want) {
			t.Errorf("smoke is not listed %s: %v", want, names)
		}
	}
	callOK(t, smoke, "memory.search")
	callOK(t, smoke, "memory_search")

	// A portable session's error messages name the tool as it lists it.
	r, err := claude.CallTool(context.Background(), &mcp.CallToolParams{Name: "tree_read_chunk", Arguments: map[string]any{"id": 0}})
	if err == nil && r.IsError {
		text := r.Content[0].(*mcp.TextContent).Text
		if strings.Contains(text, "tree.read_chunk") {
			t.Errorf("claude-ai's error names tree.read_chunk: %s", text)
		}
	}

	// tool_names = "spec" serves claude-ai the spec's names (the user chose it);
	// "portable" serves smoke portable names.
	if names := toolNamesOf(t, e.mcpSession(t, "claude-ai", "OPENHUMAN_MCP_TOOL_NAMES=spec")); !slices.Contains(names, "memory.search") {
		t.Errorf("tool_names=spec: claude-ai listed %v", names)
	}
	if names := toolNamesOf(t, e.mcpSession(t, "smoke", "OPENHUMAN_MCP_TOOL_NAMES=portable")); !slices.Contains(names, "memory_search") || slices.Contains(names, "memory.search") {
		t.Errorf("tool_names=portable: smoke listed %v", names)
	}
	// An unknown name in either spelling is a clear error.
	if _, err := smoke.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_searchh", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: err = %v", err)
	}
}

// Under tool_names = "auto" every client not known to accept dots is listed
// portable names only: a client bridged through mcp-remote (seen through, with
// its own label), Cline, Continue, LibreChat and a name nobody listed. Each
// calls a tool by either spelling.
func TestPortableNamesByDefault(t *testing.T) {
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	for _, client := range []string{"claude-ai (via mcp-remote 0.15.1)", "Cline", "continue-client", "@librechat/api-client", "an-agent-nobody-listed"} {
		cs := e.mcpSession(t, client)
		names := toolNamesOf(t, cs)
		if len(names) < 6 {
			t.Errorf("%s lists %d tools: %v", client, len(names), names)
		}
		for _, n := range names {
			if !portableName.MatchString(n) {
				t.Errorf("%s is listed %q, outside ^[a-zA-Z0-9_-]{1,64}$", client, n)
			}
		}
		callOK(t, cs, "memory_search")
		callOK(t, cs, "memory.search")
	}
	data, err := os.ReadFile(filepath.Join(e.ohome, "workspace", "audit", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var en struct{ Session, Bridge string }
		if json.Unmarshal([]byte(l), &en) == nil {
			labels[en.Session] = en.Bridge
		}
	}
	if b, ok := labels["mcp:claude-ai"]; !ok || b != "mcp-remote 0.15.1" {
		t.Errorf("the bridged session's label and bridge: %v, want mcp:claude-ai with bridge mcp-remote 0.15.1", labels)
	}
	for l := range labels {
		if strings.Contains(l, "via") || strings.Contains(l, "remote") {
			t.Errorf("a label carries the bridge: %q", l)
		}
	}
}
