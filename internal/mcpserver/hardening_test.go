package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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
