package runtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestPoolConcurrentFirstParty: 50 goroutines × 20 calls of the embedded
// memory.search over a real store (then 50 × 4 calls split between memory.search
// and tree.browse, two tools of the one memory module sharing its instances) all
// succeed, and the pool never holds more than maxLiveTotal instances nor ends with
// more than maxIdlePerModule idle.
func TestPoolConcurrentFirstParty(t *testing.T) {
	store := fixtureStore(t)
	h, _ := newHost(t, Options{Reader: memory.Default(store), Builtins: firstPartyBuiltins(t)})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, err := memory.Default(store).Search(context.Background(), abi.SearchRequest{Query: "budget", K: 10})
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
	// Two tools of one module interleaved on its instances (kept shorter: SQLite
	// under -race is slow).
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
	h, _ := newHost(t, Options{Reader: r, Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, "timeout_ms = 1000"))}})
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

// trickyReader answers like fakeReader, but in memory_search it holds the query
// "hold" until release is closed (signalling entered) and panics for the query
// "boom", which traps the guest's call.
type trickyReader struct {
	*fakeReader
	entered chan struct{}
	release chan struct{}
}

func (r *trickyReader) Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error) {
	switch req.Query {
	case "hold":
		r.entered <- struct{}{}
		<-r.release
	case "boom":
		panic("reader exploded")
	}
	return r.fakeReader.Search(ctx, req)
}

