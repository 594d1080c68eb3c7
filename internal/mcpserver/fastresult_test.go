package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/runtime"
)

// fastResultPayloads are tool results with every byte class the two encodings
// treat specially: quotes and backslashes, escaped control characters, HTML
// characters, U+2028/U+2029, non-ASCII, invalid UTF-8 (repaired by shape), and
// whitespace outside strings (compacted by shape).
var fastResultPayloads = []string{
	`{}`,
	`{"chunks":[]}`,
	`{"a":"plain text"}`,
	`{"q":"say \"hi\" \\ back\\slash","ctl":"\n\t\r\b\f\u0001\u001f"}`,
	`{"html":"<b>a & b</b> -> x","escaped":"\u003c\u003e\u0026"}`,
	"{\"sep\":\"line\u2028para\u2029end\",\"esc\":\"\\u2028\\u2029\"}",
	`{"u":"Zoë — naïve 日本語 😀","k":[1,2.5,-3e10,true,false,null]}`,
	"{\"bad\":\"\xff\xfe ok \xc3\"}",
	"{ \"spaced\" : [ 1 , { \"x\" : \"a b\" } ] ,\n\t\"n\":null }",
	`{"nested":{"deep":[[[{"x":"</script>"}]]]},"amp":"&amp;"}`,
}

