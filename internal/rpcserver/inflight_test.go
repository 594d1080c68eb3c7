package rpcserver

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/audit"
)

// TestRequestsInFlightCappedPerToken (issue 29, finding 13, on /rpc): with 4
// requests allowed in flight for the token, four slow searches hold them (two
// dispatched, two waiting for the tool's slots) and a fifth request — another
// agent name, another tool — is answered at once with HTTP 429 and a JSON-RPC
// error saying why; once answers go out, requests are admitted again. The
// body-bytes bound refuses a request whose declared body would pass it. Before,
// every request waited, holding its body, for up to RequestTimeout.
func TestRequestsInFlightCappedPerToken(t *testing.T) {
	host := newFakeHost(false)
	host.block = make(chan struct{})
	host.started = make(chan struct{}, 8)
	s, err := New(host, Options{Token: testToken, MaxRequestsInFlight: 4, MaxBodyBytesInFlight: 4 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	e := &testEnv{srv: s, http: hs, host: host}
	held := make(chan int, 4)
	for i := 0; i < 4; i++ {
		go func() {
			status, _ := post(t, hs.URL, testToken, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"openhuman.memory_tree_search","params":{"query":"slow"}}`, i), AgentHeader, fmt.Sprintf("a%d", i))
			held <- status
		}()
	}
	<-host.started
	<-host.started // two dispatched; the other two wait for a slot
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _, _ := s.limiter.Held(s.payer)
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want 4", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	status, body := post(t, hs.URL, testToken, `{"jsonrpc":"2.0","id":9,"method":"openhuman.memory_tree_list_sources"}`, AgentHeader, "someone-else")
	var r rpcResp
	json.Unmarshal(body, &r)
	if status != http.StatusTooManyRequests || r.Error == nil || r.Error.Code != CodeUnavailable || !strings.Contains(r.Error.Data, "too many HTTP requests in flight for this token (4, the limit") {
		t.Fatalf("fifth request: HTTP %d %s; want 429 with the reason", status, body)
	}
	close(host.block)
	for i := 0; i < 4; i++ {
		if st := <-held; st != http.StatusOK {
			t.Errorf("held request: HTTP %d", st)
		}
	}
	if r := e.call(t, "openhuman.memory_tree_list_sources", ""); r.Error != nil {
		t.Fatalf("after the answers: %+v", r.Error)
	}
	// Bytes: a declared body over the bound is refused before it is read.
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"%s"}}`, strings.Repeat("q", 5<<10))
	status, body = post(t, hs.URL, testToken, big)
	if status != http.StatusTooManyRequests || !strings.Contains(string(body), "over the 4096-byte limit") {
		t.Errorf("a %d-byte request under a 4 KiB bound: HTTP %d %s", len(big), status, body)
	}
}

// TestRenamedAgentsShareOneAuditBudget (finding 6's gap, on /rpc): a client
// naming itself anew on every request (X-OpenHuman-Agent) is charged to the
// bearer token, so its lines stop at one budget. Keyed on the name, each of
// the 200 names had a fresh budget and every line was written.
func TestRenamedAgentsShareOneAuditBudget(t *testing.T) {
	host := newFakeHost(false)
	dir := t.TempDir()
	al := audit.New(audit.Options{Dir: dir, MaxFileBytes: 1 << 20, MaxFiles: 2, SessionBytesPerHour: 8 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s, err := New(host, Options{Token: testToken, Audit: al, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	e := &testEnv{srv: s, http: hs, host: host}
	for i := 0; i < 200; i++ {
		e.call(t, "openhuman.memory_tree_search", `{"query":"phoenix","k":3}`, AgentHeader, fmt.Sprintf("agent-%d", i))
	}
	if err := al.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(data), `"session":"rpc:agent-`)
	t.Logf("%d of 200 renamed calls written under an 8 KiB budget", lines)
	if lines == 0 || lines >= 100 {
		t.Errorf("%d of 200 lines written; want the token's one budget to stop them", lines)
	}
}
