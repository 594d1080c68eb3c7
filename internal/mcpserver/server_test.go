package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

const searchSchema = `{"type":"object","properties":{"query":{"type":"string","minLength":1},"k":{"type":"integer","minimum":1,"maximum":50}},"required":["query"],"additionalProperties":false}`
const chunksOut = `{"type":"object","properties":{"chunks":{"type":"array"}},"required":["chunks"]}`

// fakeDispatcher is a small Go stand-in for the runtime: it checks arguments
// the way the guests do and records every call.
type fakeDispatcher struct {
	mu      sync.Mutex
	tools   []runtime.Tool
	calls   []runtime.Call
	release chan struct{} // test.slow returns when this is closed
	started chan string   // test.slow reports its request id here
	slowErr chan error    // test.slow reports why it returned
}

func newFake(extra ...string) *fakeDispatcher {
	f := &fakeDispatcher{release: make(chan struct{}), started: make(chan string, 16), slowErr: make(chan error, 16)}
	names := append([]string{"memory.search", "memory.recall", "tree.read_chunk", "tree.browse", "tree.top_entities", "tree.list_sources"}, extra...)
	for _, n := range names {
		f.tools = append(f.tools, runtime.Tool{
			Name: n, Title: "Title of " + n, Description: "Description of " + n,
			InputSchema: json.RawMessage(searchSchema), OutputSchema: json.RawMessage(chunksOut),
			Annotations: runtime.Annotations{ReadOnlyHint: true, OpenWorldHint: n == "searxng_search"},
			Module:      runtime.ModuleInfo{Name: n + ".wasm", SHA256: "sha-" + n},
		})
	}
	return f
}

func (f *fakeDispatcher) Tools() []runtime.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]runtime.Tool(nil), f.tools...)
}

func (f *fakeDispatcher) setTools(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var kept []runtime.Tool
	for _, n := range names {
		kept = append(kept, runtime.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	f.tools = kept
}

func (f *fakeDispatcher) Calls() []runtime.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]runtime.Call(nil), f.calls...)
}

