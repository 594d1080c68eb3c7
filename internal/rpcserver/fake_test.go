package rpcserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// fakeHost is a small in-process Dispatcher for testing the HTTP/JSON-RPC layer: it
// validates arguments like the first-party guests do (unknown keys, required query, k
// 1..50) and keeps per-module statistics like the runtime.
type fakeHost struct {
	mu       sync.Mutex
	tools    []runtime.Tool
	statuses []runtime.ModuleStatus // index by module name
	calls    []runtime.Call
	block    chan struct{} // when set, a "slow" query waits for it
	started  chan struct{}
}

var fakeSchemas = map[string][2]string{
	"memory.search":     {`{"type":"object","properties":{"query":{"type":"string","minLength":1},"k":{"type":"integer","minimum":1,"maximum":50}},"required":["query"],"additionalProperties":false}`, `{"type":"object","properties":{"chunks":{"type":"array"}},"required":["chunks"]}`},
	"memory.recall":     {`{"type":"object","properties":{"query":{"type":"string","minLength":1},"k":{"type":"integer","minimum":1,"maximum":50}},"required":["query"],"additionalProperties":false}`, `{"type":"object","properties":{"chunks":{"type":"array"},"mode":{"type":"string"}}}`},
	"tree.read_chunk":   {`{"type":"object","properties":{"chunk_id":{"type":"string"}},"required":["chunk_id"],"additionalProperties":false}`, `{"type":"object","properties":{"chunk":{"type":"object"}}}`},
	"tree.browse":       {`{"type":"object","properties":{"query":{"type":"string"},"k":{"type":"integer"},"offset":{"type":"integer"}},"additionalProperties":false}`, `{"type":"object","properties":{"chunks":{"type":"array"},"total":{"type":"integer"}}}`},
	"tree.top_entities": {`{"type":"object","properties":{"kind":{"type":"string"},"k":{"type":"integer"}},"additionalProperties":false}`, `{"type":"object","properties":{"entities":{"type":"array"}}}`},
	"tree.list_sources": {`{"type":"object","properties":{"user_email_hint":{"type":"string"}},"additionalProperties":false}`, `{"type":"object","properties":{"sources":{"type":"array"}}}`},
	"searxng_search":    {`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`, `{"type":"object","properties":{"query":{"type":"string"},"results":{"type":"array"}}}`},
}

var fakeKeys = map[string][]string{
	"memory.search":     {"query", "k"},
	"memory.recall":     {"query", "k"},
	"tree.read_chunk":   {"chunk_id"},
	"tree.browse":       {"source_kinds", "source_ids", "entity_ids", "since_ms", "until_ms", "query", "k", "offset"},
	"tree.top_entities": {"kind", "k"},
	"tree.list_sources": {"user_email_hint"},
	"searxng_search":    {"query", "categories", "language", "max_results"},
}

// newFakeHost serves the six memory tools (and searxng_search when searxng), plus a
// third-party module "timeline.wasm" refused by the static gate.
func newFakeHost(searxng bool) *fakeHost {
	f := &fakeHost{}
	names := []string{"memory.search", "memory.recall", "tree.read_chunk", "tree.browse", "tree.top_entities", "tree.list_sources"}
	if searxng {
		names = append(names, "searxng_search")
	}
	for _, n := range names {
		caps := []string{abi.CapMemoryRead}
		if n == "searxng_search" {
			caps = []string{abi.CapWebSearXNG}
		}
		mi := runtime.ModuleInfo{Name: n + ".wasm", SHA256: fmt.Sprintf("%064x", len(f.tools)+1), ABI: abi.Version,
			Capabilities: caps, Limits: runtime.Limits{TimeoutMS: 15000, MemoryMiB: 32, MaxResultBytes: 1 << 20}, Origin: runtime.OriginBuiltin}
		f.tools = append(f.tools, runtime.Tool{Name: n, Title: "Title of " + n, Description: "Description of " + n,
			InputSchema: json.RawMessage(fakeSchemas[n][0]), OutputSchema: json.RawMessage(fakeSchemas[n][1]),
			Annotations: runtime.Annotations{ReadOnlyHint: true, OpenWorldHint: n == "searxng_search"}, Module: mi})
		f.statuses = append(f.statuses, runtime.ModuleStatus{Module: mi, Tools: []string{n}, State: runtime.StateReady})
	}
	if !searxng {
		mi := runtime.ModuleInfo{Name: "searxng_search.wasm", SHA256: strings.Repeat("5", 64), ABI: abi.Version,
			Capabilities: []string{abi.CapWebSearXNG}, Origin: runtime.OriginBuiltin}
		f.statuses = append(f.statuses, runtime.ModuleStatus{Module: mi, Tools: []string{"searxng_search"}, State: runtime.StateDisabled})
	}
	f.statuses = append(f.statuses, runtime.ModuleStatus{
		Module: runtime.ModuleInfo{Name: "timeline.wasm", SHA256: strings.Repeat("a", 64), ABI: abi.Version,
			Capabilities: []string{}, Origin: runtime.OriginDirectory},
		Tools: []string{"timeline.recent"}, State: runtime.StateRefused,
		Error: `static gate: import "wasi_snapshot_preview1"."path_open" is not allowed`,
	})
	return f
}

