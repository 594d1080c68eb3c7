package rpcserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
)

// renamedHost serves the real c.hello module (examples/c-hello) under the
// controller tool tree.list_sources, so a JSON-RPC method reaches a third-party
// module the policy pins to one agent. Everything else is the real runtime.
type renamedHost struct{ *runtime.Host }

func (h renamedHost) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	if c.Tool == "tree.list_sources" {
		c.Tool, c.Arguments = "c.hello", []byte(`{"name":"rpc"}`)
	}
	return h.Host.Call(ctx, c)
}

// A module whose policy entry sets allowed_agents = ["rpc:only-this-agent"] is
// refused to any other agent, with the entry and the allowed list named; the
// named agent gets its answer.
func TestAllowedAgentsEnforced(t *testing.T) {
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
	pol, err := policy.Parse([]byte(fmt.Sprintf("[[module]]\nfile = \"hello.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\nallowed_agents = [\"rpc:only-this-agent\"]\n",
		sha256Hex(hello))), filepath.Join(dir, "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	host, err := runtime.New(ctx, runtime.Options{Reader: memory.Default(store), ToolsDir: tools, Policy: pol, Autonomy: "readonly", Logger: quiet, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(context.Background()) })
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := host.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	s, err := New(renamedHost{host}, Options{Token: testToken, Version: "9.9.9-test", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)

	body := `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_list_sources","params":{}}`
	for _, agent := range []string{"some-other-client", ""} {
		_, out := post(t, hs.URL, testToken, body, AgentHeader, agent)
		got := string(out)
		if !strings.Contains(got, fmt.Sprint(CodeForbidden)) || !strings.Contains(got, `allowed_agents = [\"rpc:only-this-agent\"]`) ||
			!strings.Contains(got, `file = \"hello.wasm\"`) || !strings.Contains(got, "c.hello") || strings.Contains(got, "greeting") {
			t.Errorf("agent %q: not refused with the policy entry named: %s", agent, got)
		}
	}
	_, out := post(t, hs.URL, testToken, body, AgentHeader, "only-this-agent")
	if !strings.Contains(string(out), `"greeting"`) || strings.Contains(string(out), `"error"`) {
		t.Errorf("the allowed agent did not get its answer: %s", out)
	}

	// The registry lists the tool only to the agent that may call it.
	list := `{"jsonrpc":"2.0","id":2,"method":"openhuman.tool_registry_list"}`
	get := `{"jsonrpc":"2.0","id":3,"method":"openhuman.tool_registry_get","params":{"tool_id":"c.hello"}}`
	for agent, visible := range map[string]bool{"only-this-agent": true, "some-other-client": false, "": false} {
		_, l := post(t, hs.URL, testToken, list, AgentHeader, agent)
		_, g := post(t, hs.URL, testToken, get, AgentHeader, agent)
		if strings.Contains(string(l), `"tool_id":"c.hello"`) != visible || strings.Contains(string(g), `"tool_id":"c.hello"`) != visible {
			t.Errorf("agent %q: c.hello listed %v, want %v:\nlist %s\nget %s", agent, !visible, visible, l, g)
		}
		if !visible && !strings.Contains(string(g), "tool not found in registry: c.hello") {
			t.Errorf("agent %q: get of a hidden tool: %s", agent, g)
		}
		if !strings.Contains(string(l), `"tool_id":"memory.search"`) && !strings.Contains(string(l), `"tool_id":"tools.searxng_search"`) {
			t.Errorf("agent %q: the registry lost the tools everyone may call: %s", agent, l)
		}
	}
}
