package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/runtime"
)

// blockingDispatcher holds every test.slow call until release is closed and
// records how many were in flight at once.
type blockingDispatcher struct {
	*fakeDispatcher
	inflight, peak atomic.Int64
	release        chan struct{}
}

func (d *blockingDispatcher) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	n := d.inflight.Add(1)
	defer d.inflight.Add(-1)
	for p := d.peak.Load(); n > p && !d.peak.CompareAndSwap(p, n); p = d.peak.Load() {
	}
	select {
	case <-d.release:
		return &runtime.Outcome{Result: json.RawMessage(`{"chunks":[]}`)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pipelined sends n tools/calls of test.slow with argument text of pad bytes on
// one stdio session whose dispatcher holds each call until release, waits
// until full reports the session full, releases them, and returns every answer
// line to a call.
func pipelined(t *testing.T, n, pad int, full func(d *blockingDispatcher, out string) bool) (*blockingDispatcher, []map[string]any) {
	t.Helper()
	f := newFake("test.slow")
	d := &blockingDispatcher{fakeDispatcher: f, release: make(chan struct{})}
	s, _, _, _ := newServer(t, f, func(o *Options) { o.Dispatcher = d })
	in := []string{initLine, initializedLine}
	text := strings.Repeat("q", pad)
	for i := 0; i < n; i++ {
		in = append(in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test.slow","arguments":{"query":%q}}}`, i+2, text))
	}
	pr, pw := io.Pipe()
	var out syncBuf
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), pr, &out) }()
	go func() { _, _ = io.WriteString(pw, lines(in...)); pw.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for !full(d, out.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !full(d, out.String()) {
		t.Fatalf("the session never filled: %d calls in flight", d.inflight.Load())
	}
	close(d.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var answers []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad frame %q: %v", line, err)
		}
		if id, _ := m["id"].(float64); id >= 2 {
			answers = append(answers, m)
		}
	}
	return d, answers
}

// TestPipelinedCallsWait (issue 38): 200 calls pipelined on stdio never have
// more than MaxCallsPerSession in flight, and none is refused: the server stops
// reading stdin while the session is full and answers all 200 in turn. (Issue
// 29 had the calls beyond the bound answered -32001; ecfd484: 168 of 200.)
func TestPipelinedCallsWait(t *testing.T) {
	d, answers := pipelined(t, 200, 1, func(d *blockingDispatcher, _ string) bool {
		return d.inflight.Load() >= MaxCallsPerSession
	})
	if p := d.peak.Load(); p > MaxCallsPerSession {
		t.Errorf("%d calls in flight at once; the limit is %d", p, MaxCallsPerSession)
	}
	errs := 0
	for _, m := range answers {
		if _, ok := m["error"]; ok {
			errs++
		}
	}
	if len(answers) != 200 || errs != 0 {
		t.Errorf("%d answers, %d errors; want 200 answers and no error", len(answers), errs)
	}
	t.Logf("peak %d in flight, %d answers, %d errors", d.peak.Load(), len(answers), errs)
}

// Calls whose arguments would pass the session's byte bound together wait as
// well: 40 calls of ≈ 900 KB each (36 MB) are all answered without an error,
// with never more than the bound's worth in flight.
func TestPipelinedLargeCallsWait(t *testing.T) {
	const pad = 900 << 10
	d, answers := pipelined(t, 40, pad, func(d *blockingDispatcher, _ string) bool {
		return d.inflight.Load() >= MaxArgBytesPerSession/pad-1
	})
	if p := d.peak.Load(); p*pad > MaxArgBytesPerSession {
		t.Errorf("%d calls of %d bytes in flight at once; the bound is %d bytes", p, pad, MaxArgBytesPerSession)
	}
	errs := 0
	for _, m := range answers {
		if _, ok := m["error"]; ok {
			errs++
		}
	}
	if len(answers) != 40 || errs != 0 {
		t.Errorf("%d answers, %d errors; want 40 answers and no error", len(answers), errs)
	}
}