func (f *fakeDispatcher) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	known := false
	for _, t := range f.tools {
		known = known || t.Name == c.Tool
	}
	f.mu.Unlock()
	if !known || c.Tool == "test.vanished" {
		return nil, fmt.Errorf("call %s: %w", c.Tool, runtime.ErrUnknownTool)
	}
	usage := runtime.Usage{HostCalls: map[string]int{"memory_search": 1}, BytesIn: 100, BytesOut: 20}
	toolErr := func(msg string) (*runtime.Outcome, error) {
		return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeInvalidParams, Message: msg}, ModuleSHA256: "sha-" + c.Tool}, nil
	}
	switch c.Tool {
	case "test.slow":
		f.started <- c.RequestID
		select {
		case <-f.release:
			f.slowErr <- nil
			return &runtime.Outcome{Result: json.RawMessage(`{"chunks":[],"slow":true}`)}, nil
		case <-ctx.Done():
			f.slowErr <- ctx.Err()
			return nil, ctx.Err()
		}
	case "test.fail":
		return nil, errors.New("memory store unavailable: open chunks.db: disk I/O error; run openhuman-core doctor")
	case "test.bad":
		return &runtime.Outcome{Result: json.RawMessage(`[1,2]`)}, nil
	case "test.utf8":
		// A module's result whose strings hold bytes that are not UTF-8.
		return &runtime.Outcome{Result: json.RawMessage("{\"chunks\":[],\"s\":\"\xff\xfe ok\",\"\xc3\":\"caf\xc3\xa9\"}")}, nil
	}
	args := map[string]any{}
	if len(c.Arguments) > 0 && string(c.Arguments) != "null" {
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return toolErr("arguments must be an object")
		}
	}
	for k := range args {
		if k != "query" && k != "k" {
			return toolErr(fmt.Sprintf("unexpected argument `%s`", k))
		}
	}
	q, ok := args["query"].(string)
	if !ok {
		return toolErr("missing required argument `query`")
	}
	if strings.TrimSpace(q) == "" {
		return toolErr("argument `query` must not be empty")
	}
	if k, ok := args["k"]; ok {
		n, isNum := k.(float64)
		switch {
		case !isNum || n != float64(int(n)) || n < 0:
			return toolErr("argument `k` must be a positive integer")
		case n == 0:
			return toolErr("argument `k` must be greater than zero")
		case n > 50:
			return toolErr(fmt.Sprintf("argument `k` must not exceed 50 (got %d)", int(n)))
		}
	}
	res, _ := json.Marshal(map[string]any{"chunks": []map[string]any{{"id": "c1", "snippet": "about " + q, "client": c.Client}}})
	return &runtime.Outcome{Result: res, Usage: usage, ModuleSHA256: "sha-" + c.Tool, Duration: time.Millisecond}, nil
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuf) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newServer(t *testing.T, f *fakeDispatcher, mutate ...func(*Options)) (*Server, *audit.Log, string, *syncBuf) {
	t.Helper()
	dir := t.TempDir()
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	al := audit.New(audit.Options{Dir: dir, Logger: log})
	t.Cleanup(func() { al.Close() })
	opts := Options{Version: "1.2.3-test", Dispatcher: f, Audit: al, Logger: log, DrainTimeout: 20 * time.Second}
	for _, m := range mutate {
		m(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, al, filepath.Join(dir, audit.FileName), logs
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}`
const initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

func lines(in ...string) string { return strings.Join(in, "\n") + "\n" }

// serveAll runs one session over a fixed input (EOF right after it) and returns
// the output lines, each checked to be compact single-line JSON.
func serveAll(t *testing.T, s *Server, input string) []map[string]any {
	t.Helper()
	var out syncBuf
	if err := s.Serve(context.Background(), strings.NewReader(input), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	return parseLines(t, out.String())
}

func parseLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var res []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(l)); err != nil || buf.String() != l {
			t.Fatalf("output line is not compact JSON: %q (%v)", l, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		res = append(res, m)
	}
	return res
}

func byID(t *testing.T, msgs []map[string]any) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	for _, msg := range msgs {
		m[fmt.Sprint(msg["id"])] = msg
	}
	return m
}

func TestSmoke(t *testing.T) {
	s, _, _, _ := newServer(t, newFake())
	for run := range 50 {
		got := serveAll(t, s, lines(initLine, initializedLine, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		if len(got) != 2 {
			t.Fatalf("run %d: %d lines, want 2: %v", run, len(got), got)
		}
		if got[0]["id"] != 1.0 || got[1]["id"] != 2.0 {
			t.Fatalf("run %d: ids %v, %v", run, got[0]["id"], got[1]["id"])
		}
		if run > 0 {
			continue
		}
		res := got[0]["result"].(map[string]any)
		if res["protocolVersion"] != "2025-06-18" {
			t.Errorf("protocolVersion %v", res["protocolVersion"])
		}
		caps := res["capabilities"].(map[string]any)
		if _, ok := caps["tools"].(map[string]any); !ok || len(caps) != 2 {
			t.Errorf("capabilities = %v, want tools and resources", caps)
		}
		if r, ok := caps["resources"].(map[string]any); !ok || len(r) != 0 {
			t.Errorf("capabilities.resources = %v, want {} (no subscriptions, a fixed set of templates)", caps["resources"])
		}
		if lc, _ := caps["tools"].(map[string]any)["listChanged"].(bool); lc {
			t.Error("listChanged advertised although tools cannot change")
		}
		info := res["serverInfo"].(map[string]any)
		if info["name"] != "openhuman-core" || info["version"] != "1.2.3-test" {
			t.Errorf("serverInfo = %v", info)
		}
		if ins, _ := res["instructions"].(string); !strings.Contains(ins, "memory.search") || !strings.Contains(ins, "tree.read_chunk") || strings.Contains(ins, "searxng") {
			t.Errorf("instructions = %q", ins)
		}
		var names []string
		for _, tool := range got[1]["result"].(map[string]any)["tools"].([]any) {
			tm := tool.(map[string]any)
			names = append(names, tm["name"].(string))
			ann := tm["annotations"].(map[string]any)
			if ann["readOnlyHint"] != true || ann["openWorldHint"] != false {
				t.Errorf("%s annotations = %v", tm["name"], ann)
			}
			if tm["title"] == nil || tm["description"] == nil || tm["inputSchema"] == nil || tm["outputSchema"] == nil {
				t.Errorf("%s lacks title/description/schemas: %v", tm["name"], tm)
			}
		}
		want := "memory.search,memory.recall,tree.read_chunk,tree.browse,tree.top_entities,tree.list_sources"
		if strings.Join(names, ",") != want {
			t.Errorf("tools = %v, want %s", names, want)
		}
	}
}

func TestProtocolVersions(t *testing.T) {
	s, _, _, _ := newServer(t, newFake())
	for v, want := range map[string]string{"2024-11-05": "2024-11-05", "2025-03-26": "2025-03-26", "2025-06-18": "2025-06-18",
		"2025-11-25": "2025-11-25", "1999-01-01": "2025-11-25", "2026-07-28": "2025-11-25", "": "2025-11-25"} {
		got := serveAll(t, s, lines(fmt.Sprintf(`{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"v","version":"0"}}}`, v)))
		if len(got) != 1 {
			t.Fatalf("%q: %v", v, got)
		}
		if pv := got[0]["result"].(map[string]any)["protocolVersion"]; pv != want {
			t.Errorf("requested %q: got %v, want %s", v, pv, want)
		}
	}
}

func TestSlowCallBeforeEOFIsAnswered(t *testing.T) {
	f := newFake("test.slow")
	s, _, _, _ := newServer(t, f)
	go func() {
		<-f.started
		time.Sleep(300 * time.Millisecond) // EOF has long been read by now
		close(f.release)
	}()
	got := serveAll(t, s, lines(initLine, initializedLine,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test.slow","arguments":{}}}`))
	ids := byID(t, got)
	if len(got) != 3 || ids["3"] == nil {
		t.Fatalf("got %d lines %v, want answers to 1, 2 and 3", len(got), got)
	}
	if sc := ids["3"]["result"].(map[string]any)["structuredContent"].(map[string]any); sc["slow"] != true {
		t.Errorf("slow result = %v", sc)
	}
}

