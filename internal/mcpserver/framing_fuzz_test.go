package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzLineFilter feeds arbitrary bytes to the stdio line filter, with a stand-in
// for the SDK that answers every request it is handed. It checks what the filter
// promises: every line it passes on is one compact line of valid UTF-8 that the
// SDK's own decoder accepts (so no input can end the session); every line the
// filter writes itself is valid UTF-8 JSON-RPC; and once every request passed on
// is answered, nothing is left pending (so EOF never waits for the drain).
func FuzzLineFilter(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
			`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"q"}}},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}]` + "\n",
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":7.0,"method":"initialize","params":{}}` + "\r\n",
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1e3,"method":"ping","params":[]}`,
		`[]` + "\n" + `[1]` + "\n" + `"x"` + "\n" + "\xff\xfe\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"id":null}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"_meta":[1]}}` + "\n" + `{"jsonrpc":"2.0","id":"\u0000","method":"resources/list"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		c := newStdioConn(bytes.NewReader(in), &out, slog.New(slog.DiscardHandler), 0)
		c.maxLine = 4 << 10 // small enough that the fuzzer reaches the oversize path
		r := bufio.NewReader(c.reader())
		w := c.writer()
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				passedOn(t, line, w)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
		}
		c.mu.Lock()
		left := len(c.pending) + c.writing
		c.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d requests still pending after every request passed on was answered (pending %v)", left, c.pending)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(l) == 0 {
				if out.Len() == 0 {
					break
				}
				t.Fatalf("empty line written to stdout: %q", out.Bytes())
			}
			if !utf8.Valid(l) || !json.Valid(l) {
				t.Fatalf("written line is not valid UTF-8 JSON: %q", l)
			}
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
			}
			if l[0] == '{' {
				if err := json.Unmarshal(l, &m); err != nil || m.JSONRPC != "2.0" || m.ID == nil {
					t.Fatalf("written line is not a JSON-RPC answer: %q", l)
				}
			}
		}
	})
}

// passedOn checks one line the filter hands to the SDK and answers each request
// in it as the SDK would (initialize with a protocol version that has batches).
func passedOn(t *testing.T, line []byte, w io.Writer) {
	t.Helper()
	if line[len(line)-1] != '\n' || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("passed on something that is not one line: %q", line)
	}
	body := line[:len(line)-1]
	if !utf8.Valid(body) {
		t.Fatalf("passed on invalid UTF-8: %q", body)
	}
	var elems []json.RawMessage
	batch := len(body) > 0 && body[0] == '['
	if batch {
		if err := json.Unmarshal(body, &elems); err != nil || len(elems) == 0 {
			t.Fatalf("passed on a batch the SDK cannot split: %q (%v)", body, err)
		}
	} else {
		elems = []json.RawMessage{body}
	}
	var answers []json.RawMessage
	for _, e := range elems {
		msg, err := jsonrpc.DecodeMessage(e)
		if err != nil {
			t.Fatalf("passed on a message the SDK rejects: %q: %v", e, err)
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		if batch && req.Method == "initialize" {
			t.Fatalf("passed on initialize inside a batch: %q", body)
		}
		result := json.RawMessage(`{}`)
		if req.Method == "initialize" {
			result = json.RawMessage(`{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)
		}
		a, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: result})
		if err != nil {
			t.Fatalf("encode answer: %v", err)
		}
		answers = append(answers, a)
	}
	switch {
	case len(answers) == 0:
	case batch:
		w.Write(append(mustMarshal(answers), '\n'))
	default:
		w.Write(append(answers[0], '\n'))
	}
}
