package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// A tool result holding invalid UTF-8 reaches stdout repaired (each invalid byte
// becomes U+FFFD), identically in the text block and in structuredContent.
func TestInvalidUTF8ResultIsRepaired(t *testing.T) {
	s, _, _, _ := newServer(t, newFake("test.utf8"))
	var out syncBuf
	err := s.Serve(context.Background(), strings.NewReader(lines(initLine, initializedLine,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test.utf8","arguments":{}}}`)), &out)
	if err != nil {
		t.Fatal(err)
	}
	raw := out.String()
	if !utf8.ValidString(raw) {
		t.Fatalf("stdout is not valid UTF-8: %q", raw)
	}
	got := byID(t, parseLines(t, raw))["2"]
	res, _ := got["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		t.Fatalf("tools/call answered %v", got)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	if sc["s"] != "\uFFFD\uFFFD ok" || sc["\uFFFD"] != "café" {
		t.Errorf("structuredContent = %q, want the invalid bytes as U+FFFD and valid text kept", sc)
	}
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("text block is not JSON: %q", text)
	}
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(sc)
	if string(a) != string(b) {
		t.Errorf("text block %s and structuredContent %s differ", a, b)
	}
}

// A second request with the id of one still running is answered with an error at
// once (the first is still running when the error arrives); the first is answered
// normally, and EOF does not wait for an answer that never comes.
func TestDuplicateInFlightID(t *testing.T) {
	f := newFake("test.slow")
	s, _, _, logs := newServer(t, f, func(o *Options) { o.DrainTimeout = 10 * time.Minute })
	ss := openSession(t, s)
	ss.send(initLine)
	ss.next()
	ss.send(initializedLine)
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test.slow","arguments":{}}}`
	ss.send(call)
	if id := <-f.started; id != "7" {
		t.Fatalf("slow call started with request id %q", id)
	}
	ss.send(call)
	m := ss.next()
	if m["id"] != 7.0 || errCode(m) != -32600 || !strings.Contains(errData(m), "duplicate request id 7 is still in flight") {
		t.Fatalf("duplicate id answered %v, want -32600 duplicate request id 7", m)
	}
	if n := len(f.Calls()); n != 1 {
		t.Errorf("%d calls reached the dispatcher, want 1", n)
	}
	// Another id is still served while 7 runs.
	ss.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if m := ss.next(); m["id"] != 8.0 || m["result"] == nil {
		t.Fatalf("ping while 7 runs: %v", m)
	}
	close(f.release)
	if m := ss.next(); m["id"] != 7.0 || m["result"] == nil {
		t.Fatalf("first call with id 7: %v", m)
	}
	// After 7 was answered the id is free again.
	ss.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if m := ss.next(); m["id"] != 7.0 || m["result"] == nil {
		t.Fatalf("reusing id 7 after its answer: %v", m)
	}
	ss.in.Close()
	select {
	case err := <-ss.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return at EOF: it is waiting for an answer that never comes")
	}
	if strings.Contains(logs.String(), "still unanswered") {
		t.Errorf("EOF drain gave up on requests:\n%s", logs.String())
	}
	// The session is over: the cleanup's wait must not block again.
	ss.done <- nil
}

// batchOf is a JSON-RPC batch of n messages made by msg(i).
func batchOf(n int, msg func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = msg(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Batches are capped by count (MaxBatch) and bytes (MaxLineBytes): an oversized
// batch is answered with one error and none of it runs; the session goes on.
func TestBatchCaps(t *testing.T) {
	f := newFake()
	s, _, _, _ := newServer(t, f)
	ss := openSession(t, s)
	ss.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}`)
	ss.next()
	ss.send(initializedLine)

	search := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"q"}}}`, 1000+i)
	}
	huge := batchOf(8000, search)
	if len(huge) > MaxLineBytes {
		t.Fatalf("the 8000-call batch is %d bytes: it would test the byte cap, not the count cap", len(huge))
	}
	ss.send(huge)
	m := ss.next()
	if m["id"] != nil || errCode(m) != -32600 || !strings.Contains(errData(m), fmt.Sprintf("batch has more than %d messages", MaxBatch)) {
		t.Fatalf("8000-call batch answered %v, want one -32600 error", m)
	}
	ss.send(`{"jsonrpc":"2.0","id":"after-huge","method":"ping"}`)
	if m := ss.next(); m["id"] != "after-huge" || m["result"] == nil {
		t.Fatalf("ping after the refused batch: %v (an error for each batch element, or no answer, came first)", m)
	}
	if n := len(f.Calls()); n != 0 {
		t.Fatalf("%d calls of the refused batch ran, want none", n)
	}

	// MaxBatch+1 is refused, MaxBatch is served.
	ss.send(batchOf(MaxBatch+1, search))
	if m := ss.next(); errCode(m) != -32600 || !strings.Contains(errData(m), "split it") {
		t.Fatalf("batch of %d: %v", MaxBatch+1, m)
	}
	ss.send(batchOf(MaxBatch, search))
	if !ss.out.Scan() {
		t.Fatal("no answer to a batch of MaxBatch calls")
	}
	var arr []map[string]any
	if err := json.Unmarshal(ss.out.Bytes(), &arr); err != nil || len(arr) != MaxBatch {
		t.Fatalf("batch of %d answered with %d elements (%v): %.200s", MaxBatch, len(arr), err, ss.out.Text())
	}
	if n := len(f.Calls()); n != MaxBatch {
		t.Errorf("%d calls ran, want %d", n, MaxBatch)
	}

	// A batch longer than the line cap is refused before it is parsed.
	pad := strings.Repeat("x", 20000)
	big := batchOf(60, func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":%q}}}`, 5000+i, pad)
	})
	ss.send(big)
	if m := ss.next(); errCode(m) != -32600 || !strings.Contains(errData(m), fmt.Sprintf("request of %d bytes exceeds the %d-byte limit", len(big), MaxLineBytes)) {
		t.Fatalf("%d-byte batch: %v", len(big), m)
	}
	ss.send(`{"jsonrpc":"2.0","id":"after-big","method":"ping"}`)
	if m := ss.next(); m["id"] != "after-big" || m["result"] == nil {
		t.Fatalf("ping after the oversized batch: %v", m)
	}
	if n := len(f.Calls()); n != MaxBatch {
		t.Errorf("%d calls ran after the oversized batch, want still %d", n, MaxBatch)
	}
}