func TestLastLineWithoutNewline(t *testing.T) {
	s, _, _, _ := newServer(t, newFake())
	got := serveAll(t, s, initLine+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if len(got) != 2 || got[1]["id"] != 2.0 {
		t.Fatalf("got %v", got)
	}
}

// session drives one Serve over pipes, one request at a time.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func openSession(t *testing.T, s *Server) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW); outW.Close() }()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 8<<20)
	ss := &session{t: t, in: inW, out: sc, done: done}
	t.Cleanup(func() { inW.Close(); <-done })
	return ss
}

func (ss *session) send(line string) {
	ss.t.Helper()
	if _, err := io.WriteString(ss.in, line+"\n"); err != nil {
		ss.t.Fatalf("write: %v", err)
	}
}

// next returns the next output line (skipping server notifications unless asked).
func (ss *session) next() map[string]any {
	ss.t.Helper()
	ch := make(chan map[string]any, 1)
	go func() {
		if !ss.out.Scan() {
			ch <- nil
			return
		}
		var m map[string]any
		if err := json.Unmarshal(ss.out.Bytes(), &m); err != nil {
			m = map[string]any{"_bad": ss.out.Text()}
		}
		ch <- m
	}()
	select {
	case m := <-ch:
		if m == nil {
			ss.t.Fatal("server closed stdout")
		}
		if b, ok := m["_bad"]; ok {
			ss.t.Fatalf("non-JSON output line %q", b)
		}
		return m
	case <-time.After(30 * time.Second):
		ss.t.Fatal("no answer within 30s")
	}
	return nil
}

