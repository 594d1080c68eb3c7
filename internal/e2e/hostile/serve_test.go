//go:build linux

package hostile

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds the token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// startServe spawns `serve` on a free loopback port and returns its base URL.
func startServe(t *testing.T, h *home, token string) (*child, string) {
	t.Helper()
	h.extra = append(h.extra, "OPENHUMAN_CORE_TOKEN="+token)
	c := spawn(t, h, 90*time.Second, false, "serve", "--addr", "127.0.0.1:0")
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(c.stderr.String()); m != nil {
			return c, m[1]
		}
		if c.exited(50 * time.Millisecond) {
			break
		}
	}
	t.Fatalf("serve did not say where it listens: %s\n%s", c.describe(), c.logTail())
	return nil, ""
}

// Finding 13, instance memory between sessions: over serve's /mcp, two
// sessions under the same clientInfo.name call a module that hands each call
// the request of the call before it in its instance. The second session never
// gets the first one's arguments (its call runs in another instance); the
// first session's own second call does (the module works, reuse within a
// session is kept).
//
// Tree only: 3656465's serve had no /mcp and its stdio `mcp` serves one session
// per process, so two sessions could not share an instance from outside. The
// runtime test TestInstancesNotSharedBetweenClients covers the base's pool.
// Before this change the tree keyed instance ownership on the client's label
// (mcp:<clientInfo.name>), so a client naming itself like another got its
// instance.
func TestFinding13InstanceMemoryNotShared(t *testing.T) {
	h := newHome(t)
	h.install(t, module{file: "leak.wasm", raw: leak(), tool: "leak", pinned: true})
	const token = "hostile-suite-token-0123456789"
	_, url := startServe(t, h, token)
	probe, _ := http.NewRequest(http.MethodGet, url+"/mcp", nil)
	probe.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(probe); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			t.Skip("this binary's serve has no /mcp (3656465 had none): two sessions cannot share an instance from outside")
		}
	}
	connect := func() *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "same-name", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatalf("connecting to /mcp: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, args map[string]any) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "leak", Arguments: args})
		if err != nil {
			t.Fatalf("calling leak: %v", err)
		}
		b, _ := json.Marshal(res)
		return string(b)
	}
	a, b := connect(), connect()
	call(a, map[string]any{"secret": "A-SECRET-123"})
	if got := call(b, map[string]any{}); strings.Contains(got, "A-SECRET-123") {
		t.Errorf("a second session of the same client name got the first session's arguments: %.400s", got)
	}
	if got := call(a, map[string]any{}); !strings.Contains(got, "A-SECRET-123") {
		t.Errorf("the first session's own next call did not see its previous request (the module does not work as the test needs): %.400s", got)
	}
}