var reErrorID = regexp.MustCompile(`\(error id ([0-9a-f]{12})\)`)

// errorIDIn returns the error id a client message names, or "".
func errorIDIn(s string) string {
	if m := reErrorID.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// failingDispatcher answers some tools with the internal failures seen in the
// field, and the rest like fakeDispatcher.
type failingDispatcher struct{ *fakeDispatcher }

func (d failingDispatcher) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	switch c.Tool {
	case "test.sql":
		return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeUnavailable,
			Message: "memory_chunks_list failed: SQL logic error: too many SQL variables; check the store or service and try again (see the server log)"}}, nil
	case "test.corrupt":
		return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeInternal, Message: "host function memory_search failed: database disk image is malformed (11)"}}, nil
	case "test.start":
		return nil, &runtime.CallFailure{Err: errors.New("tool test.start exited with code 4026531839 (module stderr: /home/ann/.openhuman/tools/x.wasm)"), Kind: audit.FailureTimeout}
	case "test.oom":
		return nil, &runtime.CallFailure{Err: errors.New("tool test.oom ran out of memory at its 4 MiB limit"), Kind: audit.FailureMemory}
	case "test.web":
		return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeUnavailable, Message: "SearXNG at http://127.0.0.1:9/search is unreachable; is it running?"}}, nil
	case "test.unloaded":
		return nil, &runtime.CallFailure{Err: errors.New("tool test.unloaded is unavailable: compile /home/ann/.openhuman/tools/x.wasm: invalid section"), Kind: audit.FailureUnavailable}
	}
	return d.fakeDispatcher.Call(ctx, c)
}

