package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
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
