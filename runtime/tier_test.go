package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// tierCalls are calls of every memory tool, valid and invalid, for comparing the
// tiers. Chunk ids are filled in from a first search.
var tierCalls = []struct{ tool, args string }{
	{"memory.search", `{"query":"budget","k":5}`},
	{"memory.search", `{"query":"phoenix launch"}`},
	{"memory.search", `{"query":"brake pads","k":1}`},
	{"memory.search", `{"query":"nothing matches zzzq"}`},
	{"memory.search", `{"query":"x","k":51}`},
	{"memory.search", `{}`},
	{"memory.recall", `{"query":"who approved the launch party budget"}`},
	{"memory.recall", `{"query":"car insurance","k":2}`},
	{"tree.read_chunk", `{"chunk_id":"%s"}`},
	{"tree.read_chunk", `{"chunk_id":"00000000000000000000000000000000"}`},
	{"tree.browse", `{}`},
	{"tree.browse", `{"source_kinds":["email"],"k":1}`},
	{"tree.top_entities", `{}`},
	{"tree.list_sources", `{}`},
	{"tree.list_sources", `{"bogus":1}`},
}

// runTierCalls makes every call of tierCalls and returns one line per call:
// the result or the tool error, or the Go error.
func runTierCalls(t *testing.T, h *Host) []string {
	t.Helper()
	first, err := call(t, h, "memory.search", `{"query":"budget","k":1}`)
	if err != nil || first.ToolError != nil {
		t.Fatalf("search: %v %+v", err, first)
	}
	var hit struct {
		Chunks []struct {
			ID string `json:"id"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal(first.Result, &hit); err != nil || len(hit.Chunks) == 0 {
		t.Fatalf("search result %s: %v", first.Result, err)
	}
	var out []string
	for _, c := range tierCalls {
		args := c.args
		if strings.Contains(args, "%s") {
			args = fmt.Sprintf(args, hit.Chunks[0].ID)
		}
		o, err := call(t, h, c.tool, args)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s %s: error %v", c.tool, args, err))
		case o.ToolError != nil:
			out = append(out, fmt.Sprintf("%s %s: tool error %s %s", c.tool, args, o.ToolError.Code, o.ToolError.Message))
		default:
			out = append(out, fmt.Sprintf("%s %s: %s", c.tool, args, o.Result))
		}
	}
	return out
}

// The interpreted and the compiled tier give the same bytes for the same calls.
func TestTiersGiveIdenticalResults(t *testing.T) {
	store := fixtureStore(t)
	results := map[string][]string{}
	for _, engine := range []string{EngineInterpreter, EngineCompiled} {
		h, logs := newHost(t, Options{Reader: store, Builtins: firstPartyBuiltins(t), Engine: engine})
		out := runTierCalls(t, h)
		if engine == EngineInterpreter {
			m := findModule(h, "memory.wasm")
			m.mu.Lock()
			interp, compiled := m.interp, m.compiled
			m.mu.Unlock()
			if interp == nil || compiled != nil {
				t.Fatalf("engine %s: interpreted tier %v, compiled %v; want only the interpreter\n%s", engine, interp != nil, compiled != nil, logs)
			}
		}
		results[engine] = out
	}
	a, b := results[EngineInterpreter], results[EngineCompiled]
	if len(a) != len(b) {
		t.Fatalf("%d results interpreted, %d compiled", len(a), len(b))
	}
	tools := 0
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("call %d differs:\ninterpreted: %s\ncompiled:    %s", i, a[i], b[i])
		}
		if strings.Contains(a[i], ": error ") {
			t.Errorf("call %d failed: %s", i, a[i])
		}
		if strings.Contains(a[i], "tool error") {
			tools++
		}
	}
	if tools == 0 || tools == len(a) {
		t.Errorf("%d of %d calls were tool errors; the comparison needs both kinds", tools, len(a))
	}
}

// With the compiled module not in the cache, a first-party module is served by
// the interpreter at once; once its optimizing compile is done new instances are
// compiled ones, an interpreted instance still in use is closed (not pooled) when
// its call ends, the interpreter's runtime is closed with its last instance, and
// the next start finds the module in the cache and does not interpret it.
func TestTieredStart(t *testing.T) {
	store := fixtureStore(t)
	dir := t.TempDir()
	hold := make(chan struct{})
	h, logs := newHost(t, Options{Reader: store, Builtins: firstPartyBuiltins(t), CacheDir: dir, holdOptimizing: hold})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	before, err := call(t, h, "memory.search", `{"query":"budget launch","k":3}`)
	if err != nil || before.ToolError != nil {
		t.Fatalf("search while compiling: %v %+v\n%s", err, before, logs)
	}
	m := findModule(h, "memory.wasm")
	m.mu.Lock()
	tier, compiled := m.interp, m.compiled
	m.mu.Unlock()
	if tier == nil || compiled != nil {
		t.Fatalf("interpreted tier %v, compiled %v while the optimizing compile is held\n%s", tier != nil, compiled != nil, logs)
	}
	if st := statusOf(t, h, "memory.wasm"); st.State != StateReady {
		t.Fatalf("memory.wasm is %s while served interpreted", st.State)
	}
	held, err := h.pool.acquire(ctx, m, "")
	if err != nil || held.tier != tier {
		t.Fatalf("acquire: %v; instance of the interpreted tier: %v", err, err == nil && held.tier == tier)
	}

	close(hold)
	if err := h.WaitReady(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	m.mu.Lock()
	interp, compiled := m.interp, m.compiled
	m.mu.Unlock()
	if interp != nil || compiled == nil {
		t.Fatalf("after the compile: interpreted tier %v, compiled %v", interp != nil, compiled != nil)
	}
	tier.mu.Lock()
	retired, closed, live := tier.retired, tier.closed, tier.live
	tier.mu.Unlock()
	if !retired || closed || live != 1 {
		t.Fatalf("tier retired %v closed %v live %d; want retired, open for the instance in use", retired, closed, live)
	}
	h.pool.release(held, true)
	tier.mu.Lock()
	closed, live = tier.closed, tier.live
	tier.mu.Unlock()
	if !closed || live != 0 {
		t.Errorf("after its last instance: tier closed %v, live %d", closed, live)
	}
	h.pool.mu.Lock()
	for _, in := range h.pool.idle {
		if in.tier != nil {
			t.Errorf("an interpreted instance is idle in the pool after the switch")
		}
	}
	h.pool.mu.Unlock()
	after, err := call(t, h, "memory.search", `{"query":"budget launch","k":3}`)
	if err != nil || after.ToolError != nil || !bytes.Equal(after.Result, before.Result) {
		t.Fatalf("search on the compiled tier: %v %+v; want the interpreted result %s", err, after, before.Result)
	}
	if !strings.Contains(logs.String(), "ready in the interpreter") {
		t.Errorf("no log of the interpreted start:\n%s", logs)
	}
	if !h.cacheAuth.compiledBefore(m.info.SHA256) {
		t.Fatal("the cache does not record the compiled module")
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}

	h2, logs2 := newHost(t, Options{Reader: store, Builtins: firstPartyBuiltins(t), CacheDir: dir})
	if _, err := call(t, h2, "memory.search", `{"query":"budget"}`); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs2.String(), "ready in the interpreter") {
		t.Errorf("a module in the cache was interpreted:\n%s", logs2)
	}
	if m2 := findModule(h2, "memory.wasm"); m2.engine() != EngineCompiled {
		t.Errorf("engine with the module in the cache: %q", m2.engine())
	}
}

// FinishCaching waits for a module that served a call to land in the cache.
func TestFinishCaching(t *testing.T) {
	store := fixtureStore(t)
	dir := t.TempDir()
	hold := make(chan struct{})
	h, logs := newHost(t, Options{Reader: store, Builtins: firstPartyBuiltins(t), CacheDir: dir, holdOptimizing: hold})
	if err := h.FinishCaching(context.Background()); err != nil {
		t.Fatalf("with no call served: %v", err)
	}
	if _, err := call(t, h, "memory.search", `{"query":"budget"}`); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.FinishCaching(short); err == nil {
		t.Fatal("FinishCaching returned while the compile was held")
	}
	close(hold)
	if err := h.FinishCaching(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := findModule(h, "memory.wasm")
	if !h.cacheAuth.compiledBefore(m.info.SHA256) {
		t.Fatal("FinishCaching returned before the module was in the cache")
	}
}

// The sandbox tests pass with every module run by the interpreter: the limits,
// deadlines, capability checks and host functions do not depend on the tier.
func TestSandboxUnderTheInterpreter(t *testing.T) {
	testEngine = EngineInterpreter
	t.Cleanup(func() { testEngine = "" })
	for name, fn := range map[string]func(*testing.T){
		"EchoSearchAndHostFunctions":  TestEchoSearchAndHostFunctions,
		"LimitsAndFailures":           TestLimitsAndFailures,
		"MemoryLimit":                 TestMemoryLimit,
		"CancellationReachesGuest":    TestCancellationReachesGuest,
		"WASIBasicsGiveNothing":       TestWASIBasicsGiveNothing,
		"SneakyGuestUngated":          TestSneakyGuestUngated,
		"TablesShareTheMemoryBudget":  TestTablesShareTheMemoryBudget,
		"FirstPartyToolsMatchReadAPI": TestFirstPartyToolsMatchReadAPI,
	} {
		t.Run(name, fn)
	}
}
