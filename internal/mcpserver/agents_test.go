package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/toolname"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
)

// helloHost is the real runtime serving examples/c-hello/hello.wasm from a tools
// directory, pinned by a policy entry with the given allowed_agents.
func helloHost(t *testing.T, agents string) *runtime.Host {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "chunks.db")
	w, err := memtree.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	store, err := memtree.OpenReadOnly(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tools := filepath.Join(dir, "tools")
	if err := os.Mkdir(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	hello, err := os.ReadFile(filepath.Join("..", "..", "examples", "c-hello", "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "hello.wasm"), hello, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(hello)
	pol, err := policy.Parse([]byte(fmt.Sprintf("[[module]]\nfile = \"hello.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\nallowed_agents = %s\n",
		hex.EncodeToString(sum[:]), agents)), filepath.Join(dir, "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	host, err := runtime.New(ctx, runtime.Options{Reader: memory.Default(store), ToolsDir: tools, Policy: pol, Autonomy: "readonly",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(context.Background()) })
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := host.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	return host
}

func serverOver(t *testing.T, d Dispatcher) *Server {
	t.Helper()
	al := audit.New(audit.Options{Dir: t.TempDir()})
	t.Cleanup(func() { al.Close() })
	s, err := New(Options{Version: "1.2.3-test", Dispatcher: d, Audit: al, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DrainTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func listed(t *testing.T, cs *mcp.ClientSession, name string) bool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == name || tl.Name == toolname.Portable(name) { // either spelling
			return true
		}
	}
	return false
}

// allowed_agents = ["rpc:only-this-agent"]: an MCP client named otherwise is not
// offered c.hello, and calling it anyway is refused naming the policy entry.
func TestAllowedAgentsEnforced(t *testing.T) {
	s := serverOver(t, helloHost(t, `["rpc:only-this-agent"]`))
	cs := connectClient(t, s, "some-other-client", nil)
	if listed(t, cs, "c.hello") {
		t.Error("tools/list offers c.hello to mcp:some-other-client")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "c.hello", Arguments: map[string]any{"name": "x"}})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, `allowed_agents = ["rpc:only-this-agent"]`) || !strings.Contains(text, `file = "hello.wasm"`) ||
		!strings.Contains(text, `"mcp:some-other-client"`) || strings.Contains(text, "greeting") {
		t.Errorf("not refused with the policy entry named: isError=%v %s", res.IsError, text)
	}
}

// The agent the entry names is offered the tool and its call runs.
func TestAllowedAgentIsServed(t *testing.T) {
	s := serverOver(t, helloHost(t, `["mcp:only-this-agent"]`))
	cs := connectClient(t, s, "Only This Agent", nil)
	if !listed(t, cs, "c.hello") {
		t.Error("tools/list does not offer c.hello to mcp:only-this-agent")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "c.hello", Arguments: map[string]any{"name": "x"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "greeting") {
		t.Fatalf("allowed call: %v %+v", err, res)
	}
}
