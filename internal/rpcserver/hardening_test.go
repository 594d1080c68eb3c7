package rpcserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// failingHost answers memory.search queries named after the internal failures seen
// in the field with those failures; everything else like fakeHost.
type failingHost struct{ *fakeHost }

func (f failingHost) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	var args struct{ Query string }
	json.Unmarshal(c.Arguments, &args)
	switch args.Query {
	case "sql":
		return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeUnavailable,
			Message: "memory_chunks_list failed: SQL logic error: too many SQL variables; check the store or service and try again (see the server log)"}}, nil
	case "corrupt":
		return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeInternal, Message: "host function memory_search failed: database disk image is malformed (11)"}}, nil
	case "down":
		return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeUnavailable, Message: "SearXNG at http://127.0.0.1:9/search is unreachable; is it running?"}}, nil
	case "start":
		// As the runtime reports a start function that ran past the deadline: the
		// kind is typed, the text stays in the logs.
		return nil, &runtime.CallFailure{Err: errors.New("tool memory.search exited with code 4026531839 (module stderr: /home/ann/x)"), Kind: audit.FailureTimeout}
	}
	return f.fakeHost.Call(ctx, c)
}

var reErrorID = regexp.MustCompile(`\(error id ([0-9a-f]{12})\)`)

// Internal failures reach the client as a stable message with an error id; the
// audit line and the server log carry the same id with the detail.
func TestInternalErrorsAreNotQuoted(t *testing.T) {
	dir := t.TempDir()
	logs := &lockedBuf{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	al := audit.New(audit.Options{Dir: dir, Logger: log})
	s, err := New(failingHost{newFakeHost(true)}, Options{Token: testToken, Audit: al, Logger: log, SearXNGEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	e := &testEnv{srv: s, http: hs}
	cases := []struct {
		query, data, hidden string
		code                int
	}{
		{"sql", "openhuman.memory_tree_search: memory.search could not read the store or service it needs (error id ", "SQL", CodeUnavailable},
		{"corrupt", "openhuman.memory_tree_search: memory.search failed: internal error (error id ", "malformed", CodeInternalError},
		{"start", "openhuman.memory_tree_search: memory.search did not finish within its time limit and was stopped (error id ", "4026531839", CodeInternalError},
	}
	ids := map[string]string{}
	for _, tc := range cases {
		r := e.call(t, "openhuman.memory_tree_search", fmt.Sprintf(`{"query":%q}`, tc.query))
		wantErr(t, r, tc.code, tc.data)
		m := reErrorID.FindStringSubmatch(r.Error.Data)
		if m == nil || strings.Contains(r.Error.Data, tc.hidden) || strings.Contains(r.Error.Data, "/home/ann") {
			t.Errorf("%s: %+v, want an error id and no internal text", tc.query, *r.Error)
			continue
		}
		ids[tc.query] = m[1]
	}
	// SearXNG's unavailable message is about the user's own service: kept.
	wantErr(t, e.call(t, "openhuman.tools_searxng_search", `{"query":"down"}`), CodeUnavailable, "SearXNG at http://127.0.0.1:9/search is unreachable; is it running?")
	al.Close()
	data, err := os.ReadFile(filepath.Join(dir, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(cases)+1 {
		t.Fatalf("%d audit lines, want %d:\n%s", len(lines), len(cases), data)
	}
	for i, tc := range cases {
		var a map[string]any
		json.Unmarshal([]byte(lines[i]), &a)
		if a["error_id"] != ids[tc.query] || !strings.Contains(fmt.Sprint(a["error"]), tc.hidden) {
			t.Errorf("%s: audit line %s, want error_id %s with the detail", tc.query, lines[i], ids[tc.query])
		}
		found := false
		for _, l := range strings.Split(logs.String(), "\n") {
			found = found || strings.Contains(l, "error_id="+ids[tc.query]) && strings.Contains(l, tc.hidden)
		}
		if !found {
			t.Errorf("%s: no log line with error_id=%s and the detail:\n%s", tc.query, ids[tc.query], logs.String())
		}
	}
}

// hostRequest sends one request with the given Host and Origin ("" = default Host, no Origin).
func hostRequest(t *testing.T, base, method, path, host, origin, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Host and Origin must name this server (DNS-rebinding defence): the loopback
// names on the bound port, the bound address, and [server] allowed_hosts.
func TestHostAndOriginChecked(t *testing.T) {
	s, err := New(newFakeHost(false), Options{Token: testToken, AllowedHosts: []string{"myhost.local", "box.example:9000"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	u, _ := url.Parse(hs.URL)
	port := u.Port()
	rpc := `{"jsonrpc":"2.0","id":1,"method":"openhuman.tool_registry_list"}`
	cases := []struct {
		name, host, origin string
		want               int
		msg                string
	}{
		{"curl: no Origin, default Host", "", "", 200, ""},
		{"localhost", "localhost:" + port, "", 200, ""},
		{"LOCALHOST upper case", "LOCALHOST:" + port, "", 200, ""},
		{"[::1]", "[::1]:" + port, "", 200, ""},
		{"same-origin page", "", "http://127.0.0.1:" + port, 200, ""},
		{"page on localhost", "localhost:" + port, "http://localhost:" + port, 200, ""},
		{"configured bare name", "myhost.local:" + port, "http://myhost.local:" + port, 200, ""},
		{"configured host:port", "box.example:9000", "", 200, ""},
		{"rebinding name", "evil.example:" + port, "", 403, `Host \"evil.example:` + port + `\" is not an address of this server`},
		{"rebinding name, no port", "evil.example", "", 403, "forbidden_host"},
		{"loopback on another port", "127.0.0.1:1", "", 403, "forbidden_host"},
		{"configured name on another port", "myhost.local:1", "", 403, "forbidden_host"},
		{"page of another site", "", "http://evil.example:" + port, 403, `Origin \"http://evil.example:` + port + `\" is not this server`},
		{"https page of another site", "", "https://evil.example", 403, "forbidden_origin"},
		{"opaque origin", "", "null", 403, "forbidden_origin"},
		{"localhost page on another port", "", "http://localhost:3000", 403, "forbidden_origin"},
	}
	for _, tc := range cases {
		for _, ep := range []struct{ method, path, body string }{{"GET", "/health", ""}, {"POST", "/rpc", rpc}, {"GET", "/", ""}, {"GET", "/schema", ""}} {
			status, body := hostRequest(t, hs.URL, ep.method, ep.path, tc.host, tc.origin, ep.body)
			if status != tc.want || !strings.Contains(body, tc.msg) {
				t.Errorf("%s: %s %s: HTTP %d %s, want %d containing %q", tc.name, ep.method, ep.path, status, body, tc.want, tc.msg)
			}
			if status == 403 && (strings.Contains(body, "version") || strings.Contains(body, "tools") || strings.Contains(body, "openrpc")) {
				t.Errorf("%s: a refused request got data: %s", tc.name, body)
			}
		}
	}
	if _, body := hostRequest(t, hs.URL, "GET", "/health", "evil.example:"+port, "", ""); !strings.Contains(body, "allowed_hosts") || !strings.Contains(body, "localhost:"+port) {
		t.Errorf("the refusal does not say what is accepted and how to add a name: %s", body)
	}
}