func TestHostileInput(t *testing.T) {
	s, _, _, _ := newServer(t, newFake())
	ss := openSession(t, s)
	// tools/call before initialize
	ss.send(`{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"}}}`)
	m := ss.next()
	if m["id"] != "early" || errCode(m) != -32600 || !strings.Contains(errData(m), "before initialize") {
		t.Errorf("tools/call before initialize: %v", m)
	}
	ss.send(initLine)
	if m := ss.next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	ss.send(initializedLine)
	big := `{"jsonrpc":"2.0","id":77,"method":"ping","params":{"pad":"` + strings.Repeat("a", 2<<20) + `"}}`
	cases := []struct {
		name   string
		line   string
		id     any
		code   float64
		detail string
	}{
		{"invalid JSON", `{not-json`, nil, -32700, "invalid character"},
		{"non-object", `"just a string"`, nil, -32600, "must be a JSON object"},
		{"number", `42`, nil, -32600, "must be a JSON object"},
		{"batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, nil, -32600, "this session speaks MCP 2025-06-18, which has no JSON-RPC batches"},
		{"2 MB line", big, 77.0, -32600, fmt.Sprintf("request of %d bytes exceeds the 1048576-byte limit", len(big))},
		{"missing method", `{"jsonrpc":"2.0","id":6}`, 6.0, -32600, "missing method"},
		{"method not a string", `{"jsonrpc":"2.0","id":7,"method":7}`, 7.0, -32600, "method must be a string"},
		{"string params", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"memory.search"}`, 8.0, -32602, "tools/call params must be an object, got a string"},
		{"array params", `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":[]}`, 9.0, -32602, "params must be an object, got an array"},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":10,"method":"ping"}`, 10.0, -32600, `jsonrpc must be "2.0"`},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, nil, -32600, "id must be a string or an integer"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, nil, -32600, "id must be a string or an integer"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil, -32600, "id must be a string or an integer"},
		{"huge id", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, nil, -32600, "outside the supported integer range"},
		{"non-UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}", nil, -32700, "not valid UTF-8"},
		{"unknown method", `{"jsonrpc":"2.0","id":12,"method":"resources/unknown"}`, 12.0, -32601, ""},
		{"unknown tool", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, 13.0, -32602, ""},
		{"initialize without params", `{"jsonrpc":"2.0","id":14,"method":"initialize"}`, 14.0, -32602, "initialize params must be an object"},
		{"notification with id", `{"jsonrpc":"2.0","id":15,"method":"notifications/initialized"}`, 15.0, -32600, ""},
	}
	for i, tc := range cases {
		ss.send(tc.line)
		m := ss.next()
		if m["id"] != tc.id || errCode(m) != tc.code || !strings.Contains(errData(m), tc.detail) {
			t.Errorf("%s: got %v, want id %v code %v containing %q", tc.name, m, tc.id, tc.code, tc.detail)
		}
		// The session survives: a ping right after is answered.
		ss.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`, i))
		if p := ss.next(); p["id"] != fmt.Sprintf("ping-%d", i) || p["result"] == nil {
			t.Fatalf("%s: session did not survive; ping answered with %v", tc.name, p)
		}
	}
	// Blank lines and notifications with bad params produce nothing; trailing
	// whitespace and CRLF are fine.
	ss.send("")
	ss.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}`)
	ss.send(`{"jsonrpc":"2.0","id":"crlf","method":"ping"}   ` + "\r")
	if p := ss.next(); p["id"] != "crlf" || p["result"] == nil {
		t.Fatalf("after blank line and bad notification: %v", p)
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func errData(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	return fmt.Sprint(e["message"], " ", e["data"])
}

func TestProvenance(t *testing.T) {
	f := newFake()
	s, al, auditPath, _ := newServer(t, f)
	names := map[string]string{
		`{"name":"Claude Desktop","version":"1"}`:    "mcp:claude-desktop",
		`{"name":"Cursor","version":"1"}`:            "mcp:cursor",
		`{"name":"  Zed: Nightly  ","version":"1"}`:  "mcp:zed-nightly",
		`{"name":"VS-Code__Insiders","version":"1"}`: "mcp:vs-code-insiders",
		`{"name":"会议记录","version":"1"}`:              "mcp",
		`{"name":"","version":"1"}`:                  "mcp",
		`{"version":"1"}`:                            "mcp",
		`MISSING`:                                    "mcp",
	}
	i := 0
	want := map[string]string{}
	for info, label := range names {
		i++
		params := `"protocolVersion":"2025-06-18","capabilities":{}`
		if info != "MISSING" {
			params += `,"clientInfo":` + info
		}
		id := fmt.Sprintf("call-%d", i)
		want[id] = label
		got := serveAll(t, s, lines(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{`+params+`}}`,
			initializedLine,
			// A second initialize with another name never changes the label.
			`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"Other Client","version":"9"}}}`,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"phoenix"}}}`, id)))
		ids := byID(t, got)
		if len(got) != 3 {
			t.Fatalf("%s: %v", info, got)
		}
		first, second := ids["1"]["result"], ids["2"]["result"]
		if first == nil || fmt.Sprint(first) != fmt.Sprint(second) {
			t.Errorf("%s: second initialize answered %v, want the first result %v", info, ids["2"], first)
		}
		sc := ids[id]["result"].(map[string]any)["structuredContent"].(map[string]any)
		if c := sc["chunks"].([]any)[0].(map[string]any)["client"]; c != label {
			t.Errorf("%s: module saw client %v, want %s", info, c, label)
		}
	}
	for _, c := range f.Calls() {
		if want[c.RequestID] != c.Client {
			t.Errorf("call %q: client %q, want %q", c.RequestID, c.Client, want[c.RequestID])
		}
	}
	al.Close()
	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		n++
		if e["session"] != want[e["request_id"].(string)] || e["tool"] != "memory.search" || e["outcome"] != "ok" || e["module_sha256"] != "sha-memory.search" {
			t.Errorf("audit line %v", e)
		}
		if e["arguments"].(map[string]any)["query"] != "phoenix" {
			t.Errorf("audit arguments %v", e["arguments"])
		}
	}
	if n != len(names) {
		t.Errorf("%d audit lines, want %d", n, len(names))
	}
}

// connectClient starts Serve on pipes and connects a real go-sdk client.
func connectClient(t *testing.T, s *Server, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), c2sR, s2cW); s2cW.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after the client closed")
		}
	})
	return cs
}

func TestClientCalls(t *testing.T) {
	f := newFake("test.fail", "test.bad", "test.vanished")
	s, al, auditPath, logs := newServer(t, f)
	cs := connectClient(t, s, "Claude Desktop", nil)
	ctx := context.Background()
	if got := cs.InitializeResult().ServerInfo; got.Name != "openhuman-core" || got.Version != "1.2.3-test" {
		t.Errorf("serverInfo %+v", got)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "phoenix", "k": 5}})
	if err != nil || res.IsError {
		t.Fatalf("valid call: %v %+v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	sc, _ := json.Marshal(res.StructuredContent)
	if text != string(sc) || !strings.Contains(text, `"about phoenix"`) || !strings.Contains(text, `"mcp:claude-desktop"`) {
		t.Errorf("text %s vs structured %s", text, sc)
	}

	for args, want := range map[string]string{
		`{"query":"x","k":0}`:     "argument `k` must be greater than zero",
		`{"query":"x","k":51}`:    "argument `k` must not exceed 50 (got 51)",
		`{"query":"x","limit":5}`: "unexpected argument `limit`",
		`{"query":5}`:             "missing required argument `query`",
		`{"query":"   "}`:         "argument `query` must not be empty",
	} {
		var a map[string]any
		json.Unmarshal([]byte(args), &a)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.search", Arguments: a})
		if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != want || res.StructuredContent != nil {
			t.Errorf("%s: err=%v res=%+v, want isError %q", args, err, res, want)
		}
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test.fail", Arguments: map[string]any{}})
	failText := ""
	if err == nil && res.IsError {
		failText = res.Content[0].(*mcp.TextContent).Text
	}
	failID := errorIDIn(failText)
	// An unknown client ("Claude Desktop" is not what Claude Desktop sends) is
	// served portable names, and messages name tools that way.
	if failID == "" || !strings.HasPrefix(failText, "test_fail failed: internal error (error id ") || strings.Contains(failText, "disk I/O") {
		t.Errorf("failing tool: %v %q, want a stable message with an error id and no internal text", err, failText)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test.bad", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not a JSON object") {
		t.Errorf("non-object result: %v %+v", err, res)
	}
	for _, name := range []string{"no.such.tool", "test.vanished"} {
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "unknown tool") {
			t.Errorf("%s: err = %v, want JSON-RPC -32602 unknown tool", name, err)
		}
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping after errors: %v", err)
	}
	al.Close()
	data, _ := os.ReadFile(auditPath)
	text = string(data)
	for _, want := range []string{`"outcome":"tool_error:invalid_params"`, `"outcome":"error"`, `"session":"mcp:claude-desktop"`, `"host_calls":{"memory_search":1}`,
		`"error":"memory store unavailable: open chunks.db: disk I/O error; run openhuman-core doctor","error_id":"` + failID + `"`} {
		if !strings.Contains(text, want) {
			t.Errorf("audit log lacks %s:\n%s", want, text)
		}
	}
	if !strings.Contains(logs.String(), "error_id="+failID) {
		t.Errorf("the server log lacks error_id=%s:\n%s", failID, logs.String())
	}
	if !strings.Contains(logs.String(), "arg_keys") || !strings.Contains(logs.String(), "duration_ms") {
		t.Errorf("debug log lacks the call details:\n%s", logs.String())
	}
}

func TestCancellation(t *testing.T) {
	f := newFake("test.slow")
	s, _, _, _ := newServer(t, f)
	cs := connectClient(t, s, "cursor", nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test.slow", Arguments: map[string]any{}})
		errc <- err
	}()
	select {
	case <-f.started:
	case <-time.After(30 * time.Second):
		t.Fatal("slow tool never started")
	}
	cancel() // the client sends notifications/cancelled
	select {
	case err := <-f.slowErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("tool ended with %v, want its context cancelled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("notifications/cancelled did not cancel the running call")
	}
	if err := <-errc; err == nil {
		t.Error("cancelled CallTool returned no error")
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Errorf("session broken after cancellation: %v", err)
	}
}

func TestToolListChanged(t *testing.T) {
	f := newFake()
	s, _, _, _ := newServer(t, f, func(o *Options) { o.ToolsCanChange = true; o.SearXNGEnabled = true })
	changed := make(chan struct{}, 4)
	cs := connectClient(t, s, "list-changed", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	if lc := cs.InitializeResult().Capabilities.Tools; lc == nil || !lc.ListChanged {
		t.Errorf("capabilities.tools = %+v, want listChanged", lc)
	}
	if !strings.Contains(cs.InitializeResult().Instructions, "searxng_search") {
		t.Error("instructions do not mention searxng_search although it is enabled")
	}
	f.setTools("tree.list_sources", "third.party", "memory.search")
	s.Refresh()
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "tree_list_sources,third_party,memory_search" { // an unknown client: portable names
		t.Errorf("tools after change = %v", names)
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.recall", Arguments: map[string]any{"query": "x"}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("removed tool still callable: %v", err)
	}
}

func TestBadManifestToolIsSkipped(t *testing.T) {
	f := newFake()
	f.tools = append(f.tools, runtime.Tool{Name: "bad.schema", InputSchema: json.RawMessage(`{"type":"string"}`)},
		runtime.Tool{Name: "bad.json", InputSchema: json.RawMessage(`{`)},
		runtime.Tool{Name: "memory.search", InputSchema: json.RawMessage(`{"type":"object"}`)})
	s, _, _, logs := newServer(t, f)
	got := serveAll(t, s, lines(initLine, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	if n := len(got[1]["result"].(map[string]any)["tools"].([]any)); n != 6 {
		t.Errorf("%d tools listed, want the 6 good ones", n)
	}
	for _, want := range []string{"bad.schema", "bad.json", "duplicate tool name"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no warning about %s:\n%s", want, logs.String())
		}
	}
}

func TestNewNeedsDispatcher(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without a dispatcher succeeded")
	}
}

func TestCancelledCallDoesNotHoldEOF(t *testing.T) {
	f := newFake("test.slow")
	s, _, _, _ := newServer(t, f)
	pr, pw := io.Pipe()
	var out syncBuf
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), pr, &out) }()
	io.WriteString(pw, lines(initLine, initializedLine,
		`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"test.slow","arguments":{}}}`))
	<-f.started
	io.WriteString(pw, lines(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}`))
	if err := <-f.slowErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("slow call ended with %v", err)
	}
	pw.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve still waiting at EOF for a cancelled call's answer")
	}
	if strings.Contains(out.String(), `"id":"slow"`) {
		t.Errorf("the cancelled request was answered (MCP: no response to a cancelled request):\n%s", out.String())
	}
}