// TestMemoryModuleSharedInstances: the six memory tools run in one module, so a
// warm instance used for one tool serves the next call of another; two different
// tools called at once each get an instance of it; and a trap in one tool's call
// discards only the instance it ran in, not the module's other idle instance.
func TestMemoryModuleSharedInstances(t *testing.T) {
	r := &trickyReader{fakeReader: newFakeReader(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	h, _ := newHost(t, Options{Reader: r, Builtins: firstPartyBuiltins(t)})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := h.builtins[0]
	if m.info.Name != "memory.wasm" || len(h.builtins) != 2 {
		t.Fatalf("first builtin is %s of %d, want memory.wasm of 2", m.info.Name, len(h.builtins))
	}
	served := map[string]string{}
	for _, tl := range h.Tools() {
		served[tl.Name] = tl.Module.Name
	}
	for _, name := range []string{"memory.search", "memory.recall", "tree.read_chunk", "tree.browse", "tree.top_entities", "tree.list_sources"} {
		if served[name] != "memory.wasm" {
			t.Fatalf("%s is served by %q, want memory.wasm (served: %v)", name, served[name], served)
		}
	}
	made := h.pool.created.Load()
	args := map[string]string{
		"memory.search": `{"query":"budget","k":3}`, "memory.recall": `{"query":"budget"}`,
		"tree.read_chunk": `{"chunk_id":"0123456789abcdef0123456789abcdef"}`, "tree.browse": `{"k":2}`,
		"tree.top_entities": `{}`, "tree.list_sources": `{}`,
	}
	for name, a := range args { // one after another: all on the one warm instance
		out, err := call(t, h, name, a)
		if err != nil || (out.ToolError != nil && out.ToolError.Code != abi.CodeNotFound) {
			t.Fatalf("%s: %+v %v", name, out, err)
		}
	}
	if n := h.pool.created.Load() - made; n != 0 {
		t.Fatalf("sequential calls of the six tools made %d instances, want 0 (the warm one serves them all)", n)
	}

	// Two different tools at once: memory.search is held inside its host call while
	// tree.list_sources runs on a second instance of the module.
	held := make(chan error, 1)
	go func() {
		out, err := call(t, h, "memory.search", `{"query":"hold"}`)
		if err == nil && out.ToolError != nil {
			err = errors.New(out.ToolError.Message)
		}
		held <- err
	}()
	<-r.entered
	if out, err := call(t, h, "tree.list_sources", `{}`); err != nil || out.ToolError != nil || !strings.Contains(string(out.Result), `"sources"`) {
		close(r.release)
		t.Fatalf("tree.list_sources while memory.search is running: %+v %v", out, err)
	}
	close(r.release)
	if err := <-held; err != nil {
		t.Fatalf("the held memory.search: %v", err)
	}
	if n := h.pool.created.Load() - made; n != 1 {
		t.Fatalf("two concurrent calls made %d new instances, want 1", n)
	}
	if n := m.idleCount(); n != maxIdlePerModule {
		t.Fatalf("memory module keeps %d idle instances after concurrent calls, want %d", n, maxIdlePerModule)
	}

	// A trap in memory.search discards its instance only.
	made = h.pool.created.Load()
	_, err := call(t, h, "memory.search", `{"query":"boom"}`)
	if err == nil || !strings.Contains(err.Error(), "memory.search") {
		t.Fatalf("trapping call: %v, want an error naming memory.search", err)
	}
	if n := m.idleCount(); n != maxIdlePerModule-1 {
		t.Fatalf("after the trap the memory module keeps %d idle instances, want %d", n, maxIdlePerModule-1)
	}
	if out, err := call(t, h, "tree.browse", args["tree.browse"]); err != nil || out.ToolError != nil {
		t.Fatalf("tree.browse after the trap: %+v %v", out, err)
	}
	if n := h.pool.created.Load() - made; n != 0 {
		t.Fatalf("the call after the trap made %d instances, want 0 (the other idle one)", n)
	}
	if n := h.pool.instances.Load(); n != int64(h.pool.liveSlots()) {
		t.Errorf("%d instances open but %d slots held", n, h.pool.liveSlots())
	}

	// Statistics are kept per tool as well: the trap is memory.search's alone.
	st := h.Status()[0]
	search, browse := st.ToolStats["memory.search"], st.ToolStats["tree.browse"]
	if search.ConsecutiveErrors != 1 || search.Errors != 1 || !strings.Contains(search.LastError, "memory.search") ||
		browse.ConsecutiveErrors != 0 || browse.Errors != 0 || browse.Count != 2 || len(st.ToolStats) != 6 {
		t.Errorf("per-tool stats: memory.search %+v, tree.browse %+v, %d tools", search, browse, len(st.ToolStats))
	}
	var sum int64
	for _, ts := range st.ToolStats {
		sum += ts.Count
	}
	if sum != st.Stats.Count || st.Stats.ConsecutiveErrors != 0 {
		t.Errorf("module stats %+v, per-tool counts sum to %d", st.Stats, sum)
	}
}

// TestGrownInstanceIsNotPooled checks that an instance whose linear memory passed
// twice its size after _initialize is closed after its call instead of going back
// to the pool, and that the next call gets a fresh one.
func TestGrownInstanceIsNotPooled(t *testing.T) {
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}})
	ctx := context.Background()
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	idleMemory := func() (n int, mem, init uint64) {
		h.pool.mu.Lock()
		defer h.pool.mu.Unlock()
		for _, in := range h.pool.idle {
			n++
			mem += in.memoryBytes()
			init += in.initMem
		}
		return
	}
	if _, err := h.Call(ctx, Call{Tool: "echo", Arguments: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	n, mem, init := idleMemory()
	if n != 1 || init == 0 || mem > 2*init {
		t.Fatalf("after a small call: %d idle, memory %d, initial %d; want 1 idle within twice its initial memory", n, mem, init)
	}
	made := h.pool.created.Load()
	// Echoing a 0.9 MB argument takes several copies of it in the guest's heap.
	big := []byte(`{"s":"` + strings.Repeat("x", 900<<10) + `"}`)
	out, err := h.Call(ctx, Call{Tool: "echo", Arguments: big})
	if err != nil || out.ToolError != nil {
		t.Fatalf("echo of 0.9 MB: %v %+v", err, out)
	}
	if n, mem, _ := idleMemory(); n != 0 {
		t.Fatalf("after a call that grew the memory: %d idle instances (%d bytes), want the grown one closed", n, mem)
	}
	if _, err := h.Call(ctx, Call{Tool: "echo", Arguments: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := h.pool.created.Load(); got != made+1 {
		t.Errorf("instances made: %d after the grown one was closed, want %d", got, made+1)
	}
	if n, mem, init := idleMemory(); n != 1 || mem > 2*init {
		t.Errorf("after the next call: %d idle, memory %d (initial %d)", n, mem, init)
	}
}
