package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func call(t *testing.T, h *Host, name string, args string) (*Outcome, error) {
	t.Helper()
	return h.Call(context.Background(), Call{Tool: name, Arguments: json.RawMessage(args), Client: "mcp:test", RequestID: "r-1"})
}

func mustResult(t *testing.T, h *Host, name, args string, v any) *Outcome {
	t.Helper()
	out, err := call(t, h, name, args)
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	if out.ToolError != nil {
		t.Fatalf("%s(%s): tool error %v", name, args, out.ToolError)
	}
	if v != nil {
		if err := json.Unmarshal(out.Result, v); err != nil {
			t.Fatalf("%s: result %s: %v", name, out.Result, err)
		}
	}
	return out
}

func TestEchoSearchAndHostFunctions(t *testing.T) {
	reader := newFakeReader()
	mod := echoModule(t, "")
	h, _ := newHost(t, Options{Reader: reader, Builtins: []BuiltinModule{builtinModule("echo.wasm", mod)}, Autonomy: "readonly"})

	// Tools are known at once, before compilation finishes.
	tools := h.Tools()
	if len(tools) != len(echoTools) || tools[0].Name != "echo" || tools[0].Module.SHA256 != digest(mod) || tools[0].Module.Origin != OriginBuiltin {
		t.Fatalf("tools = %+v", tools)
	}
	if tools[0].Module.Limits.TimeoutMS != 15000 || tools[0].Module.Limits.MemoryMiB != 32 || tools[0].Module.Capabilities[0] != abi.CapMemoryRead {
		t.Errorf("module info = %+v", tools[0].Module)
	}

	var echo struct {
		Arguments map[string]any `json:"arguments"`
		Client    string         `json:"client"`
		RequestID string         `json:"request_id"`
	}
	out := mustResult(t, h, "echo", `{"q":"hi"}`, &echo)
	if echo.Arguments["q"] != "hi" || echo.Client != "mcp:test" || echo.RequestID != "r-1" || out.ModuleSHA256 != digest(mod) || out.Duration <= 0 {
		t.Errorf("echo = %+v, outcome %+v", echo, out)
	}
	echo.Arguments = nil
	mustResult(t, h, "echo", ``, &echo)
	if echo.Arguments == nil || len(echo.Arguments) != 0 {
		t.Errorf("nil arguments did not become {}: %+v", echo.Arguments)
	}

	var sr abi.SearchResult
	out = mustResult(t, h, "search", `{"query":"budget","k":10}`, &sr)
	if len(sr.Chunks) != 10 || sr.Chunks[0].ID != reader.chunks[0].ID {
		t.Errorf("search = %+v", sr)
	}
	if out.Usage.HostCalls[abi.FnMemorySearch] != 1 || out.Usage.BytesOut == 0 || out.Usage.BytesIn < 500 {
		t.Errorf("usage = %+v", out.Usage)
	}

	// Reader errors map to codes.
	out, err := call(t, h, "search", `{"query":"budget","k":99}`)
	if err != nil || out.ToolError == nil || out.ToolError.Code != abi.CodeInvalidParams || !strings.Contains(out.ToolError.Message, "between 1 and 50") {
		t.Errorf("invalid k: %+v %v", out, err)
	}
	hostReply := func(fn, req string) abi.HostReply {
		t.Helper()
		var r struct {
			Reply abi.HostReply `json:"reply"`
		}
		args, _ := json.Marshal(map[string]any{"fn": fn, "req": json.RawMessage(req)})
		mustResult(t, h, "host", string(args), &r)
		return r.Reply
	}
	if r := hostReply(abi.FnChunkGet, `{"id":"nope"}`); r.Error == nil || r.Error.Code != abi.CodeNotFound {
		t.Errorf("chunk_get unknown: %+v", r)
	}
	if r := hostReply(abi.FnChunkGet, `{"id":"`+reader.chunks[2].ID+`"}`); r.Error != nil || !strings.Contains(string(r.OK), "full text of budget meeting number 2") {
		t.Errorf("chunk_get: %+v", r)
	}
	if r := hostReply(abi.FnMemorySearch, `{"query":"x","k":1,"extra":true}`); r.Error == nil || r.Error.Code != abi.CodeInvalidParams || !strings.Contains(r.Error.Message, "extra") {
		t.Errorf("unknown field: %+v", r)
	}
	if r := hostReply(abi.FnMemorySearch, `[1,2]`); r.Error == nil || r.Error.Code != abi.CodeInvalidParams {
		t.Errorf("bad json: %+v", r)
	}
	for fn, want := range map[string]string{abi.FnMemoryRecall: `"mode":"lexical"`, abi.FnChunksList: `"total":30`, abi.FnEntitiesTop: `person:alice`, abi.FnSourcesList: `thread-0`} {
		if r := hostReply(fn, `{"k":2}`); r.Error != nil && fn != abi.FnSourcesList || fn != abi.FnSourcesList && !strings.Contains(string(r.OK), want) {
			t.Errorf("%s: %+v", fn, r)
		}
	}
	if r := hostReply(abi.FnSourcesList, `{}`); !strings.Contains(string(r.OK), "thread-0") {
		t.Errorf("sources_list: %+v", r)
	}
	reader.mu.Lock()
	reader.fail = errStoreDown
	reader.mu.Unlock()
	if r := hostReply(abi.FnMemorySearch, `{"query":"x","k":1}`); r.Error == nil || r.Error.Code != abi.CodeUnavailable || !strings.Contains(r.Error.Message, "database is locked") {
		t.Errorf("store failure: %+v", r)
	}
	reader.mu.Lock()
	reader.fail = nil
	reader.mu.Unlock()

	// A tool's own error is an outcome, not a Go error.
	out, err = call(t, h, "fail", `{}`)
	if err != nil || out.ToolError == nil || out.ToolError.Code != abi.CodeInvalidParams || out.Result != nil {
		t.Errorf("fail: %+v %v", out, err)
	}
	if _, err := call(t, h, "nope", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := call(t, h, "echo", `{"broken"`); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("broken arguments: %v", err)
	}
	big := `{"s":"` + strings.Repeat("a", 1<<20) + `"}`
	if _, err := call(t, h, "echo", big); err == nil || !strings.Contains(err.Error(), "exceeds the 1048576-byte limit") {
		t.Errorf("oversized request: %v", err)
	}

	st := h.Status()
	if len(st) != 1 || st[0].State != StateReady || st[0].Stats.Count < 10 || st[0].Stats.P50MS <= 0 || len(st[0].Tools) != len(echoTools) {
		t.Errorf("status = %+v", st)
	}
}

