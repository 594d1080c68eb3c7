package examples

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/guestbuild"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/searxng"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
)

// needToolchain skips a test whose toolchain is missing, saying what to
// install; under CI=true (.ci/run installs every toolchain) it fails instead.
func needToolchain(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, guestbuild.ErrMissing) && os.Getenv("CI") != "true" {
		t.Skipf("not run: %v", err)
	}
	t.Fatal(err)
}

// buildRust builds the cdylib crate in dir (library lib) from source with a
// fresh target folder and packs manifest (TOOL replaced by tool) into it.
func buildRust(t *testing.T, dir, lib, manifest, tool string) []byte {
	t.Helper()
	_, _, err := guestbuild.Rustc()
	needToolchain(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mod, err := guestbuild.BuildRust(ctx, dir, lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return packManifest(t, mod, manifest, tool)
}

// buildAS builds an AssemblyScript entry file from source with the repository's SDK.
func buildAS(t *testing.T, entry, manifest, tool string) []byte {
	t.Helper()
	_, err := guestbuild.Asc(repoRoot(t))
	needToolchain(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	abs, _ := filepath.Abs(entry)
	sdk, _ := filepath.Abs(filepath.Join(repoRoot(t), "sdk", "assemblyscript", "assembly", "abi"))
	rel, err := filepath.Rel(filepath.Dir(abs), sdk)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := guestbuild.BuildAS(ctx, repoRoot(t), abs, filepath.ToSlash(rel)+"/abort")
	if err != nil {
		t.Fatal(err)
	}
	return packManifest(t, mod, manifest, tool)
}

func packManifest(t *testing.T, mod []byte, manifest, tool string) []byte {
	t.Helper()
	man, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	out, err := wasmbin.SetCustomSection(mod, policy.ManifestSection, []byte(strings.ReplaceAll(string(man), "TOOL", tool)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// threadYears are the e-mail threads of the fixture store: one source per
// entry, dated in that year; the chat source below is not mail. There are more
// than one page (50) of them, so tools that count them must page.
var threadYears = func() []int {
	var ys []int
	for i := 0; i < 61; i++ {
		ys = append(ys, 2019+(i*5)%8)
	}
	return ys
}()

// writeThreadStore writes a memory tree at path with the threads of threadYears
// (alice@example.com writes to bob@example.com in each) and one chat.
func writeThreadStore(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	w, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, y := range threadYears {
		msgs := []memtree.MessageInput{{
			Ref: fmt.Sprintf("m%d@example.com", i), Author: "Alice", AuthorAddr: "alice@example.com", To: []string{"bob@example.com"},
			Subject: fmt.Sprintf("Budget %d", i), TimestampMS: time.Date(y, time.Month(1+i%12), 1+i%28, 9, 0, 0, 0, time.UTC).UnixMilli(),
			Text: fmt.Sprintf("Thread %d: the quarterly budget review, with the numbers we still need from Zürich — ünïcödé ✓.", i),
		}}
		if _, err := w.Ingest(ctx, memtree.SourceInput{Kind: "email", SourceID: fmt.Sprintf("email:thread-%d", i), Title: fmt.Sprintf("Budget %d", i), Provider: "eml", Messages: msgs, Origin: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	chat := []memtree.MessageInput{{Ref: "c1", Author: "Bob", Text: "the budget chat", TimestampMS: time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC).UnixMilli()}}
	if _, err := w.Ingest(ctx, memtree.SourceInput{Kind: "chat", SourceID: "chat:team", Title: "Team", Provider: "test", Messages: chat, Origin: "test"}); err != nil {
		t.Fatal(err)
	}
}

// probeHost serves the modules (file name → packed bytes, all granted memory.read
// and web.searxng) over a thread store and a SearXNG on 127.0.0.1.
func probeHost(t *testing.T, mods map[string][]byte) *runtime.Host {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	storePath := filepath.Join(dir, "chunks.db")
	writeThreadStore(t, storePath)
	store, err := memtree.OpenReadOnly(storePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tools := filepath.Join(dir, "tools")
	os.Mkdir(tools, 0o755)
	var pol strings.Builder
	for name, mod := range mods {
		os.WriteFile(filepath.Join(tools, name), mod, 0o644)
		fmt.Fprintf(&pol, "[[module]]\nfile = %q\nsha256 = %q\ngrant = [\"memory.read\", \"web.searxng\"]\n", name, sum(mod))
	}
	p, err := policy.Parse([]byte(pol.String()), "policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"query":%q,"results":[{"url":"https://example.org/","title":"Example"}]}`, r.URL.Query().Get("q"))
	}))
	t.Cleanup(srv.Close)
	sx, err := searxng.New(config.SearXNG{Enabled: true, BaseURL: srv.URL, MaxResults: 5, TimeoutSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	host, err := runtime.New(ctx, runtime.Options{Reader: memory.Default(store), ToolsDir: tools, Policy: p, SearXNG: sx, SearXNGEnabled: true,
		CacheDir: filepath.Join(os.TempDir(), "openhuman-examples-test-cache", "wazero")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(ctx) })
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := host.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range host.Status() {
		if st.State != runtime.StateReady {
			t.Fatalf("%s: %s %s", st.Module.Name, st.State, st.Error)
		}
	}
	return host
}

// TestGuestSDKsCallEveryHostFunction builds the Rust and AssemblyScript SDK test
// tools (examples/sdkprobe) from source and, through the real runtime over a
// real store and a SearXNG on loopback, calls every host function of
// memory.read and web.searxng from each, with the host's error paths: a host
// error reaches the caller as the tool's error, code and message unchanged.
func TestGuestSDKsCallEveryHostFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Rust and AssemblyScript modules; run without -short")
	}
	probes := map[string][]byte{}
	t.Run("build", func(t *testing.T) {
		t.Run("rust", func(t *testing.T) {
			probes["sdkprobe-rust.wasm"] = buildRust(t, filepath.Join("sdkprobe", "rust"), "sdkprobe", filepath.Join("sdkprobe", "probe.toml"), "sdkprobe.rust")
		})
		t.Run("as", func(t *testing.T) {
			probes["sdkprobe-as.wasm"] = buildAS(t, filepath.Join("sdkprobe", "as", "probe.ts"), filepath.Join("sdkprobe", "probe.toml"), "sdkprobe.as")
		})
	})
	if len(probes) == 0 {
		t.Skip("no toolchain: nothing to call")
	}
	t.Run("mcp", func(t *testing.T) { probeOverMCP(t, probes) })
	host := probeHost(t, probes)
	ctx := context.Background()
	call := func(t *testing.T, tool, args string) (map[string]any, *runtime.Outcome) {
		t.Helper()
		out, err := host.Call(ctx, runtime.Call{Tool: tool, Arguments: json.RawMessage(args), Client: "mcp:probe", RequestID: "r"})
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		var res map[string]any
		if out.ToolError == nil {
			if err := json.Unmarshal(out.Result, &res); err != nil {
				t.Fatalf("%s %s: result %s: %v", tool, args, out.Result, err)
			}
		}
		return res, out
	}
	for file := range probes {
		tool := "sdkprobe.rust"
		if strings.Contains(file, "-as") {
			tool = "sdkprobe.as"
		}
		t.Run(tool, func(t *testing.T) {
			// Every host function, answering.
			ok := func(args string, check func(map[string]any) string) map[string]any {
				t.Helper()
				res, out := call(t, tool, args)
				if out.ToolError != nil {
					t.Fatalf("%s: %+v", args, out.ToolError)
				}
				if why := check(res); why != "" {
					t.Errorf("%s → %v: %s", args, res, why)
				}
				return res
			}
			num := func(v any) float64 { f, _ := v.(float64); return f }
			ok(`{"fn":"memory_search","query":"budget","k":3}`, func(r map[string]any) string {
				if num(r["count"]) < 1 || len(r["first"].(string)) != 32 {
					return "want hits with a 32-hex id"
				}
				return ""
			})
			ok(`{"fn":"memory_recall","query":"budget numbers","k":3}`, func(r map[string]any) string {
				if num(r["count"]) < 1 || r["first"] == "" {
					return "want hits and a mode"
				}
				return ""
			})
			list := ok(`{"fn":"chunks_list","kinds":["email"],"k":2}`, func(r map[string]any) string {
				if num(r["count"]) != 2 || num(r["total"]) != float64(len(threadYears)) {
					return fmt.Sprintf("want 2 of %d email chunks", len(threadYears))
				}
				return ""
			})
			ok(fmt.Sprintf(`{"fn":"chunk_get","id":%q}`, list["first"]), func(r map[string]any) string {
				if !strings.Contains(r["first"].(string), "Zürich — ünïcödé ✓") || num(r["total"]) < 1.7e12 {
					return "want the chunk's text (non-ASCII intact) and its timestamp"
				}
				return ""
			})
			ok(`{"fn":"entities_top","k":5}`, func(r map[string]any) string {
				if num(r["count"]) < 1 || num(r["total"]) < 1 || r["first"] == "" {
					return "want entities"
				}
				return ""
			})
			ok(`{"fn":"sources_list","kinds":["email"],"k":50}`, func(r map[string]any) string {
				if num(r["count"]) != 50 || num(r["total"]) != float64(len(threadYears)) || !strings.HasPrefix(r["first"].(string), "email:thread-") {
					return "want a full page of threads and the total"
				}
				return ""
			})
			ok(`{"fn":"searxng_search","query":"zürich budget"}`, func(r map[string]any) string {
				if num(r["total"]) != 200 || !strings.Contains(r["first"].(string), `"query":"zürich budget"`) {
					return "want SearXNG's body with status 200"
				}
				return ""
			})
			ok(`{"fn":"raw","query":"{\"kinds\":[\"chat\"]}"}`, func(r map[string]any) string {
				if !strings.HasPrefix(r["first"].(string), `{"ok":{`) || !strings.Contains(r["first"].(string), "chat:team") {
					return "want the host's reply bytes undecoded"
				}
				return ""
			})
			if r, out := call(t, tool, `{"fn":"log","query":"hello from the probe"}`); out.ToolError != nil || r["fn"] != "log" {
				t.Errorf("log: %+v", out)
			}
			// The argument helpers, with the built-in tools' messages.
			ok(`{"fn":"args","kinds":["a"," b ",""],"k":7,"name":" x "}`, func(r map[string]any) string {
				if num(r["count"]) != 2 || num(r["total"]) != 7 || r["first"] != "x|a,b" {
					return "want 2 trimmed kinds, k 7 and the trimmed name"
				}
				return ""
			})
			ok(`{"fn":"args","name":"x"}`, func(r map[string]any) string {
				if num(r["count"]) != 0 || num(r["total"]) != 10 {
					return "want no kinds and the default k"
				}
				return ""
			})
			// The JSON reader and writer round-trip escapes, surrogate pairs, nesting and numbers.
			echoIn := `{"fn":"echo","s":"tab\t quote\" back\\ nl\n ctl\u0001 😀 \ud83d\ude00 é","n":[0,-1,1.5,1e3,12345678901,-0.25],"o":{"a":[true,false,null,{}],"b":[]}}`
			res, out := call(t, tool, echoIn)
			if out.ToolError != nil {
				t.Fatalf("echo: %+v", out.ToolError)
			}
			var want map[string]any
			json.Unmarshal([]byte(echoIn), &want)
			got, _ := json.Marshal(res["echo"])
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) || res["client"] != "mcp:probe" {
				t.Errorf("echo: got %s (client %v), want %s", got, res["client"], wantJSON)
			}

			// Error paths: the host's error, unchanged, is the tool's error.
			fails := []struct{ args, code, contains string }{
				{`{"fn":"memory_search","query":"budget","k":51}`, "invalid_params", "k must be between 1 and 50, got 51"},
				{`{"fn":"memory_recall","query":"","k":3}`, "invalid_params", "recall: empty query"},
				{`{"fn":"chunk_get","id":"0123456789abcdef0123456789abcdef"}`, "not_found", "0123456789abcdef0123456789abcdef"},
				{`{"fn":"chunks_list","k":51}`, "invalid_params", "k must be between 1 and 50, got 51"},
				{`{"fn":"entities_top","k":51}`, "invalid_params", "k must be between 1 and 50, got 51"},
				{`{"fn":"sources_list","kinds":["email"],"k":51}`, "invalid_params", "k must be between 1 and 50, got 51"},
				{`{"fn":"searxng_search","query":"x","categories":["videos"]}`, "unavailable", `unsupported SearXNG category "videos"`},
				{`{"fn":"nope"}`, "invalid_params", "unknown fn `nope`"},
				{`{"fn":"args","name":"x","extra":1}`, "invalid_params", "unexpected argument `extra`"},
				{`{"fn":"args","name":"x","kinds":"a"}`, "invalid_params", "argument `kinds` must be an array of strings, got string"},
				{`{"fn":"args","name":"x","kinds":["a",1]}`, "invalid_params", "argument `kinds` must contain only strings, got number entry"},
				{`{"fn":"args","name":"x","kinds":["a","b","c","d"]}`, "invalid_params", "argument `kinds` has 4 items; at most 3 are allowed (split the filter over several calls)"},
				{`{"fn":"args","name":"x","k":0}`, "invalid_params", "argument `k` must be greater than zero"},
				{`{"fn":"args","name":"x","k":51}`, "invalid_params", "argument `k` must not exceed 50 (got 51)"},
				{`{"fn":"args","name":"x","k":"5"}`, "invalid_params", "argument `k` must be a positive integer"},
				{`{"fn":"args","name":"x","k":1.5}`, "invalid_params", "argument `k` must be a positive integer"},
				{`{"fn":"args"}`, "invalid_params", "missing required argument `name`"},
				{`{"fn":"args","name":"  "}`, "invalid_params", "argument `name` must not be empty"},
				{`{"fn":"array"}`, "internal", "the tool returned JSON of type array; a result must be a JSON object"},
			}
			for _, f := range fails {
				_, out := call(t, tool, f.args)
				if out.ToolError == nil || out.ToolError.Code != f.code || !strings.Contains(out.ToolError.Message, f.contains) {
					t.Errorf("%s: %+v, want %s containing %q", f.args, out.ToolError, f.code, f.contains)
				} else {
					t.Logf("%s → %s: %s", f.args, out.ToolError.Code, out.ToolError.Message)
				}
			}
			// A trap fails the call (internal) and the next call gets a fresh instance.
			if _, err := host.Call(ctx, runtime.Call{Tool: tool, Arguments: json.RawMessage(`{"fn":"panic","k":3}`)}); err == nil {
				t.Errorf("panic: the call succeeded")
			}
			// Many calls on pooled instances: the SDK frees requests and replies.
			for i := 0; i < 300; i++ {
				if _, out := call(t, tool, `{"fn":"sources_list","k":50}`); out.ToolError != nil {
					t.Fatalf("call %d: %+v", i, out.ToolError)
				}
			}
		})
	}
}

// probeOverMCP serves the probes from a real `openhuman-core mcp` over stdio and
// checks what an MCP client sees: a result as structuredContent, and a host
// error (k out of range; an unknown chunk) as an isError result whose text is
// the host's message.
func probeOverMCP(t *testing.T, probes map[string][]byte) {
	work := t.TempDir()
	bin := os.Getenv("OPENHUMAN_E2E_BINARY") // a prebuilt binary, to save the build
	if bin == "" {
		bin = filepath.Join(work, "openhuman-core")
		buildGo(t, "./cmd/openhuman-core", bin, false)
	}
	home := filepath.Join(work, "home")
	tools := filepath.Join(home, "tools")
	os.MkdirAll(tools, 0o755)
	var pol strings.Builder
	for name, mod := range probes {
		os.WriteFile(filepath.Join(tools, name), mod, 0o644)
		fmt.Fprintf(&pol, "[[module]]\nfile = %q\nsha256 = %q\ngrant = [\"memory.read\", \"web.searxng\"]\n", name, sum(mod))
	}
	os.WriteFile(filepath.Join(home, "policy.toml"), []byte(pol.String()), 0o600)
	// SearXNG enabled (on a loopback server), so the web.searxng modules load.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[]}`)
	}))
	defer srv.Close()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("[searxng]\nenabled = true\nbase_url = %q\n", srv.URL)), 0o600)
	env := append(os.Environ(), "OPENHUMAN_HOME="+home, "OPENHUMAN_WORKSPACE="+filepath.Join(home, "workspace"),
		"XDG_CACHE_HOME="+filepath.Join(os.TempDir(), "openhuman-examples-test-cache"), "OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=")
	doc := filepath.Join(work, "notes.md")
	os.WriteFile(doc, []byte("# Budget\n\nAsk alice@example.com about the Q3 budget review.\n"), 0o644)
	ing := exec.Command(bin, "ingest", doc)
	ing.Env = env
	if b, err := ing.CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, b)
	}
	c := startMCP(t, bin, env)
	// As a client known to accept dotted tool names (the spec's names; others get portable ones).
	c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "mcp-inspector", "version": "0"}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	names := c.toolNames()
	for name := range probes {
		tool := "sdkprobe.rust"
		if strings.Contains(name, "-as") {
			tool = "sdkprobe.as"
		}
		if !has(names, tool) {
			t.Fatalf("%s is not listed: %v\n%s", tool, names, c.stderr.String())
		}
		r := c.request("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"fn": "sources_list", "k": 5}})
		res, _ := r["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if res == nil || res["isError"] == true || sc == nil || sc["fn"] != "sources_list" || sc["total"] != 1.0 {
			t.Errorf("%s sources_list: %v", tool, r)
		}
		for _, f := range []struct {
			args map[string]any
			text string
		}{
			{map[string]any{"fn": "chunks_list", "k": 51}, "k must be between 1 and 50, got 51"},
			{map[string]any{"fn": "chunk_get", "id": "0123456789abcdef0123456789abcdef"}, "get chunk 0123456789abcdef0123456789abcdef: no such chunk"},
		} {
			r := c.request("tools/call", map[string]any{"name": tool, "arguments": f.args})
			res, _ := r["result"].(map[string]any)
			if res == nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), f.text) {
				t.Errorf("%s %v: want an isError result saying %q, got %v", tool, f.args, f.text, r)
			}
		}
	}
}
