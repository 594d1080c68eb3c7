package runtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestPoolConcurrentFirstParty: 50 goroutines × 20 calls of the embedded
// memory.search on one module over a real store (then 50 × 4 calls split between
// memory.search and tree.browse, two modules contending) all succeed, and the pool never holds more than
// maxLiveTotal instances nor ends with more than maxIdlePerModule idle.
func TestPoolConcurrentFirstParty(t *testing.T) {
	store := fixtureStore(t)
	h, _ := newHost(t, Options{Reader: store, Builtins: firstPartyBuiltins(t)})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, err := store.Search(context.Background(), abi.SearchRequest{Query: "budget", K: 10})
	if err != nil || len(want.Chunks) == 0 {
		t.Fatalf("direct search: %v %v", want, err)
	}
	const goroutines = 50
	run := func(calls int, tools ...string) {
		var wg sync.WaitGroup
		errs := make(chan error, goroutines*calls)
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tool := tools[g%len(tools)]
				for i := 0; i < calls; i++ {
					args := `{"query":"budget","k":10}`
					if tool == "tree.browse" {
						args = `{"k":5}`
					}
					out, err := h.Call(context.Background(), Call{Tool: tool, Arguments: []byte(args)})
					switch {
					case err != nil:
						errs <- err
					case out.ToolError != nil:
						errs <- errors.New(out.ToolError.Message)
					case tool == "memory.search" && strings.Count(string(out.Result), `"id":`) != len(want.Chunks):
						errs <- errors.New("memory.search returned a different hit count: " + string(out.Result))
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		n := 0
		for err := range errs {
			if n++; n <= 5 {
				t.Errorf("%v: %v", tools, err)
			}
		}
		if n > 0 {
			t.Errorf("%v: %d of %d calls failed", tools, n, goroutines*calls)
		}
	}
	start := time.Now()
	run(20, "memory.search")
	t.Logf("memory.search, %d×%d calls: %v, %d instances made, peak %d live", goroutines, 20, time.Since(start), h.pool.created.Load(), h.pool.peak.Load())
	made := h.pool.created.Load()
	start = time.Now()
	// Two modules contending (kept shorter: SQLite under -race is slow).
	run(4, "memory.search", "tree.browse")
	t.Logf("memory.search+tree.browse, %d×%d calls: %v, %d instances made, peak %d live", goroutines, 4, time.Since(start), h.pool.created.Load()-made, h.pool.peak.Load())

	if peak := h.pool.peak.Load(); peak > maxLiveTotal || peak < 2 {
		t.Errorf("peak live instances = %d, want 2..%d", peak, maxLiveTotal)
	}
	if n := h.pool.instances.Load(); n != int64(h.pool.liveSlots()) {
		t.Errorf("%d instances open but %d slots held after all calls", n, h.pool.liveSlots())
	}
	for _, m := range h.builtins {
		if n := m.idleCount(); n > maxIdlePerModule {
			t.Errorf("%s keeps %d idle instances, want ≤ %d", m.info.Name, n, maxIdlePerModule)
		}
	}
	h.pool.mu.Lock()
	waiting := len(h.pool.waiters)
	h.pool.mu.Unlock()
	if waiting != 0 {
		t.Errorf("%d waiters left in the queue", waiting)
	}
}

// blockingReader holds memory_search calls in the host until released.
type blockingReader struct {
	*fakeReader
	entered chan struct{}
	release chan struct{}
}

func (r *blockingReader) Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error) {
	r.entered <- struct{}{}
	<-r.release
	return r.fakeReader.Search(ctx, req)
}

// TestPoolWaitIsNotPartOfTheDeadline: with all eight slots busy, a caller whose
// ctx expires while waiting gets a clear error; a caller that waits longer than
// the module's deadline still runs, because its deadline starts when it gets an
// instance; and the live instances never exceed eight.
func TestPoolWaitIsNotPartOfTheDeadline(t *testing.T) {
	r := &blockingReader{fakeReader: newFakeReader(), entered: make(chan struct{}, maxLiveTotal), release: make(chan struct{})}
	h, _ := newHost(t, Options{Reader: r, Builtins: []BuiltinModule{builtin("echo.wasm", echoModule(t, "timeout_ms = 1000"))}})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	early := make(chan error, maxLiveTotal)
	for i := 0; i < maxLiveTotal; i++ {
		held.Add(1)
		go func() {
			defer held.Done()
			_, err := h.Call(context.Background(), Call{Tool: "search", Arguments: []byte(`{"query":"budget","k":3}`)})
			early <- err
		}()
	}
	for i := 0; i < maxLiveTotal; i++ {
		select {
		case <-r.entered: // one more slot held inside a host call
		case err := <-early:
			close(r.release)
			t.Fatalf("a call meant to hold a slot returned before reaching the host: %v", err)
		}
	}
	if n := h.pool.liveSlots(); n != maxLiveTotal {
		t.Fatalf("%d slots held, want %d", n, maxLiveTotal)
	}

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := h.Call(short, Call{Tool: "echo"})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "waiting for a free sandbox") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call with a short ctx while the pool is full: %v", err)
	}

	done := make(chan error, 1)
	go func() {
		out, err := h.Call(context.Background(), Call{Tool: "echo", Arguments: []byte(`{"x":1}`)})
		if err == nil && !strings.Contains(string(out.Result), `"x":1`) {
			err = errors.New("echo returned " + string(out.Result))
		}
		done <- err
	}()
	// Wait longer than the 1,000 ms deadline before freeing the slots.
	time.Sleep(1500 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the waiting call returned while every slot was held: %v", err)
	default:
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Errorf("a call that waited past the module deadline failed: %v", err)
	}
	held.Wait()
	if peak := h.pool.peak.Load(); peak > maxLiveTotal {
		t.Errorf("peak live instances = %d, want ≤ %d", peak, maxLiveTotal)
	}
}