func TestBuiltinDigestMismatch(t *testing.T) {
	mod := echoModule(t, "")
	b := builtinModule("echo.wasm", mod)
	b.SHA256 = strings.Repeat("0", 64)
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{b}})
	st := h.Status()
	if st[0].State != StateRefused || !strings.Contains(st[0].Error, "the build pinned 0000") {
		t.Errorf("status = %+v", st[0])
	}
	if len(h.Tools()) != 0 {
		t.Error("tools of a mismatching builtin are served")
	}
	if _, err := call(t, h, "echo", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("call: %v", err)
	}
}

func TestLimitsAndFailures(t *testing.T) {
	const deadline = 400
	mod := echoModule(t, "timeout_ms = 400\nmemory_mib = 32")
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", mod)}})
	calls := func() int {
		var r struct {
			Calls int `json:"calls"`
		}
		mustResult(t, h, "echo", `{}`, &r)
		return r.Calls
	}
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls()
	if n := calls(); n < 2 {
		t.Fatalf("pooled instance not reused: calls = %d", n)
	}

	// Infinite loop: stopped at the deadline; the next call succeeds on a fresh instance.
	start := time.Now()
	_, err := call(t, h, "loop", `{}`)
	elapsed := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "tool loop exceeded its 400 ms deadline") {
		t.Fatalf("loop: %v", err)
	}
	if k := audit.FailureKind(err); k != audit.FailureTimeout {
		t.Errorf("loop: failure kind %q, want %q (typed, for the servers' outcome table)", k, audit.FailureTimeout)
	}
	if elapsed > deadline*time.Millisecond+2*time.Second {
		t.Errorf("loop stopped only after %v", elapsed)
	}
	t.Logf("infinite loop stopped after %v (deadline %d ms, overshoot %v)", elapsed, deadline, elapsed-deadline*time.Millisecond)
	if n := calls(); n != 1 {
		t.Errorf("after the loop the call ran on an instance that had %d calls; want a fresh one", n)
	}

	// Oversized result.
	_, err = call(t, h, "big", `{}`)
	if err == nil || !strings.Contains(err.Error(), "tool big: result of 20971") || !strings.Contains(err.Error(), " bytes exceeds the 1048576-byte limit") {
		t.Errorf("big: %v", err)
	}

	// Trap: the instance is discarded.
	calls()
	_, err = call(t, h, "panic", `{}`)
	if err == nil || !strings.Contains(err.Error(), "guest panics on purpose") {
		t.Errorf("panic: %v", err)
	}
	if n := calls(); n != 1 {
		t.Errorf("after a trap: calls = %d, want a fresh instance", n)
	}

	_, err = call(t, h, "garbage", `{}`)
	if err == nil || !strings.Contains(err.Error(), "malformed response") {
		t.Errorf("garbage: %v", err)
	}

	st := h.Status()[0]
	if st.Stats.Errors != 4 || st.Stats.ConsecutiveErrors != 1 || !strings.Contains(st.Stats.LastError, "malformed") || st.State != StateReady {
		t.Errorf("stats = %+v", st.Stats)
	}
	calls()
	if st := h.Status()[0]; st.Stats.ConsecutiveErrors != 0 {
		t.Errorf("consecutive errors not reset: %+v", st.Stats)
	}
}

