package mcpserver

import (
	"context"
	"encoding/json"
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
