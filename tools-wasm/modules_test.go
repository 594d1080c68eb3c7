package toolswasm

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/openhuman/openhuman-core/internal/builtin"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// wasiBasics is the WASI preview 1 subset DESIGN §4 links for Go guests.
var wasiBasics = []string{
	"args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_time_get", "random_get",
	"fd_write", "proc_exit", "sched_yield", "poll_oneoff", "fd_close", "fd_fdstat_get",
	"fd_fdstat_set_flags", "fd_prestat_get", "fd_prestat_dir_name",
}

func TestCatalogueOrder(t *testing.T) {
	if !slices.Equal(Names(), builtin.Catalogue) {
		t.Fatalf("toolswasm catalogue %v differs from builtin.Catalogue %v", Names(), builtin.Catalogue)
	}
}

func TestModules(t *testing.T) {
	mods, err := Modules()
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 2 || mods[0].Name != "memory" || mods[1].Name != "searxng_search" {
		t.Fatalf("got modules %v, want memory and searxng_search", moduleNames(mods))
	}
	var all []string
	for _, m := range mods {
		all = append(all, m.Tools...)
	}
	if !slices.Equal(all, builtin.Catalogue) {
		t.Fatalf("the modules serve %v, want the catalogue %v", all, builtin.Catalogue)
	}
	for _, m := range mods {
		if m.SHA256 != digests[m.Name] {
			t.Fatalf("%s: sha256 %s is not the pinned one", m.Name, m.SHA256)
		}
		man, err := policy.ReadManifestNamed(m.Wasm, m.Name)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		wantCap := abi.CapMemoryRead
		if m.Name == builtin.ToolSearxngSearch {
			wantCap = abi.CapWebSearXNG
		}
		var declared []string
		for _, tl := range man.Tools {
			declared = append(declared, tl.Name)
		}
		if man.ABI != abi.Version || !slices.Equal(declared, m.Tools) || !slices.Equal(man.Capabilities, []string{wantCap}) {
			t.Fatalf("%s: manifest abi %q tools %v capabilities %v", m.Name, man.ABI, declared, man.Capabilities)
		}
		if m.Name == "memory" && (man.Limits.TimeoutMS != 10000 || man.Limits.MemoryMiB != 32) {
			t.Fatalf("%s: limits %+v", m.Name, man.Limits)
		}
		for _, tl := range man.Tools {
			checkTool(t, m.Name, tl, wantCap)
		}
		mod, err := wasmbin.Parse(m.Wasm)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		allowedHost := append([]string{abi.FnLog}, abi.CapabilityFunctions[wantCap]...)
		var hostImports []string
		for _, imp := range mod.Imports {
			switch {
			case imp.Module == "wasi_snapshot_preview1" && slices.Contains(wasiBasics, imp.Name):
			case imp.Module == abi.HostModule && slices.Contains(allowedHost, imp.Name):
				hostImports = append(hostImports, imp.Name)
			default:
				t.Fatalf("%s imports %s, outside the WASI basics and its capability %s", m.Name, imp, wantCap)
			}
		}
		if len(hostImports) == 0 {
			t.Fatalf("%s imports no host function of %s", m.Name, wantCap)
		}
		t.Logf("%s: %d bytes, host imports %v", m.Name, len(m.Wasm), hostImports)
		if err := policy.CheckModule(mod, man, man.Capabilities); err != nil {
			t.Fatalf("%s fails the static gate: %v", m.Name, err)
		}
	}
}

// checkTool checks one declared tool's title, annotations and input schema.
func checkTool(t *testing.T, module string, tl policy.ToolSpec, capability string) {
	t.Helper()
	if !tl.Annotations.ReadOnlyHint || tl.Annotations.OpenWorldHint != (capability == abi.CapWebSearXNG) || tl.Title == "" || tl.Export != abi.ExportCall {
		t.Fatalf("%s/%s: title %q export %q annotations %+v", module, tl.Name, tl.Title, tl.Export, tl.Annotations)
	}
	var in struct {
		AdditionalProperties *bool `json:"additionalProperties"`
	}
	if err := json.Unmarshal(tl.InputSchema, &in); err != nil || in.AdditionalProperties == nil || *in.AdditionalProperties {
		t.Fatalf("%s/%s: input_schema must set additionalProperties:false (%v)", module, tl.Name, err)
	}
}

func moduleNames(mods []Module) []string {
	var out []string
	for _, m := range mods {
		out = append(out, m.Name)
	}
	return out
}

