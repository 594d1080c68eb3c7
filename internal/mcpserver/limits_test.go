package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawPost sends one JSON-RPC message to /mcp as a client that opens no GET
// stream would, returning the status, the session id header and the body.
func rawPost(t *testing.T, url, session, body string, hdr ...string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if session != "" {
		req.Header.Set(sessionHeader, session)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(sessionHeader), string(b)
}

// openRaw initializes a session with no GET stream and returns its id.
func openRaw(t *testing.T, url, name string) (string, string) {
	t.Helper()
	st, sid, body := rawPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+name+`","version":"0"}}}`)
	if st != http.StatusOK || sid == "" {
		return "", body
	}
	rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid, body
}

// Finding 6 of issue 39: abandoned sessions (initialized, then never used
// again, no stream open) do not lock new clients out: the one idle longest is
// closed to make room, and its id then gets 404.
func TestHTTPIdleSessionEvictedForNewClient(t *testing.T) {
	s, _, _, logs := newServer(t, newFake())
	hs := httptest.NewServer(s.HTTPHandler(HTTPOptions{MaxSessions: 3}))
	t.Cleanup(hs.Close)
	var ids []string
	for _, n := range []string{"a", "b", "c"} {
		id, body := openRaw(t, hs.URL, n)
		if id == "" {
			t.Fatalf("session %s: %s", n, body)
		}
		ids = append(ids, id)
	}
	// b and c are used again: a is the one idle longest.
	for _, id := range ids[1:] {
		if st, _, body := rawPost(t, hs.URL, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); st != http.StatusOK {
			t.Fatalf("tools/list: HTTP %d %s", st, body)
		}
	}
	d, body := openRaw(t, hs.URL, "d")
	if d == "" {
		t.Fatalf("a fourth client was refused with three idle sessions: %s", body)
	}
	if st, _, _ := rawPost(t, hs.URL, ids[0], `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); st != http.StatusNotFound {
		t.Errorf("the evicted session's next request: HTTP %d, want 404 (the client then initializes anew)", st)
	}
	for _, id := range append(ids[1:], d) {
		if st, _, body := rawPost(t, hs.URL, id, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`); st != http.StatusOK {
			t.Errorf("session kept: HTTP %d %s", st, body)
		}
	}
	if !strings.Contains(logs.String(), "closed the session idle longest") {
		t.Errorf("the eviction is not logged:\n%s", logs.String())
	}
}

// Finding 7 of issue 39: an /mcp call's audit line carries its JSON-RPC id and
// the session id the server minted; an id the client puts in _meta is not
// taken for it.
func TestHTTPAuditLineNamesRequestAndSession(t *testing.T) {
	s, al, auditPath, _ := newServer(t, newFake())
	hs := httptest.NewServer(s.HTTPHandler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	sid, body := openRaw(t, hs.URL, "auditee")
	if sid == "" {
		t.Fatal(body)
	}
	call := `{"jsonrpc":"2.0","id":"call-77","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"},"_meta":{"` + requestIDMetaKey + `":"forged"}}}`
	if st, _, body := rawPost(t, hs.URL, sid, call, requestIDHeader, "forged-too"); st != http.StatusOK {
		t.Fatalf("tools/call: HTTP %d %s", st, body)
	}
	// The SDK client too (numeric ids).
	cs, err := httpClient(t, hs.URL, "sdk")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "y"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	al.Close()
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if len(got) != 2 {
		t.Fatalf("%d audit lines, want 2:\n%s", len(got), raw)
	}
	if got[0]["request_id"] != "call-77" || got[0]["session_id"] != sid {
		t.Errorf("raw client's line: request_id %v session_id %v; want call-77 and %s", got[0]["request_id"], got[0]["session_id"], sid)
	}
	if id, _ := got[1]["request_id"].(string); id == "" || got[1]["session_id"] == "" || got[1]["session_id"] == sid {
		t.Errorf("SDK client's line: request_id %q session_id %v", id, got[1]["session_id"])
	}
}
