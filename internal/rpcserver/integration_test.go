package rpcserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

// stallQuery makes stallingReader hold memory_search until the call's deadline: a
// request that makes the store unavailable, forcing a module failure.
const stallQuery = "stall the store"

// stallingReader is the real read-only store, except that a search for stallQuery
// blocks until the call's context ends.
type stallingReader struct{ runtime.Reader }

func (r stallingReader) Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error) {
	if req.Query == stallQuery {
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
		}
	}
	return r.Reader.Search(ctx, req)
}

func at(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// realSources is a small hand-made memory: a mail thread, a chat channel, a document.
func realSources() []memtree.SourceInput {
	return []memtree.SourceInput{
		{Kind: memtree.KindEmail, SourceID: "email:brakes-1@kestrel.example", Title: "Brake repair quote", Provider: "mbox", Origin: "inbox.mbox#1",
			Messages: []memtree.MessageInput{
				{Ref: "brakes-1@kestrel.example", Author: "Alice Martin", AuthorAddr: "alice@kestrel.example", To: []string{"Bob Stone <bob@garage.example>"},
					Subject: "Brake repair quote", TimestampMS: at("2026-02-03T09:00:00Z"),
					Text: "Hi Bob,\n\nThe car makes a grinding noise when braking. Could you send a quote for new brake pads?\n\nThanks, Alice"},
				{Ref: "brakes-2@garage.example", Author: "Bob Stone", AuthorAddr: "bob@garage.example", To: []string{"alice@kestrel.example"},
					Subject: "Re: Brake repair quote", TimestampMS: at("2026-02-04T10:30:00Z"),
					Text: "Pads and rotors come to 420 EUR including labour. See https://garage.example/quote/77. #brakes"},
			}},
		{Kind: memtree.KindChat, SourceID: "slack:#phoenix", Title: "#phoenix", Provider: "slack",
			Messages: []memtree.MessageInput{
				{Ref: "slack:phoenix:1", Author: "Dana Ruiz", TimestampMS: at("2026-03-02T14:03:00Z"), Text: "Launch checklist is ready, @erik please review"},
				{Ref: "slack:phoenix:2", Author: "Erik Lund", TimestampMS: at("2026-03-02T14:10:00Z"), Text: "Reviewed. The rollout slips one week because of the billing migration."},
				{Ref: "slack:phoenix:3", Author: "Dana Ruiz", TimestampMS: at("2026-03-05T08:00:00Z"), Text: "New launch date is March 16. #launch"},
			}},
		{Kind: memtree.KindDocument, SourceID: "doc:notes/lisbon.md", Title: "Lisbon trip", Provider: "markdown", Tags: []string{"travel"},
			Messages: []memtree.MessageInput{
				{Ref: "notes/lisbon.md", TimestampMS: at("2026-01-20T12:00:00Z"),
					Text: "Flights booked for April.\n\nHotel near Alfama, three nights.\n\nVisit the tram 28 and the Belem tower."},
			}},
	}
}

// realEnv is a server over the real runtime, the embedded first-party modules and a
// real store, with a third-party module (examples/hostile/path_open.wasm) that the
// static gate refuses.
type realEnv struct {
	*testEnv
	host *runtime.Host
	mods map[string]toolswasm.Module
}

func newRealEnv(t testing.TB, timeoutMS int) *realEnv {
	t.Helper()
	return newRealEnvWith(t, timeoutMS, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
}

// newRealEnvWith is newRealEnv with the runtime's and server's logger and an audit log.
func newRealEnvWith(t testing.TB, timeoutMS int, quiet *slog.Logger, al *audit.Log) *realEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "workspace", "memory_tree", "chunks.db")
	w, err := memtree.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second) // fail, never hang, if the store stalls
	defer cancel()
	for _, src := range realSources() {
		if _, err := w.Ingest(ictx, src); err != nil {
			t.Fatalf("ingest %s into %s: %v", src.SourceID, dbPath, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	store, err := memtree.OpenReadOnly(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	// A third-party module that asks for path_open: pinned and granted, refused by the gate.
	tools := filepath.Join(dir, "tools")
	if err := os.Mkdir(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	hostile, err := os.ReadFile(filepath.Join("..", "..", "examples", "hostile", "path_open.wasm"))
	if err != nil {
		t.Fatalf("examples/hostile/path_open.wasm: %v", err)
	}
	if err := os.WriteFile(filepath.Join(tools, "path_open.wasm"), hostile, 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(fmt.Sprintf("[defaults]\ntimeout_ms = %d\n\n[[module]]\nfile = \"path_open.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n",
		timeoutMS, sha256Hex(hostile))), filepath.Join(dir, "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}

	mods, err := toolswasm.Modules()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]toolswasm.Module{}
	var builtins []runtime.BuiltinModule
	for _, m := range mods {
		for _, tool := range m.Tools { // by tool: the six memory tools share the memory module
			byName[tool] = m
		}
		builtins = append(builtins, runtime.BuiltinModule{Name: m.Name + ".wasm", SHA256: m.SHA256, Wasm: m.Wasm})
	}
	host, err := runtime.New(ctx, runtime.Options{
		Reader: stallingReader{memory.Default(store)}, Builtins: builtins, ToolsDir: tools, Policy: pol,
		Autonomy: "readonly", Logger: quiet, // CacheDir "": the shared on-disk compilation cache
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(context.Background()) })
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	if err := host.WaitReady(wctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	s, err := New(host, Options{Token: testToken, Version: "9.9.9-test", SearXNGEnabled: false, Logger: quiet, Audit: al})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &realEnv{testEnv: &testEnv{srv: s, http: hs}, host: host, mods: byName}
}

func resultOf(t testing.TB, r rpcResp, v any) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("unexpected error %+v", *r.Error)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatalf("decode %s: %v", r.Result, err)
	}
}

func TestRealRuntime(t *testing.T) {
	e := newRealEnv(t, 3000)

	t.Run("auth", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"brake"}}`
		if status, _ := post(t, e.http.URL, "", body); status != 401 {
			t.Errorf("no token: HTTP %d", status)
		}
		if status, _ := post(t, e.http.URL, "wrong-"+testToken, body); status != 401 {
			t.Errorf("wrong token: HTTP %d", status)
		}
	})

	var chunkID string
	t.Run("search", func(t *testing.T) {
		var res abi.SearchResult
		resultOf(t, e.call(t, "openhuman.memory_tree_search", `{"query":"brake pads","k":5}`), &res)
		if len(res.Chunks) == 0 || res.Chunks[0].SourceID != "email:brakes-1@kestrel.example" || res.Chunks[0].ID == "" || res.Chunks[0].Snippet == "" {
			t.Fatalf("search: %+v", res)
		}
		chunkID = res.Chunks[0].ID
		wantErr(t, e.call(t, "openhuman.memory_tree_search", `{}`), CodeInvalidParams, "missing required argument `query`")
		wantErr(t, e.call(t, "openhuman.memory_tree_search", `{"query":"x","k":51}`), CodeInvalidParams, "must not exceed 50")
		wantErr(t, e.call(t, "openhuman.memory_tree_search", `{"query":"x","limit":5}`), CodeInvalidParams, "unexpected argument `limit`")
	})
	t.Run("recall", func(t *testing.T) {
		var res abi.RecallResult
		resultOf(t, e.call(t, "openhuman.memory_tree_recall", `{"query":"when does the launch happen","k":3}`), &res)
		if len(res.Chunks) == 0 || res.Mode == "" {
			t.Fatalf("recall: %+v", res)
		}
		wantErr(t, e.call(t, "openhuman.memory_tree_recall", `{"query":"x","k":0}`), CodeInvalidParams, "`k`")
	})
	t.Run("get_chunk", func(t *testing.T) {
		var res abi.ChunkResult
		resultOf(t, e.call(t, "openhuman.memory_tree_get_chunk", fmt.Sprintf(`{"chunk_id":%q}`, chunkID)), &res)
		if res.Chunk.ID != chunkID || !strings.Contains(res.Chunk.Text, "grinding noise") {
			t.Fatalf("get_chunk: %+v", res)
		}
		wantErr(t, e.call(t, "openhuman.memory_tree_get_chunk", fmt.Sprintf(`{"id":%q}`, chunkID)), CodeInvalidParams, "`id`")
		wantErr(t, e.call(t, "openhuman.memory_tree_get_chunk", `{"chunk_id":"0123456789abcdef0123456789abcdef"}`), CodeNotFound, "no chunk with id 0123456789abcdef0123456789abcdef")
	})
	t.Run("list_chunks", func(t *testing.T) {
		var res abi.ListResult
		resultOf(t, e.call(t, "openhuman.memory_tree_list_chunks", `{"source_kinds":["chat"],"k":10}`), &res)
		if res.Total == 0 || len(res.Chunks) == 0 || res.Chunks[0].SourceKind != "chat" {
			t.Fatalf("list_chunks: %+v", res)
		}
		wantErr(t, e.call(t, "openhuman.memory_tree_list_chunks", `{"source_kinds":"chat"}`), CodeInvalidParams, "must be an array of strings")
	})
	t.Run("top_entities", func(t *testing.T) {
		var res abi.EntitiesResult
		resultOf(t, e.call(t, "openhuman.memory_tree_top_entities", `{"kind":"email","k":5}`), &res)
		found := false
		for _, en := range res.Entities {
			found = found || en.EntityID == "email:alice@kestrel.example"
		}
		if !found {
			t.Fatalf("top_entities: %+v", res)
		}
		wantErr(t, e.call(t, "openhuman.memory_tree_top_entities", `{"kind":"  "}`), CodeInvalidParams, "must not be empty")
	})
	t.Run("list_sources", func(t *testing.T) {
		var res abi.SourcesResult
		resultOf(t, e.call(t, "openhuman.memory_tree_list_sources", ``), &res)
		if len(res.Sources) != 3 {
			t.Fatalf("list_sources: %+v", res)
		}
		wantErr(t, e.call(t, "openhuman.memory_tree_list_sources", `{"user_email_hint":5}`), CodeInvalidParams, "must be a string")
	})
	t.Run("searxng_disabled", func(t *testing.T) {
		wantErr(t, e.call(t, "openhuman.tools_searxng_search", `{"query":"go"}`), CodeDisabled, "SearXNG search is not enabled")
	})
	t.Run("body_cap", func(t *testing.T) {
		status, b := post(t, e.http.URL, testToken, `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"`+strings.Repeat("x", 2<<20)+`"}}`)
		if status != 413 || !strings.Contains(string(b), "larger than 1048576 bytes") {
			t.Fatalf("over the cap: HTTP %d %.200s", status, b)
		}
	})

	t.Run("registry", func(t *testing.T) {
		r := e.call(t, "openhuman.tool_registry_get", `{"tool_id":"memory.search"}`)
		var got struct{ Tool Entry }
		resultOf(t, r, &got)
		ms := got.Tool
		if ms.Health != HealthAvailable || !ms.Enabled || ms.Module.SHA256 != e.mods["memory.search"].SHA256 || ms.Module.Origin != "builtin" ||
			ms.Module.ABI != "openhuman/1" || strings.Join(ms.Module.Capabilities, ",") != "memory.read" || ms.Module.Limits.TimeoutMS != 3000 ||
			ms.Route.RPCMethod != "openhuman.memory_tree_search" || !strings.Contains(string(ms.InputSchema), `"additionalProperties":false`) ||
			!strings.Contains(string(ms.OutputSchema), "chunks") || strings.Join(ms.AllowedAgents, ",") != "*" || ms.Stats.Count == 0 ||
			ms.Module.Name != "memory.wasm" {
			t.Fatalf("memory.search entry: %+v", ms)
		}
		// memory.recall shares the module (its health and statistics stay its own:
		// health_degraded_then_available below).
		got.Tool = Entry{}
		resultOf(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"memory.recall"}`), &got)
		if mr := got.Tool; mr.Module.Name != "memory.wasm" || mr.Module.SHA256 != ms.Module.SHA256 {
			t.Fatalf("memory.recall entry: module %+v", mr.Module)
		}
		got.Tool = Entry{}
		resultOf(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":" tools.searxng_search "}`), &got)
		ts := got.Tool
		if ts.Health != HealthDisabled || ts.Enabled || ts.Transport != TransportJSONRPC || ts.Route.Method != "openhuman.tools_searxng_search" ||
			ts.Module.SHA256 != e.mods["searxng_search"].SHA256 || !strings.Contains(string(ts.InputSchema), "max_results") {
			t.Fatalf("tools.searxng_search entry: %+v", ts)
		}
		got.Tool = Entry{}
		resultOf(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"hostile.path_open"}`), &got)
		hp := got.Tool
		if hp.Health != HealthUnavailable || hp.Enabled || !strings.Contains(hp.HealthReason, "path_open") || hp.Module.Origin != "directory" {
			t.Fatalf("refused module entry: %+v", hp)
		}
		got.Tool = Entry{}
		resultOf(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"tools.web_search"}`), &got)
		if ws := got.Tool; ws.Health != HealthDisabled || ws.Enabled || ws.Route.Method != "openhuman.tools_web_search" ||
			ws.Module.SHA256 != e.mods["searxng_search"].SHA256 || string(ws.InputSchema) != string(ts.InputSchema) {
			t.Fatalf("tools.web_search entry: %+v", ws)
		}

		var list struct{ Tools []Entry }
		resultOf(t, e.call(t, "openhuman.tool_registry_list", ``), &list)
		ids := map[string]bool{}
		prev := ""
		for _, en := range list.Tools {
			if en.ToolID <= prev {
				t.Fatalf("not sorted/unique at %s after %s", en.ToolID, prev)
			}
			prev = en.ToolID
			ids[en.ToolID] = true
		}
		for _, id := range []string{"memory.search", "memory.recall", "tree.read_chunk", "tree.browse", "tree.top_entities", "tree.list_sources",
			"searxng_search", "hostile.path_open", "memory_tree.search", "memory_tree.recall", "memory_tree.get_chunk", "memory_tree.list_chunks",
			"memory_tree.top_entities", "memory_tree.list_sources", "tools.searxng_search", "tools.web_search"} {
			if !ids[id] {
				t.Errorf("registry lacks %s", id)
			}
		}
		if len(list.Tools) != 16 {
			t.Errorf("registry has %d entries, want 16", len(list.Tools))
		}
	})

	t.Run("health_degraded_then_available", func(t *testing.T) {
		r := e.call(t, "openhuman.memory_tree_search", fmt.Sprintf(`{"query":%q}`, stallQuery))
		if r.Error == nil || !strings.Contains(r.Error.Data, "did not finish within its time limit") {
			t.Fatalf("stalled store: want a time-limit error, got %s %+v", r.Result, r.Error)
		}
		var got struct{ Tool Entry }
		for _, id := range []string{"memory.search", "memory_tree.search"} {
			got.Tool = Entry{}
			resultOf(t, e.call(t, "openhuman.tool_registry_get", fmt.Sprintf(`{"tool_id":%q}`, id)), &got)
			if got.Tool.Health != HealthDegraded || !strings.Contains(got.Tool.LastError, "deadline") || got.Tool.LastErrorAt == nil || got.Tool.Stats.Errors == 0 {
				t.Fatalf("%s after a failure: %+v", id, got.Tool)
			}
		}
		got.Tool = Entry{}
		resultOf(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"memory.recall"}`), &got)
		if got.Tool.Health != HealthAvailable {
			t.Fatalf("memory.recall is affected: %+v", got.Tool)
		}
		var res abi.SearchResult
		resultOf(t, e.call(t, "openhuman.memory_tree_search", `{"query":"launch"}`), &res)
		got.Tool = Entry{}
		resultOf(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"memory.search"}`), &got)
		if got.Tool.Health != HealthAvailable || got.Tool.LastError != "" {
			t.Fatalf("memory.search after a success: %+v", got.Tool)
		}
	})
}