func TestBatchesBefore20250618(t *testing.T) {
	f := newFake()
	s, _, _, _ := newServer(t, f)
	old := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"Old Client","version":"0"}}}`
	ss := openSession(t, s)
	ss.send(`[{"jsonrpc":"2.0","id":"b0","method":"ping"}]`)
	if m := ss.next(); errCode(m) != -32600 || !strings.Contains(errData(m), "before initialize") {
		t.Errorf("batch before initialize: %v", m)
	}
	ss.send(old)
	if m := ss.next(); m["result"].(map[string]any)["protocolVersion"] != "2025-03-26" {
		t.Fatalf("initialize: %v", m)
	}
	ss.send(initializedLine)
	for line, want := range map[string]string{
		`[]`: "batch must not be empty",
		`[{"jsonrpc":"2.0","id":"x","method":"ping"},{"jsonrpc":"2.0","id":"x","method":"ping"}]`:      "id \"x\" is already in use",
		`[{"jsonrpc":"2.0","id":"y","method":"ping"},"nope"]`:                                          "batch element 1: message must be a JSON object",
		`[{"jsonrpc":"2.0","id":"z","method":"ping"},{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`:      "batch element 1: id must be a string or an integer",
		`[{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-03-26"}}]`: "initialize must not be part of a batch",
	} {
		ss.send(line)
		if m := ss.next(); m["id"] != nil || errCode(m) != -32600 || !strings.Contains(errData(m), want) {
			t.Errorf("%s: got %v, want -32600 %q", line, m, want)
		}
	}
	// A good batch: answers come back as one array, in order, without the notification.
	ss.send(`[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}},` +
		`{"jsonrpc":"2.0","id":11,"method":"tools/list"},{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"q"}}}]`)
	if !ss.out.Scan() {
		t.Fatal("no answer to the batch")
	}
	var arr []map[string]any
	if err := json.Unmarshal(ss.out.Bytes(), &arr); err != nil {
		t.Fatalf("batch answer is not an array: %s", ss.out.Text())
	}
	if len(arr) != 3 || arr[0]["id"] != 10.0 || arr[1]["id"] != 11.0 || arr[2]["id"] != "c" {
		t.Fatalf("batch answer: %s", ss.out.Text())
	}
	if sc := arr[2]["result"].(map[string]any)["structuredContent"].(map[string]any); sc["chunks"] == nil {
		t.Errorf("tools/call in a batch: %v", arr[2])
	}
	calls := f.Calls()
	if c := calls[len(calls)-1]; c.RequestID != "c" || c.Client != "mcp:old-client" {
		t.Errorf("batched call reached the module as %+v", c)
	}
	ss.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if m := ss.next(); m["id"] != "after" {
		t.Errorf("after the batch: %v", m)
	}
}

// OnInitialized runs once, after the first initialize answer is written, and not
// for a ping or a request refused before initialize.
func TestOnInitialized(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	var out *syncBuf
	s, _, _, _ := newServer(t, newFake(), func(o *Options) {
		o.OnInitialized = func() {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if !strings.Contains(out.String(), `"serverInfo"`) {
				t.Error("OnInitialized ran before the initialize answer was written")
			}
		}
	})
	out = &syncBuf{}
	in := lines(`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`, initLine, initializedLine,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"again","version":"0"}}}`)
	if err := s.Serve(context.Background(), strings.NewReader(in), out); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("OnInitialized ran %d times, want 1; output:\n%s", calls, out.String())
	}
	if got := len(parseLines(t, out.String())); got != 4 {
		t.Errorf("%d answers, want 4:\n%s", got, out.String())
	}
}

// OnStdinClosed runs once at EOF, before the server waits for answers still in
// flight: here it releases a call that would otherwise hold the drain, so Serve
// returns with that call answered.
func TestOnStdinClosedRunsBeforeTheDrain(t *testing.T) {
	f := newFake("test.slow")
	var mu sync.Mutex
	calls := 0
	s, _, _, _ := newServer(t, f, func(o *Options) {
		o.DrainTimeout = 10 * time.Minute
		o.OnStdinClosed = func() {
			mu.Lock()
			defer mu.Unlock()
			calls++
			close(f.release)
		}
	})
	out := &syncBuf{}
	in := lines(initLine, initializedLine,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test.slow","arguments":{"query":"x"}}}`)
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), strings.NewReader(in), out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Serve still waiting at EOF: OnStdinClosed did not run before the drain")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("OnStdinClosed ran %d times, want 1", calls)
	}
	if !strings.Contains(out.String(), `"slow":true`) {
		t.Errorf("the released call was not answered:\n%s", out.String())
	}
}