func TestDigestMismatchNamesModule(t *testing.T) {
	saved := digests["memory"]
	digests["memory"] = strings.Repeat("0", 64)
	defer func() { digests["memory"] = saved }()
	_, err := Modules()
	if err == nil || !strings.Contains(err.Error(), "memory (memory.search, memory.recall, tree.read_chunk, tree.browse, tree.top_entities, tree.list_sources)") || !strings.Contains(err.Error(), "go generate") {
		t.Fatalf("err = %v, want one naming the memory module, its tools and how to rebuild", err)
	}
	if _, err := Get("tree.browse"); err == nil {
		t.Fatal("Get(tree.browse) loaded the memory module despite its digest mismatch")
	}
	if m, err := Get("searxng_search"); err != nil || m.Name != "searxng_search" {
		t.Fatalf("other modules must still load: %+v %v", m.Name, err)
	}
	if _, err := Get("fs.write"); err == nil || !strings.Contains(err.Error(), "not a first-party tool") {
		t.Fatalf("Get(fs.write) = %v", err)
	}
}

// TestGetByToolOrModule checks that every tool name, and the module name, find
// the module that serves it.
func TestGetByToolOrModule(t *testing.T) {
	for _, name := range append(Names(), "memory") {
		m, err := Get(name)
		if err != nil {
			t.Fatalf("Get(%s): %v", name, err)
		}
		if m.Name != name && !slices.Contains(m.Tools, name) {
			t.Fatalf("Get(%s) = module %s serving %v", name, m.Name, m.Tools)
		}
		if want := "memory"; name != builtin.ToolSearxngSearch && m.Name != want {
			t.Fatalf("Get(%s) = module %s, want %s", name, m.Name, want)
		}
	}
}

// guest is one instantiated module with a host module answering its host calls.
type guest struct {
	mod api.Module
}

// hostFunc answers one host function: it gets the request JSON and returns the reply JSON.
type hostFunc func(req []byte) []byte

// instantiate runs the module in plain wazero (compiler, close on context done) with
// WASI and an "openhuman" host module exporting exactly fns plus log.
func instantiate(t *testing.T, ctx context.Context, name string, fns map[string]hostFunc) *guest {
	t.Helper()
	m, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	t.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	// Host functions the module imports that the test does not answer fail the call.
	parsed, err := wasmbin.Parse(m.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]hostFunc{}
	for _, imp := range parsed.Imports {
		if imp.Module == abi.HostModule && imp.Name != abi.FnLog {
			fn := imp.Name
			all[fn] = func([]byte) []byte {
				return []byte(`{"error":{"code":"internal","message":"test host: ` + fn + ` not answered"}}`)
			}
		}
	}
	for fn, h := range fns {
		all[fn] = h
	}
	b := r.NewHostModuleBuilder(abi.HostModule)
	for fn, h := range all {
		h := h
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			req, ok := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
			if !ok {
				panic("request out of range")
			}
			reply := h(append([]byte(nil), req...))
			stack[0] = writeGuest(ctx, mod, reply)
		}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).Export(fn)
	}
	b.NewFunctionBuilder().WithFunc(func(context.Context, int32, uint32, uint32) {}).Export(abi.FnLog)
	if _, err := b.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	compiled, err := r.CompileModule(ctx, m.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithStartFunctions(abi.ExportInitialize).WithName(name))
	if err != nil {
		t.Fatal(err)
	}
	return &guest{mod: mod}
}

// writeGuest copies b into memory allocated by the guest's oh_alloc and returns ptr<<32|len.
func writeGuest(ctx context.Context, mod api.Module, b []byte) uint64 {
	res, err := mod.ExportedFunction(abi.ExportAlloc).Call(ctx, uint64(len(b)))
	if err != nil {
		panic(err)
	}
	ptr := uint32(res[0])
	if !mod.Memory().Write(ptr, b) {
		panic("oh_alloc returned memory out of range")
	}
	return uint64(ptr)<<32 | uint64(len(b))
}

func (g *guest) call(t *testing.T, ctx context.Context, tool, args string) abi.CallResponse {
	t.Helper()
	req, _ := json.Marshal(abi.CallRequest{Tool: tool, Arguments: json.RawMessage(args), Client: "mcp:test", RequestID: "1"})
	packed := writeGuest(ctx, g.mod, req)
	res, err := g.mod.ExportedFunction(abi.ExportCall).Call(ctx, packed>>32, packed&0xffffffff)
	if err != nil {
		t.Fatalf("oh_call %s: %v", tool, err)
	}
	out, ok := g.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok {
		t.Fatalf("oh_call %s returned an out-of-range result", tool)
	}
	var resp abi.CallResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("oh_call %s returned %q: %v", tool, out, err)
	}
	return resp
}

