package runtime

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestInstancesNotSharedBetweenClients (finding 13): a call of another client
// never runs in an instance a previous client's call used (its linear memory
// may hold that call's data): the pool makes it a fresh instance; the same
// client reuses its own. On 3656465 the idle instance went to any client.
func TestInstancesNotSharedBetweenClients(t *testing.T) {
	wasm := echoModule(t, "")
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"echo.wasm": wasm}), Policy: policyFor(t, entry("echo.wasm", wasm, "memory.read")), CacheDir: "-"})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := findModule(h, "echo.wasm")
	as := func(client string) (*Outcome, time.Duration) {
		t.Helper()
		start := time.Now()
		out, err := h.Call(context.Background(), Call{Tool: "echo", Arguments: json.RawMessage(`{"text":"secret of ` + client + `"}`), Client: client})
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		return out, time.Since(start)
	}
	as("mcp:a") // the warm instance, now a's
	made := h.pool.created.Load()
	as("mcp:a")
	if n := h.pool.created.Load() - made; n != 0 {
		t.Errorf("the same client's second call made %d instances, want 0 (reuse its own)", n)
	}
	_, d := as("mcp:b")
	if n := h.pool.created.Load() - made; n != 1 {
		t.Errorf("another client's call made %d instances, want 1 (never a's)", n)
	}
	owners := map[string]int{}
	h.pool.mu.Lock()
	for _, in := range h.pool.idle {
		if in.m == m {
			owners[in.owner]++
		}
	}
	h.pool.mu.Unlock()
	if owners["mcp:a"] != 1 || owners["mcp:b"] != 1 {
		t.Errorf("idle instances by owner %v, want one of a's and one of b's", owners)
	}
	t.Logf("a call on a fresh instance (another client's first): %v", d)
}