func TestMemoryLimit(t *testing.T) {
	// Go's runtime is slow to reach the limit under close-on-done (GC work), so this
	// module gets a generous deadline.
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, "timeout_ms = 30000\nmemory_mib = 16"))}})
	start := time.Now()
	_, err := call(t, h, "alloc", `{}`)
	if err == nil || !strings.Contains(err.Error(), "tool alloc ran out of memory at its 16 MiB limit") || !strings.Contains(err.Error(), "fatal error: out of memory") {
		t.Fatalf("alloc: %v", err)
	}
	if k := audit.FailureKind(err); k != audit.FailureMemory {
		t.Errorf("alloc: failure kind %q, want %q", k, audit.FailureMemory)
	}
	t.Logf("unbounded allocation stopped after %v: %v", time.Since(start), err)
	var r struct {
		Calls int `json:"calls"`
	}
	mustResult(t, h, "echo", `{}`, &r)
	if r.Calls != 1 {
		t.Errorf("after alloc: calls = %d, want a fresh instance", r.Calls)
	}
}

func TestCancellationReachesGuest(t *testing.T) {
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := h.Call(ctx, Call{Tool: "loop"})
	if err == nil || !strings.Contains(err.Error(), "tool loop was cancelled") {
		t.Fatalf("cancel: %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("cancellation took %v (deadline is 15 s)", el)
	}
	t.Logf("cancelled loop returned after %v", time.Since(start))
}

func TestPoolBounds(t *testing.T) {
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if _, err := h.Call(context.Background(), Call{Tool: "echo"}); err != nil {
					errs <- err
					return
				}
				if n := h.pool.liveSlots(); n > maxLiveTotal {
					errs <- errors.New("more than 8 live instances")
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := h.builtins[0]
	if n := m.idleCount(); n < 1 || n > maxIdlePerModule {
		t.Errorf("idle = %d", n)
	}
	if n := h.pool.liveSlots(); n != m.idleCount() {
		t.Errorf("live slots %d != idle instances %d after all calls finished", n, m.idleCount())
	}

	// Recycle after 1,000 calls on one instance.
	maxSeen := 0
	for i := 0; i < 1100; i++ {
		var r struct {
			Calls int `json:"calls"`
		}
		mustResult(t, h, "echo", `{}`, &r)
		maxSeen = max(maxSeen, r.Calls)
	}
	if maxSeen > recycleCalls {
		t.Errorf("an instance served %d calls; recycle is at %d", maxSeen, recycleCalls)
	}
}

func TestLogRateLimited(t *testing.T) {
	h, logs := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}})
	mustResult(t, h, "log", `{}`, nil)
	n := strings.Count(logs.String(), `"msg":"line from the guest`)
	if n < 10 || n > logLinesPerSecond+10 {
		t.Errorf("%d guest log lines got through; the limit is %d/s", n, logLinesPerSecond)
	}
	if !strings.Contains(logs.String(), `"tool":"log","module":"echo.wasm"`) {
		t.Errorf("log lines lack tool and module: %.300s", logs.String())
	}
	if !strings.Contains(logs.String(), "…(truncated)") {
		t.Error("long log line was not truncated")
	}
}

func TestCacheDirAndReadyFromCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "wazero")
	mod := echoModule(t, "")
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", mod)}, CacheDir: dir, Engine: EngineCompiled})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) == 0 {
		t.Error("compilation cache is empty after compiling")
	}
}

func TestUnknownAutonomyAndMissingReader(t *testing.T) {
	if _, err := New(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "Reader is required") {
		t.Errorf("no reader: %v", err)
	}
	if _, err := New(context.Background(), Options{Reader: newFakeReader(), Autonomy: "wild", CacheDir: "-"}); err == nil || !strings.Contains(err.Error(), `autonomy level "wild" is unknown`) {
		t.Errorf("bad autonomy: %v", err)
	}
}
