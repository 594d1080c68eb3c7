package rpcserver

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/runtime"
)

func registryList(t *testing.T, e *testEnv) []Entry {
	t.Helper()
	r := e.call(t, "openhuman.tool_registry_list", "")
	if r.Error != nil {
		t.Fatalf("list: %+v", r.Error)
	}
	var out struct {
		Tools []Entry `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out.Tools
}

func entryByID(entries []Entry, id string) *Entry {
	for i := range entries {
		if entries[i].ToolID == id {
			return &entries[i]
		}
	}
	return nil
}

func TestRegistryListShape(t *testing.T) {
	e := newTestEnv(t, false)
	entries := registryList(t, e)
	var ids []string
	for _, en := range entries {
		ids = append(ids, en.ToolID)
	}
	want := []string{
		"memory.recall", "memory.search",
		"memory_tree.get_chunk", "memory_tree.list_chunks", "memory_tree.list_sources",
		"memory_tree.recall", "memory_tree.search", "memory_tree.top_entities",
		"searxng_search", "timeline.recent",
		"tools.searxng_search", "tools.web_search",
		"tree.browse", "tree.list_sources", "tree.read_chunk", "tree.top_entities",
	}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids = %v\nwant %v", ids, want)
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("not sorted")
	}

	ms := entryByID(entries, "memory.search")
	if ms.Name != "memory.search" || ms.Title != "Title of memory.search" || ms.Transport != TransportMCP || ms.Version != "9.9.9-test" ||
		!ms.Enabled || ms.Health != HealthAvailable || !reflect.DeepEqual(ms.Tags, []string{"mcp", "memory", "retrieval"}) ||
		!reflect.DeepEqual(ms.AllowedAgents, []string{"*"}) || string(ms.InputSchema) != fakeSchemas["memory.search"][0] ||
		string(ms.OutputSchema) != fakeSchemas["memory.search"][1] || ms.Module.Origin != "builtin" || ms.Module.ABI != "openhuman/1" ||
		ms.Module.Limits.TimeoutMS != 15000 || !reflect.DeepEqual(ms.Module.Capabilities, []string{"memory.read"}) || len(ms.Module.SHA256) != 64 {
		t.Errorf("memory.search entry = %+v", *ms)
	}
	route, _ := json.Marshal(ms.Route)
	if string(route) != `{"protocol":"mcp","method":"tools/call","tool":"memory.search","rpc_method":"openhuman.memory_tree_search"}` {
		t.Errorf("memory.search route = %s", route)
	}
	tb := entryByID(entries, "tree.browse")
	if !reflect.DeepEqual(tb.Tags, []string{"mcp", "tree", "memory"}) {
		t.Errorf("tree.browse tags = %v", tb.Tags)
	}

	mts := entryByID(entries, "memory_tree.search")
	route, _ = json.Marshal(mts.Route)
	if mts.Transport != TransportJSONRPC || mts.Title != "Search" ||
		string(route) != `{"protocol":"json_rpc","method":"openhuman.memory_tree_search","controller":"memory_tree.search"}` ||
		!reflect.DeepEqual(mts.Tags, []string{"controller", "memory_tree", "retrieval", "memory"}) ||
		string(mts.InputSchema) != string(ms.InputSchema) || mts.Module.SHA256 != ms.Module.SHA256 || mts.Health != HealthAvailable {
		t.Errorf("memory_tree.search entry = %+v route %s", *mts, route)
	}
	if gc := entryByID(entries, "memory_tree.get_chunk"); gc.Title != "Get Chunk" || !strings.Contains(string(gc.InputSchema), "chunk_id") {
		t.Errorf("memory_tree.get_chunk = %+v", *gc)
	}

	// SearXNG off: both entries present, disabled, with the module's real schema.
	for _, id := range []string{"searxng_search", "tools.searxng_search", "tools.web_search"} {
		en := entryByID(entries, id)
		if en.Enabled || en.Health != HealthDisabled || !strings.Contains(en.HealthReason, "OPENHUMAN_SEARXNG_ENABLED") ||
			!strings.Contains(string(en.InputSchema), "max_results") || !strings.Contains(string(en.OutputSchema), "results") {
			t.Errorf("%s entry = %+v", id, *en)
		}
	}
	if ts := entryByID(entries, "tools.searxng_search"); !reflect.DeepEqual(ts.Tags, []string{"controller", "tools", "retrieval"}) || ts.Title != "Searxng Search" {
		t.Errorf("tools.searxng_search tags/title = %v %q", ts.Tags, ts.Title)
	}
	if ss := entryByID(entries, "searxng_search"); !reflect.DeepEqual(ss.Tags, []string{"mcp", "searxng_search", "retrieval"}) {
		t.Errorf("searxng_search tags = %v", ss.Tags)
	}

	// The module refused by the static gate: unavailable, with its reason.
	tl := entryByID(entries, "timeline.recent")
	if tl.Health != HealthUnavailable || tl.Enabled || !strings.Contains(tl.HealthReason, "refused: static gate") ||
		!strings.Contains(tl.HealthReason, "path_open") || tl.Module.Origin != "directory" || tl.Module.State != "refused" {
		t.Errorf("timeline.recent = %+v", *tl)
	}
}

func TestRegistrySearxngEnabled(t *testing.T) {
	e := newTestEnv(t, true)
	entries := registryList(t, e)
	for _, id := range []string{"searxng_search", "tools.searxng_search", "tools.web_search"} {
		en := entryByID(entries, id)
		if en == nil || !en.Enabled || en.Health != HealthAvailable || !reflect.DeepEqual(en.Module.Capabilities, []string{"web.searxng"}) {
			t.Errorf("%s = %+v", id, en)
		}
	}
}

func TestRegistryGet(t *testing.T) {
	e := newTestEnv(t, false)
	r := e.call(t, "openhuman.tool_registry_get", `{"tool_id":"  memory.search  "}`)
	var got struct {
		Tool Entry `json:"tool"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || got.Tool.ToolID != "memory.search" || got.Tool.Route.RPCMethod != "openhuman.memory_tree_search" {
		t.Fatalf("get memory.search: %s %+v", r.Result, r.Error)
	}
	r = e.call(t, "openhuman.tool_registry_get", `{"tool_id":"tools.searxng_search"}`)
	if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || got.Tool.Transport != TransportJSONRPC || got.Tool.Route.Method != "openhuman.tools_searxng_search" ||
		got.Tool.Health != HealthDisabled || got.Tool.Enabled {
		t.Fatalf("get tools.searxng_search: %s %+v", r.Result, r.Error)
	}
	wantErr(t, e.call(t, "openhuman.tool_registry_get", `{}`), CodeInvalidParams, "missing required param 'tool_id'")
	wantErr(t, e.call(t, "openhuman.tool_registry_get", ``), CodeInvalidParams, "missing required param 'tool_id'")
	wantErr(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"   "}`), CodeInvalidParams, "tool_id must be a non-empty string")
	wantErr(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":5}`), CodeInvalidParams, "tool_id must be a string, got number")
	wantErr(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"memory.search","verbose":true}`), CodeInvalidParams, "unknown param 'verbose' for tool_registry.get")
	// tools.web_search: the reference's controller-backed web search, routed to SearXNG.
	r = e.call(t, "openhuman.tool_registry_get", `{"tool_id":"tools.web_search"}`)
	if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || got.Tool.Transport != TransportJSONRPC || got.Tool.Route.Method != "openhuman.tools_web_search" ||
		got.Tool.Title != "Web Search" || !reflect.DeepEqual(got.Tool.Tags, []string{"controller", "tools", "retrieval"}) ||
		got.Tool.Health != HealthDisabled || got.Tool.Enabled || !strings.Contains(string(got.Tool.InputSchema), `"query"`) {
		t.Fatalf("get tools.web_search: %s %+v", r.Result, r.Error)
	}
	wantErr(t, e.call(t, "openhuman.tools_web_search", `{"query":"x"}`), CodeDisabled, "SearXNG search is not enabled")
	wantErr(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"tools.nope"}`), CodeNotFound, "tool not found in registry: tools.nope")
	wantErr(t, e.call(t, "openhuman.tool_registry_get", `[1]`), CodeInvalidParams, "openhuman.tool_registry_get params must be an object, got an array")
	wantErr(t, e.call(t, "openhuman.tool_registry_list", `{"x":1}`), CodeInvalidParams, "unknown param 'x' for tool_registry.list")
}

