package rpcserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/admission"
)

// mcpRequest sends method to /mcp with the token and returns status and body.
func mcpRequest(t *testing.T, url, method, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMCPChargedToTheTokensLimiter (issue 39, finding 1): /mcp's requests are
// charged to the limiter /rpc charges, before the body is read: with two
// requests allowed for the token, two held POST /mcp make a third POST /mcp
// and a POST /rpc get HTTP 429 naming the bound; a body larger than the
// token's byte bound is refused before the handler sees it; GET streams have
// their own bound. Before, /mcp had none of these (64 sessions × 8 × 1 MiB).
func TestMCPChargedToTheTokensLimiter(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan string, 8)
	mcpHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- r.Method
		<-hold
		w.WriteHeader(http.StatusOK)
	})
	lim := admission.New(admission.Limits{MaxRequests: 2, MaxBodyBytes: 64 << 10, MaxStreams: 1})
	s, err := New(newFakeHost(false), Options{Token: testToken, MCP: mcpHandler, Admission: lim, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	done := make(chan int, 4)
	for i := 0; i < 2; i++ {
		go func() {
			st, _ := mcpRequest(t, hs.URL, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			done <- st
		}()
	}
	<-entered
	<-entered
	if st, body := mcpRequest(t, hs.URL, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); st != http.StatusTooManyRequests || !strings.Contains(body, "too many HTTP requests in flight for this token (2, the limit, shared by /rpc and /mcp)") {
		t.Errorf("third POST /mcp: HTTP %d %s", st, body)
	}
	if st, body := post(t, hs.URL, testToken, `{"jsonrpc":"2.0","id":3,"method":"openhuman.memory_tree_list_sources"}`); st != http.StatusTooManyRequests || !strings.Contains(string(body), "shared by /rpc and /mcp") {
		t.Errorf("POST /rpc while /mcp holds the token's requests: HTTP %d %s", st, body)
	}
	// One stream is allowed, a second refused, even while requests are full.
	go func() { st, _ := mcpRequest(t, hs.URL, http.MethodGet, ""); done <- st }()
	if m := <-entered; m != http.MethodGet {
		t.Fatalf("entered %s", m)
	}
	if st, body := mcpRequest(t, hs.URL, http.MethodGet, ""); st != http.StatusTooManyRequests || !strings.Contains(body, "MCP streams open") {
		t.Errorf("second GET /mcp: HTTP %d %s", st, body)
	}
	close(hold)
	for i := 0; i < 3; i++ {
		if st := <-done; st != http.StatusOK {
			t.Errorf("held request: HTTP %d", st)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if r, b, st := lim.Held(s.payer); r == 0 && b == 0 && st == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the charges were not given back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A declared body over the token's byte bound: refused before it is read.
	big := strings.Repeat(" ", 65<<10)
	if st, body := mcpRequest(t, hs.URL, http.MethodPost, big); st != http.StatusTooManyRequests || !strings.Contains(body, "over the 65536-byte limit") {
		t.Errorf("oversized POST /mcp: HTTP %d %.200s", st, body)
	}
	select {
	case m := <-entered:
		t.Errorf("the handler saw the refused %s", m)
	default:
	}
}
