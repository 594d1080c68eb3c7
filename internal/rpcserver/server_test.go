package rpcserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/audit"
)

const testToken = "test-token-0123456789abcdef"

type testEnv struct {
	srv  *Server
	http *httptest.Server
	host *fakeHost
}

func newTestEnv(t *testing.T, searxng bool) *testEnv {
	t.Helper()
	host := newFakeHost(searxng)
	s, err := New(host, Options{Token: testToken, Version: "9.9.9-test", SearXNGEnabled: searxng,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &testEnv{srv: s, http: hs, host: host}
}

// post sends body to /rpc with the given token ("" = no Authorization header).
func post(t testing.TB, url, token, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/rpc", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

type rpcResp struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

// call runs one method and decodes the response.
func (e *testEnv) call(t testing.TB, method, params string, hdr ...string) rpcResp {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q`, method)
	if params != "" {
		body += `,"params":` + params
	}
	body += "}"
	status, b := post(t, e.http.URL, testToken, body, hdr...)
	if status != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", method, status, b)
	}
	var r rpcResp
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: decode %s: %v", method, b, err)
	}
	if r.JSONRPC != "2.0" || string(r.ID) != "7" {
		t.Fatalf("%s: bad envelope %s", method, b)
	}
	return r
}

func wantErr(t testing.TB, r rpcResp, code int, dataContains string) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("want error %d, got result %s", code, r.Result)
	}
	if r.Error.Code != code || !strings.Contains(r.Error.Data, dataContains) || r.Error.Message != codeMessages[code] {
		t.Fatalf("want error %d containing %q, got %+v", code, dataContains, *r.Error)
	}
}

func TestAuth(t *testing.T) {
	e := newTestEnv(t, false)
	body := `{"jsonrpc":"2.0","id":1,"method":"openhuman.tool_registry_list"}`
	for name, hdr := range map[string]string{
		"missing":     "",
		"wrong":       "Bearer nope",
		"prefix":      "Bearer " + testToken[:10],
		"longer":      "Bearer " + testToken + "x",
		"basic":       "Basic " + testToken,
		"emptyBearer": "Bearer ",
	} {
		req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/rpc", strings.NewReader(body))
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got map[string]any
		if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(b, &got) != nil || got["error"] != "unauthorized" || got["ok"] != false {
			t.Errorf("%s: want 401 JSON unauthorized, got %d %s", name, resp.StatusCode, b)
		}
		if !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate header", name)
		}
	}
	// lower-case scheme is accepted
	req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/rpc", strings.NewReader(body))
	req.Header.Set("Authorization", "bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("right token: HTTP %d", resp.StatusCode)
	}
	if tokenEqual("a", "b") || !tokenEqual(testToken, testToken) {
		t.Error("tokenEqual is wrong")
	}
}

func TestHealthIsOpenAndLive(t *testing.T) {
	e := newTestEnv(t, false)
	resp, err := http.Get(e.http.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %d %v", resp.StatusCode, err)
	}
	// six memory tools enabled and ready; searxng disabled; the refused module is not enabled.
	if !h.OK || h.Version != "9.9.9-test" || h.Tools.Ready != 6 || h.Tools.Total != 6 {
		t.Fatalf("health = %+v", h)
	}
	e.host.mu.Lock()
	e.host.statuses[1].State = "failed"
	e.host.statuses[1].Error = "compile: bad magic"
	e.host.mu.Unlock()
	resp2, err := http.Get(e.http.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var h2 healthBody
	json.NewDecoder(resp2.Body).Decode(&h2)
	if h2.Tools.Ready != 5 || h2.Tools.Total != 6 {
		t.Fatalf("health after a module failed = %+v", h2)
	}
}

func TestProtocolErrors(t *testing.T) {
	e := newTestEnv(t, false)
	cases := []struct {
		name, body string
		code       int
		data       string
	}{
		{"parse", `{not json`, CodeParseError, "not valid JSON"},
		{"empty body", ``, CodeParseError, "empty"},
		{"empty batch", `[]`, CodeInvalidRequest, "batch must not be empty"},
		{"scalar", `42`, CodeInvalidRequest, "message must be a JSON object, got a number"},
		{"bad id", `{"jsonrpc":"2.0","id":1.5,"method":"x"}`, CodeInvalidRequest, "id must be a string or an integer, got 1.5"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"x"}`, CodeInvalidRequest, "id must be a string or an integer, got null"},
		{"version", `{"jsonrpc":"1.0","id":1,"method":"x"}`, CodeInvalidRequest, `jsonrpc must be "2.0"`},
		{"method type", `{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, "method must be a string, got a number"},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"openhuman.nope"}`, CodeMethodNotFound, `unknown method "openhuman.nope"`},
		{"positional params", `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":["x"]}`, CodeInvalidParams, "openhuman.memory_tree_search params must be an object, got an array"},
	}
	for _, c := range cases {
		status, b := post(t, e.http.URL, testToken, c.body)
		var r rpcResp
		if status != 200 || json.Unmarshal(b, &r) != nil {
			t.Errorf("%s: HTTP %d %s", c.name, status, b)
			continue
		}
		wantErr(t, r, c.code, c.data)
	}
	// A string id is echoed.
	_, b := post(t, e.http.URL, testToken, `{"jsonrpc":"2.0","id":"abc","method":"openhuman.nope"}`)
	if !bytes.Contains(b, []byte(`"id":"abc"`)) {
		t.Errorf("string id not echoed: %s", b)
	}
	// GET /rpc is refused (after auth) with a clear error.
	req, _ := http.NewRequest(http.MethodGet, e.http.URL+"/rpc", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /rpc: HTTP %d", resp.StatusCode)
	}
}

func TestBatchesAndNotifications(t *testing.T) {
	e := newTestEnv(t, false)
	status, b := post(t, e.http.URL, testToken, `[
		{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"alpha"}},
		{"jsonrpc":"2.0","method":"openhuman.memory_tree_search","params":{"query":"note"}},
		{"jsonrpc":"2.0","id":2,"method":"openhuman.nope"},
		{"jsonrpc":"1.0","method":"not a notification: answered with id null"},
		7
	]`)
	var rs []rpcResp
	if status != 200 || json.Unmarshal(b, &rs) != nil {
		t.Fatalf("batch: HTTP %d %s", status, b)
	}
	if len(rs) != 4 || string(rs[0].ID) != "1" || rs[0].Error != nil || string(rs[1].ID) != "2" || rs[1].Error.Code != CodeMethodNotFound ||
		string(rs[2].ID) != "null" || rs[2].Error.Code != CodeInvalidRequest || string(rs[3].ID) != "null" || rs[3].Error.Code != CodeInvalidRequest {
		t.Fatalf("batch responses: %s", b)
	}
	// A batch with one response is still an array.
	_, b = post(t, e.http.URL, testToken, `[{"jsonrpc":"2.0","id":9,"method":"openhuman.tool_registry_list"}]`)
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		t.Errorf("one-response batch is not an array: %.80s", b)
	}
	// Only notifications: 204 and no body.
	status, b = post(t, e.http.URL, testToken, `{"jsonrpc":"2.0","method":"openhuman.memory_tree_search","params":{"query":"n"}}`)
	if status != http.StatusNoContent || len(b) != 0 {
		t.Errorf("notification: HTTP %d %q", status, b)
	}
	// The notification still ran (it is a call), with the rpc label.
	if c := e.host.lastCall(); c.Tool != "memory.search" || string(c.Arguments) != `{"query":"n"}` || c.Client != "rpc" {
		t.Errorf("notification call = %+v", c)
	}
	// Batch cap.
	var sb strings.Builder
	sb.WriteString("[")
	for i := 0; i <= DefaultMaxBatch; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"jsonrpc":"2.0","id":%d,"method":"openhuman.tool_registry_list"}`, i)
	}
	sb.WriteString("]")
	_, b = post(t, e.http.URL, testToken, sb.String())
	var r rpcResp
	json.Unmarshal(b, &r)
	wantErr(t, r, CodeInvalidRequest, "at most 100")
}

func TestBodyCap(t *testing.T) {
	e := newTestEnv(t, false)
	big := `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}}`
	status, b := post(t, e.http.URL, testToken, big)
	var r rpcResp
	if status != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &r) != nil {
		t.Fatalf("over cap: HTTP %d %.200s", status, b)
	}
	wantErr(t, r, CodeInvalidRequest, "larger than 1048576 bytes")
	// Nothing reached the dispatcher.
	e.host.mu.Lock()
	n := len(e.host.calls)
	e.host.mu.Unlock()
	if n != 0 {
		t.Errorf("%d calls reached the dispatcher", n)
	}
	// Just under the cap is fine.
	okBody := `{"jsonrpc":"2.0","id":7,"method":"openhuman.memory_tree_search","params":{"query":"` + strings.Repeat("b", 1000) + `"}}`
	if status, b := post(t, e.http.URL, testToken, okBody); status != 200 || !bytes.Contains(b, []byte(`"result"`)) {
		t.Errorf("small body: HTTP %d %.100s", status, b)
	}
}

func TestControllerMethods(t *testing.T) {
	e := newTestEnv(t, true)
	type tc struct {
		method, params string
		tool           string
		want           string // substring of the result, or of error data
		code           int    // 0 = success
	}
	cases := []tc{
		{"openhuman.memory_tree_search", `{"query":"phoenix","k":5}`, "memory.search", `"snippet":"phoenix"`, 0},
		{"openhuman.memory_tree_search", `{}`, "memory.search", "missing required argument `query`", CodeInvalidParams},
		{"openhuman.memory_tree_search", `{"query":"x","k":51}`, "memory.search", "must not exceed 50", CodeInvalidParams},
		{"openhuman.memory_tree_search", `{"query":"x","limit":5}`, "memory.search", "unexpected argument `limit`", CodeInvalidParams},
		{"openhuman.memory_tree_recall", `{"query":"launch"}`, "memory.recall", `"chunks"`, 0},
		{"openhuman.memory_tree_recall", `{"k":0,"query":"q"}`, "memory.recall", "must be a positive integer", CodeInvalidParams},
		{"openhuman.memory_tree_get_chunk", `{"chunk_id":"c1"}`, "tree.read_chunk", `"text":"hello"`, 0},
		{"openhuman.memory_tree_get_chunk", `{"id":"c1"}`, "tree.read_chunk", "unexpected argument `id`", CodeInvalidParams},
		{"openhuman.memory_tree_get_chunk", `{"chunk_id":"ffff"}`, "tree.read_chunk", "no chunk with id ffff", CodeNotFound},
		{"openhuman.memory_tree_list_chunks", ``, "tree.browse", `"total":0`, 0},
		{"openhuman.memory_tree_list_chunks", `{"limit":3}`, "tree.browse", "unexpected argument `limit`", CodeInvalidParams},
		{"openhuman.memory_tree_top_entities", `{"kind":"email","k":3}`, "tree.top_entities", `"entities"`, 0},
		{"openhuman.memory_tree_top_entities", `{"k":"3"}`, "tree.top_entities", "must be a positive integer", CodeInvalidParams},
		{"openhuman.memory_tree_list_sources", `null`, "tree.list_sources", `"sources"`, 0},
		{"openhuman.memory_tree_list_sources", `{"hint":"a"}`, "tree.list_sources", "unexpected argument `hint`", CodeInvalidParams},
		{"openhuman.memory_tree_list_sources", `"a"`, "", "openhuman.memory_tree_list_sources params must be an object, got a string", CodeInvalidParams},
		{"openhuman.tools_searxng_search", `{"query":"go wasm"}`, "searxng_search", `"query":"go wasm"`, 0},
		{"openhuman.tools_searxng_search", `{"query":""}`, "searxng_search", "missing required argument `query`", CodeInvalidParams},
	}
	for _, c := range cases {
		r := e.call(t, c.method, c.params, AgentHeader, "  Grafana Dashboard! ")
		if c.code != 0 {
			wantErr(t, r, c.code, c.want)
		} else if r.Error != nil || !strings.Contains(string(r.Result), c.want) {
			t.Errorf("%s %s: want result with %s, got %s %+v", c.method, c.params, c.want, r.Result, r.Error)
		}
		if c.tool != "" {
			lc := e.host.lastCall()
			if lc.Tool != c.tool || lc.Client != "rpc:grafana-dashboard" || !strings.HasPrefix(lc.RequestID, "rpc-") {
				t.Errorf("%s dispatched as %+v", c.method, lc)
			}
			wantArgs := c.params
			if wantArgs == "" || wantArgs == "null" {
				wantArgs = "{}"
			}
			if string(lc.Arguments) != wantArgs {
				t.Errorf("%s: arguments %s, want %s", c.method, lc.Arguments, wantArgs)
			}
		}
	}
	// A module trap is an internal error naming the method and an error id, not the trap.
	r := e.call(t, "openhuman.memory_tree_search", `{"query":"boom"}`)
	wantErr(t, r, CodeInternalError, "openhuman.memory_tree_search: memory.search failed: internal error (error id ")
	if strings.Contains(r.Error.Data, "trapped") {
		t.Errorf("the trap reached the client: %+v", r.Error)
	}
}

func TestSearxngDisabled(t *testing.T) {
	e := newTestEnv(t, false)
	wantErr(t, e.call(t, "openhuman.tools_searxng_search", `{"query":"x"}`), CodeDisabled, "SearXNG search is not enabled. Set searxng.enabled=true")
	// Not dispatched at all.
	e.host.mu.Lock()
	n := len(e.host.calls)
	e.host.mu.Unlock()
	if n != 0 {
		t.Errorf("disabled searxng reached the dispatcher %d times", n)
	}
}

func TestClientLabel(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "rpc",
		"  ":                     "rpc",
		"会议记录":                   "rpc",
		"Claude Desktop":         "rpc:claude-desktop",
		"  Zed: Nightly  ":       "rpc:zed-nightly",
		"--ops__bot--":           "rpc:ops-bot",
		strings.Repeat("a", 200): "rpc:" + strings.Repeat("a", 64),
	} {
		if got := clientLabel(in); got != want {
			t.Errorf("clientLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGracefulShutdown cancels the serve context while a call is in flight: the call
// finishes with its result and Serve returns nil.
func TestGracefulShutdown(t *testing.T) {
	host := newFakeHost(false)
	host.block = make(chan struct{})
	host.started = make(chan struct{}, 1)
	s, err := New(host, Options{Token: testToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, s.Handler(), 10*time.Second, nil) }()
	url := "http://" + ln.Addr().String()

	var wg sync.WaitGroup
	var status int
	var body []byte
	wg.Add(1)
	go func() {
		defer wg.Done()
		status, body = post(t, url, testToken, `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"slow"}}`)
	}()
	<-host.started // the call is inside the module
	cancel()       // SIGINT/SIGTERM
	// New connections are refused once shutdown began.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(host.block) // let the in-flight call finish
	wg.Wait()
	if status != 200 || !bytes.Contains(body, []byte(`"snippet":"slow"`)) {
		t.Fatalf("in-flight call: HTTP %d %s", status, body)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestNewRejectsEmptyToken(t *testing.T) {
	if _, err := New(newFakeHost(false), Options{Token: " "}); err == nil || !strings.Contains(err.Error(), "empty bearer token") {
		t.Fatalf("New with empty token: %v", err)
	}
	if _, err := New(nil, Options{Token: "x"}); err == nil {
		t.Fatal("New with nil dispatcher succeeded")
	}
}

func TestFailedModuleIsUnavailable(t *testing.T) {
	e := newTestEnv(t, false)
	e.host.mu.Lock()
	e.host.statuses[0].State = "failed"
	e.host.statuses[0].Error = "compile memory.search.wasm: invalid magic number"
	e.host.mu.Unlock()
	r := e.call(t, "openhuman.memory_tree_search", `{"query":"x"}`)
	wantErr(t, r, CodeUnavailable, "tool memory.search is unavailable: its module memory.search.wasm is failed (error id ")
	if strings.Contains(r.Error.Data, "magic") {
		t.Errorf("the compile error reached the client: %+v", r.Error)
	}
}

func TestAuditRecordsEveryToolCall(t *testing.T) {
	host := newFakeHost(false)
	dir := t.TempDir()
	al := audit.New(audit.Options{Dir: dir, MaxFileBytes: 1 << 20, MaxFiles: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s, err := New(host, Options{Token: testToken, Audit: al, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	e := &testEnv{srv: s, http: hs, host: host}
	e.call(t, "openhuman.memory_tree_search", `{"query":"phoenix","k":3}`, AgentHeader, "ops")
	e.call(t, "openhuman.memory_tree_get_chunk", `{"chunk_id":"zz"}`)
	e.call(t, "openhuman.tool_registry_list", "") // not a tool call: not audited
	if err := al.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit has %d lines: %s", len(lines), data)
	}
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["session"] != "rpc:ops" || first["tool"] != "memory.search" || first["outcome"] != "ok" ||
		!strings.HasPrefix(first["request_id"].(string), "rpc-") || first["arguments"].(map[string]any)["query"] != "phoenix" {
		t.Errorf("first audit line: %s", lines[0])
	}
	if second["session"] != "rpc" || second["tool"] != "tree.read_chunk" || second["outcome"] != "tool_error:not_found" || second["error"] != "no chunk with id zz" {
		t.Errorf("second audit line: %s", lines[1])
	}
}

// TestInFlightBoundPerTool: with one call allowed per tool, a second call to the
// same tool waits (it never reaches the dispatcher while the first runs), a call to
// another tool does not.
func TestInFlightBoundPerTool(t *testing.T) {
	host := newFakeHost(false)
	host.block = make(chan struct{})
	host.started = make(chan struct{}, 1)
	s, err := New(host, Options{Token: testToken, MaxInFlightPerTool: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	e := &testEnv{srv: s, http: hs, host: host}
	first := make(chan int, 1)
	go func() {
		status, _ := post(t, hs.URL, testToken, `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"slow"}}`)
		first <- status
	}()
	<-host.started
	// Another tool is not held up.
	if r := e.call(t, "openhuman.memory_tree_list_sources", ""); r.Error != nil {
		t.Fatalf("other tool: %+v", r.Error)
	}
	// The same tool waits; give up after 300 ms.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"openhuman.memory_tree_search","params":{"query":"second"}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("second call answered HTTP %d while the first held the only slot", resp.StatusCode)
	}
	host.mu.Lock()
	for _, c := range host.calls {
		if string(c.Arguments) == `{"query":"second"}` {
			t.Error("the waiting call reached the dispatcher")
		}
	}
	host.mu.Unlock()
	close(host.block)
	if st := <-first; st != 200 {
		t.Fatalf("first call: HTTP %d", st)
	}
	// The slot is free again.
	if r := e.call(t, "openhuman.memory_tree_search", `{"query":"third"}`); r.Error != nil {
		t.Fatalf("after release: %+v", r.Error)
	}
}