// Internal failures reach the client as a stable message with an error id; the
// audit line and the server log carry the same id with the detail. Errors about
// the params stay descriptive and never quote the request.
func TestInternalErrorsAreNotQuoted(t *testing.T) {
	tools := []string{"test.sql", "test.corrupt", "test.start", "test.oom", "test.unloaded"}
	f := newFake(append(tools, "test.web")...)
	f.tools[len(f.tools)-1].Module.Capabilities = []string{abi.CapWebSearXNG}
	s, al, auditPath, logs := newServer(t, f, func(o *Options) { o.Dispatcher = failingDispatcher{f} })
	input := []string{initLine, initializedLine}
	for i, name := range tools {
		input = append(input, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, 10+i, name))
	}
	input = append(input,
		`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"test.web","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":5,"arguments":{"query":"SECRET-QUERY"}}}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/list","params":{"cursor":{"x":"SECRET-CURSOR"}}}`,
		`{"jsonrpc":"2.0","id":22,"method":"ping","params":{"_meta":"SECRET-META"}}`)
	ids := byID(t, serveAll(t, s, lines(input...)))

	want := map[string]struct{ prefix, hidden string }{
		"test.sql":      {"test.sql could not read the store or service it needs (error id ", "SQL"},
		"test.corrupt":  {"test.corrupt failed: internal error (error id ", "malformed"},
		"test.start":    {"test.start did not finish within its time limit and was stopped (error id ", "4026531839"},
		"test.oom":      {"test.oom ran out of memory in its sandbox and was stopped (error id ", "4 MiB"},
		"test.unloaded": {"test.unloaded is unavailable: its module is not loaded (error id ", "/home/ann"},
	}
	al.Close()
	auditLog, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	byTool := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(string(auditLog)), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		byTool[e["tool"].(string)] = e
	}
	for i, name := range tools {
		m := ids[fmt.Sprint(10+i)]
		res, _ := m["result"].(map[string]any)
		if res == nil || res["isError"] != true {
			t.Errorf("%s: %v, want an isError result", name, m)
			continue
		}
		text := res["content"].([]any)[0].(map[string]any)["text"].(string)
		id := errorIDIn(text)
		if !strings.HasPrefix(text, want[name].prefix) || id == "" || strings.Contains(text, want[name].hidden) {
			t.Errorf("%s: client text %q, want %q… with an error id and without %q", name, text, want[name].prefix, want[name].hidden)
		}
		e := byTool[name]
		if e["error_id"] != id || !strings.Contains(fmt.Sprint(e["error"]), want[name].hidden) {
			t.Errorf("%s: audit line %v, want error_id %s and the detail", name, e, id)
		}
		logLine := ""
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "error_id="+id) {
				logLine = l
			}
		}
		if !strings.Contains(logLine, want[name].hidden) {
			t.Errorf("%s: no server log line with error_id=%s and the detail:\n%s", name, id, logs.String())
		}
	}
	// A web tool's unavailable message is about the user's own SearXNG: kept.
	if res, _ := ids["19"]["result"].(map[string]any); res == nil ||
		res["content"].([]any)[0].(map[string]any)["text"] != "SearXNG at http://127.0.0.1:9/search is unreachable; is it running?" {
		t.Errorf("web tool unavailable: %v, want the tool's message", ids["19"])
	}
	for id, want := range map[string]string{
		"20": "tools/call params: name must be a string",
		"21": "tools/list params: cursor must be a string",
		"22": "ping params: _meta must be an object",
	} {
		m := ids[id]
		if errCode(m) != -32602 || !strings.Contains(errData(m), want) || strings.Contains(errData(m), "SECRET") || strings.Contains(errData(m), "unmarshal") {
			t.Errorf("id %s: %v, want -32602 %q without the request's bytes", id, m, want)
		}
	}
}

// Only the tools and resources capabilities are declared: other MCP methods
// (resources/subscribe included) are not found (also in a batch), and a
// tools/list cursor (this server never gives one) is invalid.
func TestUndeclaredMethodsAndCursor(t *testing.T) {
	s, _, _, _ := newServer(t, newFake())
	ss := openSession(t, s)
	ss.send(initLine)
	ss.next()
	ss.send(initializedLine)
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"memory://chunk/x"}}`,
		`{"jsonrpc":"2.0","id":%d,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":%d,"method":"completion/complete","params":{}}`,
	} {
		ss.send(fmt.Sprintf(line, 10+i))
		m := ss.next()
		if m["id"] != float64(10+i) || errCode(m) != -32601 || m["result"] != nil || !strings.Contains(errData(m), "offers only tools and resources") {
			t.Errorf("%s: %v, want -32601 method not found", line, m)
		}
	}
	for _, cursor := range []string{`"bogus"`, `"0"`} {
		ss.send(`{"jsonrpc":"2.0","id":"c","method":"tools/list","params":{"cursor":` + cursor + `}}`)
		if m := ss.next(); m["id"] != "c" || errCode(m) != -32602 || !strings.Contains(errData(m), "invalid cursor") {
			t.Errorf("cursor %s: %v, want -32602 invalid cursor", cursor, m)
		}
	}
	ss.send(`{"jsonrpc":"2.0","id":"nc","method":"tools/list","params":{}}`)
	if m := ss.next(); m["id"] != "nc" || len(m["result"].(map[string]any)["tools"].([]any)) != 6 {
		t.Errorf("tools/list without a cursor: %v", m)
	}

	// A batch (2025-03-26) with an undeclared method is refused whole.
	s2, _, _, _ := newServer(t, newFake())
	old := openSession(t, s2)
	old.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}`)
	old.next()
	old.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"prompts/list"}]`)
	if m := old.next(); errCode(m) != -32600 || !strings.Contains(errData(m), `batch element 1: method "prompts/list" not found`) {
		t.Errorf("batch with prompts/list: %v", m)
	}
}