// TestFastResultFramesMatchTheSDK runs the same calls through a server with the
// fast path and one without it, and checks that every frame is byte for byte
// the same, for each protocol version (the newest adds resultType) and for a
// JSON-RPC batch (2025-03-26).
func TestFastResultFramesMatchTheSDK(t *testing.T) {
	payloads := append(slicesClone(fastResultPayloads), string(searchResult(10)))
	for _, version := range ProtocolVersions {
		t.Run(version, func(t *testing.T) {
			var calls []string
			for i := range payloads {
				calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"q%d"}}}`, 10+i, i))
			}
			if version < "2025-06-18" {
				calls = append(calls, `[`+strings.Join([]string{
					`{"jsonrpc":"2.0","id":"b1","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"q0"}}}`,
					`{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"q1"}}}`,
				}, ",")+`]`)
			}
			fast := framesFor(t, version, payloads, calls, false)
			slow := framesFor(t, version, payloads, calls, true)
			if len(fast) != len(slow) || len(fast) < len(payloads)+1 {
				t.Fatalf("fast path wrote %d frames, the SDK %d (want ≥ %d)", len(fast), len(slow), len(payloads)+1)
			}
			for i := range fast {
				if !bytes.Equal(fast[i], slow[i]) {
					t.Errorf("frame %d differs:\nfast %s\nsdk  %s", i, fast[i], slow[i])
				}
				if bytes.Contains(fast[i], []byte("oh-result-")) {
					t.Errorf("frame %d still holds a placeholder: %s", i, fast[i])
				}
			}
		})
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// framesFor serves initialize and calls (each answered with the next payload, in
// call order) and returns the frames written, in the order of the calls' ids.
func framesFor(t *testing.T, version string, payloads, calls []string, noFast bool) [][]byte {
	t.Helper()
	d := &seqDispatcher{payloads: payloads}
	d.tools = newFake().tools
	s, err := New(Options{Dispatcher: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoFastResults: noFast, Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ls, init := serveLines(t, s, version)
	send, read := ls.send, ls.read
	frames := [][]byte{init}
	for _, c := range calls { // one at a time, so the payloads go in call order
		send(c)
		frames = append(frames, read())
	}
	ls.close()
	if n, want := s.fastCalls.Load(), int64(d.n); noFast && n != 0 || !noFast && n != want {
		t.Errorf("noFast=%v: %d of %d results went through the fast path", noFast, n, want)
	}
	return frames
}

// seqDispatcher answers a call whose query is "q<i>" with the i-th payload (the
// calls of a batch run concurrently, so their arrival order is not theirs), and
// any other call with the next payload in arrival order.
type seqDispatcher struct {
	resultDispatcher
	mu       sync.Mutex
	payloads []string
	n        int
}

func (d *seqDispatcher) Call(_ context.Context, c runtime.Call) (*runtime.Outcome, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := d.n
	d.n++
	var args struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(c.Arguments, &args) == nil && strings.HasPrefix(args.Query, "q") {
		if n, err := strconv.Atoi(args.Query[1:]); err == nil {
			i = n
		}
	}
	p := d.payloads[i%len(d.payloads)]
	return &runtime.Outcome{Result: json.RawMessage(p), ModuleSHA256: "sha"}, nil
}

// TestFastResultClientDecodes checks with the official go-sdk client that a
// result from the fast path decodes to the tool's JSON, as text and as
// structuredContent.
func TestFastResultClientDecodes(t *testing.T) {
	for _, p := range fastResultPayloads {
		d := &seqDispatcher{payloads: []string{p}}
		d.tools = newFake().tools
		s, err := New(Options{Dispatcher: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		cs := connectClient(t, s, "fast", nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "x"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", p, err, res)
		}
		var want any
		if err := json.Unmarshal(repairUTF8([]byte(p)), &want); err != nil {
			t.Fatal(err)
		}
		var fromText any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &fromText); err != nil {
			t.Fatalf("%s: text block is not JSON: %v", p, err)
		}
		wantJSON, _ := json.Marshal(want)
		textJSON, _ := json.Marshal(fromText)
		structJSON, _ := json.Marshal(res.StructuredContent)
		if string(textJSON) != string(wantJSON) || string(structJSON) != string(wantJSON) {
			t.Errorf("%s:\ntext       %s\nstructured %s\nwant       %s", p, textJSON, structJSON, wantJSON)
		}
	}
}

// TestCancelledFastResultIsForgotten checks that the result of a call whose
// answer is not sent (the client cancelled it) is not kept.
func TestCancelledFastResultIsForgotten(t *testing.T) {
	f := newFastResults()
	tok := f.put([]byte(`{"a":1}`))
	frame := []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + tok + `"}],"structuredContent":"` + tok + `"}}`)
	f.forget(frame)
	if len(f.pending) != 0 {
		t.Fatalf("%d results kept after forget", len(f.pending))
	}
	if out, ok := f.fill(frame); !ok || !bytes.Equal(out, frame) {
		t.Errorf("fill of a forgotten result: ok=%v %s", ok, out)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, p := range fastResultPayloads {
		f.Add([]byte(p))
	}
	f.Add([]byte("\xe2\x80\xa8\xe2\x80\xa9\xe2\x80"))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, _ := json.Marshal(string(b))
		if got := appendJSONString(nil, b); !bytes.Equal(got, want) {
			t.Fatalf("%q:\ngot  %s\nwant %s", b, got, want)
		}
		if !json.Valid(b) {
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, b) != nil {
			return
		}
		want, err := json.Marshal(struct {
			V json.RawMessage `json:"v"`
		}{compact.Bytes()})
		if err != nil {
			t.Fatal(err)
		}
		got := append(appendHTMLEscaped([]byte(`{"v":`), compact.Bytes()), '}')
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\ngot  %s\nwant %s", b, got, want)
		}
	})
}

// lineSession serves s over pipes: send writes one line, read returns the next
// frame, and close ends stdin and returns Serve's error.
type lineSession struct {
	t    *testing.T
	inW  *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

// serveLines starts s.Serve on pipes and answers initialize for version (and
// sends notifications/initialized), returning the session and initialize's frame.
func serveLines(t *testing.T, s *Server, version string) (*lineSession, []byte) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ls := &lineSession{t: t, inW: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	go func() { ls.done <- s.Serve(context.Background(), inR, outW); outW.Close() }()
	ls.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	init := ls.read()
	ls.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return ls, init
}

func (ls *lineSession) send(line string) {
	ls.t.Helper()
	if _, err := io.WriteString(ls.inW, line+"\n"); err != nil {
		ls.t.Fatal(err)
	}
}

func (ls *lineSession) read() []byte {
	ls.t.Helper()
	line, err := ls.out.ReadBytes('\n')
	if err != nil {
		ls.t.Fatalf("reading a frame: %v", err)
	}
	return line
}

// close ends stdin and fails the test if Serve returned an error.
func (ls *lineSession) close() {
	ls.t.Helper()
	ls.inW.Close()
	if err := <-ls.done; err != nil {
		ls.t.Fatalf("Serve: %v", err)
	}
}