// TestRegistryHealthIsLive forces a module failure (a trap) and checks the entry turns
// degraded with the error and its time, then available again after a success.
func TestRegistryHealthIsLive(t *testing.T) {
	e := newTestEnv(t, false)
	wantErr(t, e.call(t, "openhuman.memory_tree_search", `{"query":"boom"}`), CodeInternalError, "internal error (error id ")
	for _, id := range []string{"memory.search", "memory_tree.search"} {
		en := entryByID(registryList(t, e), id)
		if en.Health != HealthDegraded || !strings.Contains(en.LastError, "unreachable") || en.LastErrorAt == nil || en.LastErrorAt.IsZero() ||
			en.Stats.Count != 1 || en.Stats.Errors != 1 {
			t.Fatalf("%s after a trap = %+v", id, *en)
		}
	}
	if en := entryByID(registryList(t, e), "memory.recall"); en.Health != HealthAvailable {
		t.Fatalf("other modules are unaffected: %+v", *en)
	}
	if r := e.call(t, "openhuman.memory_tree_search", `{"query":"fine"}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	en := entryByID(registryList(t, e), "memory.search")
	if en.Health != HealthAvailable || en.LastError != "" || en.LastErrorAt != nil || en.Stats.Count != 2 || en.Stats.Errors != 1 {
		t.Fatalf("after a success = %+v", *en)
	}
}

func TestRegistryDuplicatesAndStates(t *testing.T) {
	host := newFakeHost(false)
	// A third-party module that claims a builtin's name: the first (builtin) wins.
	dup := host.tools[0]
	dup.Description = "impostor"
	dup.Module.Origin = "directory"
	host.tools = append(host.tools, dup)
	host.statuses[2].State = "compiling"
	host.statuses[3].State = "failed"
	host.statuses[3].Error = "compile tree.browse.wasm: invalid magic number"
	s, err := New(host, Options{Token: testToken, Version: "v"})
	if err != nil {
		t.Fatal(err)
	}
	entries := s.Registry()
	seen := map[string]bool{}
	for _, en := range entries {
		if seen[en.ToolID] {
			t.Fatalf("duplicate %s", en.ToolID)
		}
		seen[en.ToolID] = true
	}
	if en := entryByID(entries, "memory.search"); en.Description == "impostor" {
		t.Fatal("duplicate replaced the first entry")
	}
	if en := entryByID(entries, "tree.read_chunk"); en.Health != HealthUnavailable || !strings.Contains(en.HealthReason, "compiling") || !en.Enabled {
		t.Errorf("compiling = %+v", *en)
	}
	if en := entryByID(entries, "memory_tree.list_chunks"); en.Health != HealthUnavailable || !strings.Contains(en.HealthReason, "invalid magic number") {
		t.Errorf("failed = %+v", *en)
	}
}

func TestTags(t *testing.T) {
	for id, want := range map[string][]string{
		"memory.search":         {"mcp", "memory", "retrieval"},
		"tree.browse":           {"mcp", "tree", "memory"},
		"searxng_search":        {"mcp", "searxng_search", "retrieval"},
		"timeline.recent":       {"mcp", "timeline"},
		"memory_tree.get_chunk": {"mcp", "memory_tree", "memory"},
	} {
		if got := tagsFor("mcp", id); !reflect.DeepEqual(got, want) {
			t.Errorf("tagsFor(%s) = %v, want %v", id, got, want)
		}
	}
}

// TestRegistryPerToolStats: when one module serves several tools (the first-party
// memory module serves six), each entry shows its own tool's statistics and health,
// so a failing tool does not mark its module's other tools degraded.
func TestRegistryPerToolStats(t *testing.T) {
	host := newFakeHost(false)
	mem := host.tools[0].Module
	mem.Name = "memory.wasm"
	host.tools[0].Module, host.tools[1].Module = mem, mem
	failed := time.Now()
	host.statuses = append([]runtime.ModuleStatus{{
		Module: mem, Tools: []string{"memory.search", "memory.recall"}, State: runtime.StateReady,
		Stats: runtime.CallStats{Count: 5, Errors: 1, ConsecutiveErrors: 1, LastError: "tool memory.search exceeded its deadline", LastErrorAt: failed},
		ToolStats: map[string]runtime.CallStats{
			"memory.search": {Count: 2, Errors: 1, ConsecutiveErrors: 1, LastError: "tool memory.search exceeded its deadline", LastErrorAt: failed},
			"memory.recall": {Count: 3, P50MS: 1.5},
		},
	}}, host.statuses[2:]...)
	s, err := New(host, Options{Token: testToken, Version: "v"})
	if err != nil {
		t.Fatal(err)
	}
	entries := s.Registry()
	ms, mr := entryByID(entries, "memory.search"), entryByID(entries, "memory.recall")
	if ms.Health != HealthDegraded || !strings.Contains(ms.LastError, "memory.search") || ms.Stats.Count != 2 || ms.Stats.Errors != 1 || ms.Module.Name != "memory.wasm" {
		t.Errorf("memory.search = %+v", *ms)
	}
	if mr.Health != HealthAvailable || mr.LastError != "" || mr.Stats.Count != 3 || mr.Stats.Errors != 0 || mr.Stats.P50MS != 1.5 || mr.Module.Name != "memory.wasm" {
		t.Errorf("memory.recall = %+v", *mr)
	}
}
