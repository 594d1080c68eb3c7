package main

import (
	"context"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openhuman/openhuman-core/internal/mcpserver"
	"github.com/openhuman/openhuman-core/runtime"
)

// The start window of `mcp`: from the start of serveMCP until the first tool call
// has been answered (or startWindowMax, for a client that calls nothing at once),
// the Go garbage collector runs only if the Go memory in use reaches
// startWindowMemory, and the full collections the runtime makes once the modules
// are warm (returning compile garbage to the OS, sizing the Go memory limit) wait
// for the window's end. A start allocates ≈ 10 MB in total, so the default
// collector ran two cycles during it and a forced one beside the first call: in
// 31 interleaved warm starts on the shared 2-core machine, spawn → first
// memory.search went 18.9–19.4 → 12.3–13.5 ms with both held back, and neither alone
// moved it (runtime/RATIONALE.md, "Start-up: the path to initialize and the first
// call").
const (
	// startWindowMax ends the window of a session whose first call does not come
	// at once (a client that only lists the tools, then waits for its user).
	startWindowMax = time.Second
	// startWindowMemory bounds the Go memory while the collector is held back: the
	// same headroom LimitGoMemory then adds to the warm footprint (≈ 13 MB).
	startWindowMemory = 64 << 20
	// startWindowAnswer lets the first call's answer be encoded and written before
	// the collector is given back (setting GOGC again starts a cycle at the next
	// allocation, since the heap has grown past its old goal).
	startWindowAnswer = 20 * time.Millisecond
)

// startWindow holds the garbage collector back during the start of `mcp`.
type startWindow struct {
	done        chan struct{} // closed when the window ends
	once        sync.Once
	timer       *time.Timer
	held        bool // the collector's settings were changed (restore them)
	prevPercent int
	prevLimit   int64
}

// openStartWindow starts the window, which ends at the latest after max. With GOGC or GOMEMLIMIT in the environment
// the operator's settings stand: the collector is left alone, and only the
// runtime's collections still wait for the window's end.
func openStartWindow(max time.Duration) *startWindow {
	w := &startWindow{done: make(chan struct{})}
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	if !gogc && !limit {
		w.held = true
		// The limit first: the collector is never off without a bound.
		w.prevLimit = debug.SetMemoryLimit(startWindowMemory)
		w.prevPercent = debug.SetGCPercent(-1)
	}
	w.timer = time.AfterFunc(max, w.close)
	return w
}

// close ends the window (once): the collector's settings are restored before
// done is closed, so what waits for done (Host.LimitGoMemory) sets its limit
// after them.
func (w *startWindow) close() {
	w.once.Do(func() {
		w.timer.Stop()
		if w.held {
			debug.SetGCPercent(w.prevPercent)
			debug.SetMemoryLimit(w.prevLimit)
		}
		close(w.done)
	})
}

// firstCallDispatcher is the host as the MCP server's dispatcher, ending the start
// window startWindowAnswer after its first call has returned.
type firstCallDispatcher struct {
	*runtime.Host
	window *startWindow
	called atomic.Bool
}

var _ mcpserver.Dispatcher = (*firstCallDispatcher)(nil)

// Call runs the call on the host.
func (d *firstCallDispatcher) Call(ctx context.Context, call runtime.Call) (*runtime.Outcome, error) {
	out, err := d.Host.Call(ctx, call)
	if !d.called.Load() && d.called.CompareAndSwap(false, true) {
		time.AfterFunc(startWindowAnswer, d.window.close)
	}
	return out, err
}