// TestRealRuntimeConcurrentClients runs 50 clients × 100 memory_tree_search calls over
// loopback HTTP into the real runtime and prints requests/s and p50/p99.
func TestRealRuntimeConcurrentClients(t *testing.T) {
	e := newRealEnv(t, 15000)
	queries := []string{"brake pads", "launch date", "billing migration", "Lisbon hotel", "quote"}
	res := runLoad(e.http.URL, testToken, 50, 100, func(c, i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"openhuman.memory_tree_search","params":{"query":%q,"k":5}}`, i, queries[(c+i)%len(queries)])
	}, checkResult(`"source_id"`))
	t.Logf("real runtime, memory_tree_search, 50 clients x 100 calls: %v", res)
	if res.Requests != 5000 || len(res.Errors) > 0 {
		t.Fatalf("load: %v; errors: %v", res, res.Errors)
	}
	var got struct{ Tool Entry }
	resultOf(t, e.call(t, "openhuman.tool_registry_get", `{"tool_id":"memory.search"}`), &got)
	if got.Tool.Stats.Count < 5000 || got.Tool.Stats.Errors != 0 || got.Tool.Health != HealthAvailable {
		t.Fatalf("stats after load: %+v", got.Tool.Stats)
	}
	t.Logf("module-side latency over the last calls: p50 %.2f ms, p95 %.2f ms", got.Tool.Stats.P50MS, got.Tool.Stats.P95MS)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
