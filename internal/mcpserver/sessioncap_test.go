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

// TestSessionCallsCapped (finding 13): 100 pipelined calls on one session
// never have more than MaxCallsPerSession in flight; the others are answered
// at once with a clear JSON-RPC error. On 3656465 every pipelined call was held
// (2,000 calls with 400 KB arguments: 1.45 GB).
func TestSessionCallsCapped(t *testing.T) {
	f := newFake("test.slow")
	d := &blockingDispatcher{fakeDispatcher: f, release: make(chan struct{})}
	s, _, _, _ := newServer(t, f, func(o *Options) { o.Dispatcher = d })
	in := []string{initLine, initializedLine}
	for i := 0; i < 100; i++ {
		in = append(in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test.slow","arguments":{"query":"q"}}}`, i+2))
	}
	pr, pw := io.Pipe()
	var out syncBuf
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), pr, &out) }()
	go func() { _, _ = io.WriteString(pw, lines(in...)) }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "too many tool calls in flight on this session") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(d.release)
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := d.peak.Load(); p > MaxCallsPerSession {
		t.Errorf("%d calls in flight at once; the limit is %d", p, MaxCallsPerSession)
	}
	busy, answered := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad frame %q: %v", line, err)
		}
		if id, _ := m["id"].(float64); id < 2 {
			continue
		}
		answered++
		if e, ok := m["error"].(map[string]any); ok && e["code"] == float64(CodeSessionBusy) {
			busy++
		}
	}
	if busy == 0 || answered != 100 {
		t.Errorf("%d of %d calls answered busy, want some of 100 answered", busy, answered)
	}
	t.Logf("peak %d in flight, %d answered busy", d.peak.Load(), busy)
}