func okReply(v any) []byte {
	b, _ := json.Marshal(v)
	out, _ := json.Marshal(abi.HostReply{OK: b})
	return out
}

// TestABIRoundTrip runs the two built modules through the ABI: requests in, each
// passed whole to its tool's host function (re-entrant oh_alloc), the host's "ok"
// answered as the result and its error as the error, call after call on one instance.
// The tools' own checks and results run on the host (runtime/toolcall.go) and are
// tested through the runtime (runtime/firstparty_test.go, over internal/builtin).
func TestABIRoundTrip(t *testing.T) {
	ctx := context.Background()
	var seen []string
	answer := func(fn string, reply func(req []byte) []byte) hostFunc {
		return func(req []byte) []byte {
			seen = append(seen, fn+" "+string(req))
			return reply(req)
		}
	}
	hit := abi.ChunkHit{ID: "0123456789abcdef0123456789abcdef", SourceKind: "email", SourceID: "gmail:a@x.com", TimestampMS: 1767225600000, Snippet: "phoenix"}
	big := strings.Repeat("x", 3<<20/2) // a reply larger than the initial memory: the memory grows
	fns := map[string]hostFunc{
		abi.FnMemorySearch: answer(abi.FnMemorySearch, func([]byte) []byte { return okReply(abi.SearchResult{Chunks: []abi.ChunkHit{hit}}) }),
		abi.FnChunkGet: answer(abi.FnChunkGet, func([]byte) []byte {
			return []byte(`{"error":{"code":"not_found","message":"no such chunk"}}`)
		}),
		abi.FnSourcesList: answer(abi.FnSourcesList, func([]byte) []byte {
			return okReply(abi.SourcesResult{Sources: []abi.Source{{SourceKind: "chat", SourceID: "slack:#eng", DisplayName: big}}})
		}),
	}
	for _, fn := range []string{abi.FnMemoryRecall, abi.FnChunksList, abi.FnEntitiesTop} {
		fns[fn] = answer(fn, func([]byte) []byte { return okReply(map[string]any{"from": fn}) })
	}
	g := instantiate(t, ctx, "memory.search", fns)
	for i := 0; i < 3; i++ { // the instance is reusable call after call
		seen = nil
		resp := g.call(t, ctx, "memory.search", `{"query":" phoenix ","k":5}`)
		if resp.Error != nil {
			t.Fatalf("memory.search: %+v", resp.Error)
		}
		var res abi.SearchResult
		if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Chunks) != 1 || res.Chunks[0].ID != hit.ID {
			t.Fatalf("memory.search result %s (%v)", resp.Result, err)
		}
		want := abi.FnMemorySearch + ` {"tool":"memory.search","arguments":{"query":" phoenix ","k":5},"client":"mcp:test","request_id":"1"}`
		if len(seen) != 1 || seen[0] != want {
			t.Fatalf("host saw %q, want %q", seen, want)
		}
	}
	for tool, fn := range map[string]string{"memory.recall": abi.FnMemoryRecall, "tree.browse": abi.FnChunksList, "tree.top_entities": abi.FnEntitiesTop} {
		seen = nil
		resp := g.call(t, ctx, tool, `{"k":0}`)
		if resp.Error != nil || string(resp.Result) != `{"from":"`+fn+`"}` || len(seen) != 1 || !strings.HasPrefix(seen[0], fn+` {"tool":"`+tool+`"`) {
			t.Fatalf("%s → %+v / %s; host saw %q", tool, resp.Error, resp.Result, seen)
		}
	}
	resp := g.call(t, ctx, "tree.read_chunk", `{"chunk_id":"ffffffffffffffffffffffffffffffff"}`)
	if resp.Error == nil || *resp.Error != (abi.Error{Code: abi.CodeNotFound, Message: "no such chunk"}) {
		t.Fatalf("a host error → %+v, want it unchanged", resp)
	}
	// A reply larger than the module's initial memory, twice on one instance.
	for i := 0; i < 2; i++ {
		resp = g.call(t, ctx, "tree.list_sources", `{}`)
		var sr abi.SourcesResult
		if resp.Error != nil || json.Unmarshal(resp.Result, &sr) != nil || len(sr.Sources) != 1 || sr.Sources[0].DisplayName != big {
			t.Fatalf("tree.list_sources with a %d-byte reply → %+v", len(big), resp.Error)
		}
	}
	resp = g.call(t, ctx, "searxng_search", `{"query":"q"}`)
	if resp.Error == nil || resp.Error.Code != abi.CodeNotFound || !strings.Contains(resp.Error.Message, `does not serve the tool "searxng_search"`) {
		t.Fatalf("a tool the memory module does not serve → %+v", resp)
	}

	seen = nil
	g = instantiate(t, ctx, "searxng_search", map[string]hostFunc{
		abi.FnSearxngSearch: answer(abi.FnSearxngSearch, func([]byte) []byte {
			return okReply(abi.SearxngResult{Query: "q", Results: []abi.WebResult{{Title: "t", URL: "https://example.org/", Snippet: "c", Source: "brave"}}})
		}),
	})
	resp = g.call(t, ctx, "searxng_search", `{"query":"q","categories":["web","news"]}`)
	var sr abi.SearxngResult
	if resp.Error != nil || json.Unmarshal(resp.Result, &sr) != nil || len(sr.Results) != 1 ||
		sr.Results[0] != (abi.WebResult{Title: "t", URL: "https://example.org/", Snippet: "c", Source: "brave"}) {
		t.Fatalf("searxng_search → %+v / %s", resp.Error, resp.Result)
	}
	if want := abi.FnSearxngSearch + ` {"tool":"searxng_search","arguments":{"query":"q","categories":["web","news"]},"client":"mcp:test","request_id":"1"}`; len(seen) != 1 || seen[0] != want {
		t.Fatalf("host saw %q, want %q", seen, want)
	}
}