func (f *fakeHost) Tools() []runtime.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]runtime.Tool(nil), f.tools...)
}

func (f *fakeHost) Status() []runtime.ModuleStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]runtime.ModuleStatus(nil), f.statuses...)
}

func (f *fakeHost) record(tool string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.statuses {
		st := &f.statuses[i]
		if len(st.Tools) == 1 && st.Tools[0] == tool {
			st.Stats.Count++
			if err != nil {
				st.Stats.Errors++
				st.Stats.ConsecutiveErrors++
				st.Stats.LastError = err.Error()
				st.Stats.LastErrorAt = time.Now()
			} else {
				st.Stats.ConsecutiveErrors = 0
				st.Stats.LastSuccessAt = time.Now()
			}
		}
	}
}

func (f *fakeHost) lastCall() runtime.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

func invalid(format string, args ...any) *runtime.Outcome {
	return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}}
}

func (f *fakeHost) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	served := false
	for _, t := range f.tools {
		served = served || t.Name == c.Tool
	}
	block, started := f.block, f.started
	var notReady error
	for _, st := range f.statuses {
		if len(st.Tools) == 1 && st.Tools[0] == c.Tool && st.State != runtime.StateReady {
			notReady = fmt.Errorf("tool %s is unavailable: module %s is %s: %s", c.Tool, st.Module.Name, st.State, st.Error)
		}
	}
	f.mu.Unlock()
	if notReady != nil {
		return nil, notReady
	}
	if !served {
		return nil, fmt.Errorf("call %s: %w", c.Tool, runtime.ErrUnknownTool)
	}
	var args map[string]any
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args == nil {
		return invalid("arguments must be an object"), nil
	}
	var extra []string
	for k := range args {
		ok := false
		for _, a := range fakeKeys[c.Tool] {
			ok = ok || a == k
		}
		if !ok {
			extra = append(extra, "`"+k+"`")
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return invalid("unexpected argument %s", strings.Join(extra, ", ")), nil
	}
	if k, ok := args["k"]; ok {
		if n, isNum := k.(float64); !isNum || n != float64(int(n)) || n < 1 {
			return invalid("argument `k` must be a positive integer"), nil
		} else if n > 50 {
			return invalid("argument `k` must not exceed 50 (got %d)", int(n)), nil
		}
	}
	switch c.Tool {
	case "memory.search", "memory.recall", "searxng_search":
		q, _ := args["query"].(string)
		if strings.TrimSpace(q) == "" {
			return invalid("missing required argument `query`"), nil
		}
		switch q {
		case "boom": // a module trap
			err := errors.New("module memory.search.wasm trapped: wasm error: unreachable")
			f.record(c.Tool, err)
			return nil, err
		case "slow":
			if started != nil {
				started <- struct{}{}
			}
			if block != nil {
				select {
				case <-block:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		f.record(c.Tool, nil)
		if c.Tool == "searxng_search" {
			return &runtime.Outcome{Result: json.RawMessage(fmt.Sprintf(`{"query":%q,"results":[]}`, q))}, nil
		}
		return &runtime.Outcome{Result: json.RawMessage(fmt.Sprintf(`{"chunks":[{"id":"c1","snippet":%q}]}`, q))}, nil
	case "tree.read_chunk":
		id, _ := args["chunk_id"].(string)
		if id == "" {
			return invalid("missing required argument `chunk_id`"), nil
		}
		if id != "c1" {
			return &runtime.Outcome{ToolError: &abi.Error{Code: abi.CodeNotFound, Message: "no chunk with id " + id}}, nil
		}
		return &runtime.Outcome{Result: json.RawMessage(`{"chunk":{"id":"c1","text":"hello"}}`)}, nil
	case "tree.browse":
		return &runtime.Outcome{Result: json.RawMessage(`{"chunks":[],"total":0}`)}, nil
	case "tree.top_entities":
		return &runtime.Outcome{Result: json.RawMessage(`{"entities":[]}`)}, nil
	case "tree.list_sources":
		return &runtime.Outcome{Result: json.RawMessage(`{"sources":[]}`)}, nil
	}
	return nil, fmt.Errorf("call %s: %w", c.Tool, runtime.ErrUnknownTool)
}
