package mcpserver

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fastCallTable are tools/call lines (and a few others) of every kind the fast
// path takes or leaves to the SDK: results, each argument error, tool failures,
// odd ids, unknown tools, params of the wrong types. fast says whether the line
// filter answers it itself.
var fastCallTable = []struct {
	line string
	fast bool
}{
	{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"budget","k":3}}}`, true},
	{`{"jsonrpc":"2.0","id":"abc-1","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"budget"}}}`, true},
	{`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"arguments":{"query":"x"},"name":"memory.recall"}}`, true},
	{`{"jsonrpc":"2.0","id":123456789012345,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"}}}`, true},
	{`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"}}}`, false},
	{`{"jsonrpc":"2.0","id":12345678901234567890123,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"}}}`, false},
	{`{"jsonrpc":"2.0","id":"a\u0041<b>","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"}}}`, false},
	{`{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"}}}`, true},
	{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"portable name"}}}`, true},
	{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"memory.search","arguments":{}}}`, true},
	{`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"memory.search"}}`, true},
	{`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"  "}}}`, true},
	{`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x","k":2.5}}}`, true},
	{`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x","k":0}}}`, true},
	{`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x","k":99}}}`, true},
	{`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x","colour":"red"}}}`, true},
	{`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":5}}}`, true},
	{`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"<b>\"q\" & \u2028 ü"}}}`, true},
	{`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"memory.search","arguments":[1,2]}}`, false},
	{`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"memory.search","arguments":null}}`, false},
	{`{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"memory.search","arguments":"q"}}`, false},
	// A client written to split the two paths: a repeated member (the last one
	// counts on both), a member the SDK's struct decoding matches case-insensitively.
	{`{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"tree.browse","name":"memory.search","arguments":{"query":"x"},"arguments":{"query":"budget","k":2}}}`, true},
	{`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"Name":"memory.search","arguments":{"query":"x"}}}`, false},
	{`{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"},"Arguments":{"query":"budget"}}}`, false},
	{`{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":5,"arguments":{}}}`, false},
	{`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"no.such","arguments":{}}}`, false},
	{`{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"},"_meta":{"progressToken":7}}}`, false},
	{`{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"},"extra":1}}`, false},
	{`{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{}}`, false},
	{`{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"test.fail","arguments":{}}}`, true},
	{`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"test.bad","arguments":{}}}`, true},
	{`{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"test.utf8","arguments":{}}}`, true},
	{`{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"test.vanished","arguments":{}}}`, true},
	{`{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"Memory.Search","arguments":{}}}`, false},
	{`{ "jsonrpc" : "2.0", "id" : 34, "method" : "tools/call", "params" : { "name" : "memory.search", "arguments" : { "query" : "spaced out" } } }`, true},
	{`{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"x"}},"extra":true}`, false},
	{`{"jsonrpc":"2.0","id":36,"method":"ping"}`, false},
}

// errorIDs are the random error ids of failure messages (audit.NewErrorID).
var errorIDs = regexp.MustCompile(`error id [0-9a-f]{12}`)

// TestFastCallFramesMatchTheSDK sends the same lines to a server with the fast
// tools/call path and to one without it (Options.NoFastCalls), on every protocol
// version, and checks that the frames are byte for byte the same (error ids
// aside, which are random), that the fast path took exactly the lines it should,
// and that a cancelled fast call is cancelled and not answered.
func TestFastCallFramesMatchTheSDK(t *testing.T) {
	for _, version := range ProtocolVersions {
		t.Run(version, func(t *testing.T) {
			var lines []string
			wantFast := 0
			for _, c := range fastCallTable {
				lines = append(lines, c.line)
				if c.fast {
					wantFast++
				}
			}
			if version < "2025-06-18" { // a batch: always the SDK's
				lines = append(lines, `[{"jsonrpc":"2.0","id":"b1","method":"tools/call","params":{"name":"memory.search","arguments":{"query":"q0"}}},{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"memory.search","arguments":{"k":1}}}]`)
			}
			fast, nFast := callFrames(t, version, lines, false)
			slow, nSlow := callFrames(t, version, lines, true)
			if nFast != wantFast || nSlow != 0 {
				t.Errorf("fast calls: %d with the fast path (want %d), %d without (want 0)", nFast, wantFast, nSlow)
			}
			if len(fast) != len(slow) || len(fast) != len(lines)+1 {
				t.Fatalf("fast path wrote %d frames, the SDK %d (want %d)", len(fast), len(slow), len(lines)+1)
			}
			for i := range fast {
				f, s := errorIDs.ReplaceAll(fast[i], []byte("error id X")), errorIDs.ReplaceAll(slow[i], []byte("error id X"))
				if !bytes.Equal(f, s) {
					t.Errorf("frame %d differs:\nline %s\nfast %s\nsdk  %s", i, append([]string{"initialize"}, lines...)[i], fast[i], slow[i])
				}
			}
		})
	}
}

// callFrames serves initialize and lines one at a time on a server over the fake
// dispatcher and returns the frames written and how many calls the fast path ran.
// It ends with a cancelled call of test.slow, which must not be answered, and a
// ping, whose answer must be the next frame.
func callFrames(t *testing.T, version string, lines []string, noFast bool) ([][]byte, int) {
	t.Helper()
	d := newFake("test.fail", "test.bad", "test.utf8", "test.vanished", "test.slow")
	s, err := New(Options{Dispatcher: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoFastCalls: noFast, Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ls, init := serveLines(t, s, version)
	send, read := ls.send, ls.read
	frames := [][]byte{init}
	for _, l := range lines {
		send(l)
		frames = append(frames, read())
	}
	fastBefore := s.fastCallsRun.Load()

	// Cancellation: the call's context ends, and its answer is never written.
	send(`{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"test.slow","arguments":{}}}`)
	select {
	case <-d.started:
	case <-time.After(10 * time.Second):
		t.Fatal("test.slow never started")
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"test"}}`)
	select {
	case err := <-d.slowErr:
		if err == nil {
			t.Error("test.slow returned without its context being cancelled")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call was not cancelled")
	}
	send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if f := read(); !strings.Contains(string(f), `"id":"after"`) {
		t.Errorf("after a cancelled call, the next frame is %s, want the ping's answer", f)
	}
	if n := s.fastCallsRun.Load() - fastBefore; noFast && n != 0 || !noFast && n != 1 {
		t.Errorf("noFast=%v: the cancelled call went the fast path %d times", noFast, n)
	}
	ls.close()
	return frames, int(fastBefore)
}

// TestPlainRequestID pins which ids the fast path takes.
func TestPlainRequestID(t *testing.T) {
	for raw, want := range map[string]bool{
		`1`: true, `0`: true, `-3`: true, `999999999999999`: true, `"x"`: true, `""`: true,
		`1000000000000000`: false, `01`: false, `-0`: false, `1.0`: false, `1e3`: false, `-`: false,
		`"a\"b"`: false, `"<"`: false, `"é"`: false, `null`: false, `true`: false,
	} {
		if _, ok := plainRequestID([]byte(raw)); ok != want {
			t.Errorf("plainRequestID(%s) = %v, want %v", raw, ok, want)
		}
	}
	id, _ := plainRequestID([]byte(`-42`))
	if got := fmt.Sprint(id.Raw()); got != "-42" {
		t.Errorf("id -42 decodes to %s", got)
	}
}
