package mcpserver

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func httpClient(t *testing.T, url, name string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// Over Streamable HTTP each session keeps its client's label and tool names; a
// session beyond MaxSessions and a request beyond MaxInFlight get a JSON-RPC
// error saying so; a session closed with DELETE frees its place.
func TestHTTPSessionsAndBounds(t *testing.T) {
	f := newFake("test.slow")
	s, al, auditPath, _ := newServer(t, f)
	hs := httptest.NewServer(s.HTTPHandler(HTTPOptions{MaxSessions: 2, MaxInFlight: 1}))
	t.Cleanup(hs.Close) // after the sessions (cleanups run last first): their GET streams hold connections

	one, err := httpClient(t, hs.URL, "claude-ai")
	if err != nil {
		t.Fatal(err)
	}
	two, err := httpClient(t, hs.URL, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpClient(t, hs.URL, "third"); err == nil || !strings.Contains(err.Error(), "too many MCP sessions (2)") {
		t.Errorf("third session: err = %v, want too many sessions", err)
	}
	lt, err := one.ListTools(context.Background(), nil)
	if err != nil || lt.Tools[0].Name != "memory_search" {
		t.Fatalf("claude-ai over HTTP: %v %v", err, lt)
	}
	for _, cs := range []*mcp.ClientSession{one, two} {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "x"}}); err != nil {
			t.Fatal(err)
		}
	}

	// One call in flight holds the session's only slot.
	done := make(chan error, 1)
	go func() {
		_, err := two.CallTool(context.Background(), &mcp.CallToolParams{Name: "test.slow", Arguments: map[string]any{}})
		done <- err
	}()
	<-f.started
	if _, err := two.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "x"}}); err == nil || !strings.Contains(err.Error(), "requests in flight") {
		t.Errorf("second call in flight: err = %v", err)
	}
	f.release <- struct{}{}
	if err := <-done; err != nil {
		t.Errorf("slow call: %v", err)
	}

	// Closing a session (DELETE) makes room for another.
	one.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := httpClient(t, hs.URL, "fourth")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after DELETE: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	al.Close()
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	data := string(raw)
	if !strings.Contains(data, `"session":"mcp:claude-ai"`) || !strings.Contains(data, `"session":"mcp:smoke"`) {
		t.Errorf("audit lines do not carry each session's label:\n%s", data)
	}
}

// A session idle for longer than IdleTimeout is closed: its next request fails
// and its place is free.
func TestHTTPIdleSessionExpires(t *testing.T) {
	f := newFake()
	s, _, _, _ := newServer(t, f)
	hs := httptest.NewServer(s.HTTPHandler(HTTPOptions{IdleTimeout: 300 * time.Millisecond, MaxSessions: 1}))
	t.Cleanup(hs.Close)
	cs, err := httpClient(t, hs.URL, "idle")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Error("a request on an expired session succeeded")
	}
	if _, err := httpClient(t, hs.URL, "next"); err != nil {
		t.Errorf("no place after the idle session expired: %v", err)
	}
}