// BenchmarkGuestCall measures one oh_call of the memory.search module on a warm
// instance (plain wazero, compiler, close-on-context-done as the runtime runs it),
// with the host answering 10 hits: the guest's share of a sandboxed call.
func BenchmarkGuestCall(b *testing.B) {
	ctx := context.Background()
	hits := make([]abi.ChunkHit, 10)
	for i := range hits {
		hits[i] = abi.ChunkHit{ID: strings.Repeat("ab", 16), SourceKind: "email", SourceID: "gmail:alice@example.com|bob@example.com",
			SourceRef: "<m@example.com>", Title: "Phoenix launch", TimestampMS: 1767225600000, Snippet: strings.Repeat("phoenix launch plan ", 10), Score: 1.5, Seq: i}
	}
	reply := okReply(abi.SearchResult{Chunks: hits})
	t := &testing.T{}
	g := instantiate(t, ctx, "memory.search", map[string]hostFunc{abi.FnMemorySearch: func([]byte) []byte { return reply }})
	req, _ := json.Marshal(abi.CallRequest{Tool: "memory.search", Arguments: json.RawMessage(`{"query":"phoenix launch","k":10}`), Client: "mcp:bench", RequestID: "1"})
	alloc, call := g.mod.ExportedFunction(abi.ExportAlloc), g.mod.ExportedFunction(abi.ExportCall)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := alloc.Call(cctx, uint64(len(req)))
		if err != nil || !g.mod.Memory().Write(uint32(res[0]), req) {
			b.Fatal(err)
		}
		res, err = call.Call(cctx, res[0], uint64(len(req)))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if out, ok := g.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0])); !ok || !bytes.HasPrefix(out, []byte(`{"result":{"chunks":[`)) {
			b.Fatalf("unexpected output %.80s", out)
		}
	}
}

// BenchmarkModules measures decompressing and verifying the embedded modules.
func BenchmarkModules(b *testing.B) {
	for b.Loop() {
		if _, err := Modules(); err != nil {
			b.Fatal(err)
		}
	}
}

// The server passes the first-party modules with SchemasChecked (their schemas are
// not compiled again at start): true because gen compiles them before it pins a
// digest, and checked here for the committed modules.
func TestEmbeddedManifestsCompile(t *testing.T) {
	mods, err := Modules()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		man, err := policy.ReadManifestNamed(m.Wasm, m.Name)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if len(man.Tools) != len(m.Tools) {
			t.Fatalf("%s: %d tools in the manifest, want %d", m.Name, len(man.Tools), len(m.Tools))
		}
	}
}