// TestToolsWithBadSchemasAreNotServed checks that convertTool refuses every
// schema the SDK's AddTool would panic on (an input schema that is not an object
// with exactly "type":"object" at the top, an output schema that is not an
// object), logs it and serves the rest.
func TestToolsWithBadSchemasAreNotServed(t *testing.T) {
	f := newFake()
	bad := map[string][2]string{
		"bad.in_array":     {`[]`, ""},
		"bad.in_type":      {`{"type":"array"}`, ""},
		"bad.in_no_type":   {`{"properties":{}}`, ""},
		"bad.in_case":      {`{"TYPE":"object"}`, ""},
		"bad.in_type_list": {`{"type":["object"]}`, ""},
		"bad.in_null":      {`null`, ""},
		"bad.out_array":    {`{"type":"object"}`, `[1]`},
		"bad.out_string":   {`{"type":"object"}`, `"object"`},
	}
	for name, s := range bad {
		tool := runtime.Tool{Name: name, Description: "d", InputSchema: json.RawMessage(s[0])}
		if s[1] != "" {
			tool.OutputSchema = json.RawMessage(s[1])
		}
		f.tools = append(f.tools, tool)
	}
	s, _, _, logs := newServer(t, f)
	cs := connectClient(t, s, "smoke", nil) // the spec's names
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"memory.search", "memory.recall", "tree.read_chunk", "tree.browse", "tree.top_entities", "tree.list_sources"}; !slices.Equal(names, want) {
		t.Fatalf("served %v, want only %v", names, want)
	}
	for name := range bad {
		if !strings.Contains(logs.String(), "tool="+name) {
			t.Errorf("no warning names the refused tool %s", name)
		}
	}
}
