package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// thirdParty writes modules into a fresh tools directory and returns it.
func thirdParty(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func policyFor(t *testing.T, entries ...string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(strings.Join(entries, "\n")), "/home/u/.openhuman/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func entry(file string, wasm []byte, grant ...string) string {
	if grant == nil {
		grant = []string{}
	}
	q, _ := json.Marshal(grant)
	return fmt.Sprintf("[[module]]\nfile = %q\nsha256 = %q\ngrant = %s\n", file, digest(wasm), q)
}

func statusOf(t *testing.T, h *Host, name string) ModuleStatus {
	t.Helper()
	for _, st := range h.Status() {
		if st.Module.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %s in %+v", name, h.Status())
	return ModuleStatus{}
}

func TestStaticGateRefusesBeforeInstantiation(t *testing.T) {
	websneak := pack(t, guest(t, "websneak"), manifest(abi.Version, []string{abi.CapMemoryRead}, "", tool{name: "websneak"}))
	fswrite := pack(t, guest(t, "fswrite"), manifest(abi.Version, []string{abi.CapMemoryRead}, "", tool{name: "fswrite"}))
	sneaky := pack(t, guest(t, "sneaky"), manifest(abi.Version, nil, "", tool{name: "sneaky"}))
	// A hand-built module importing path_open.
	var b wasmbin.Builder
	i32, i64 := wasmbin.I32, wasmbin.I64
	b.ImportFunc("wasi_snapshot_preview1", "path_open", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32, i32, i32, i32, i64, i64, i32, i32}, Results: []wasmbin.ValType{i32}})
	b.Memory(1)
	b.Func("oh_alloc", wasmbin.FuncType{Params: []wasmbin.ValType{i32}, Results: []wasmbin.ValType{i32}}, []byte{0x41, 0})
	b.Func("oh_call", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}}, []byte{0x42, 0})
	pathOpen := pack(t, b.Bytes(), manifest(abi.Version, nil, "", tool{name: "opener"}))

	files := map[string][]byte{"websneak.wasm": websneak, "fswrite.wasm": fswrite, "sneaky.wasm": sneaky, "opener.wasm": pathOpen}
	pol := policyFor(t, entry("websneak.wasm", websneak, "memory.read", "web.searxng"), entry("fswrite.wasm", fswrite, "memory.read"),
		entry("sneaky.wasm", sneaky), entry("opener.wasm", pathOpen))
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, files), Policy: pol, SearXNGEnabled: true})
	want := map[string][]string{
		"websneak.wasm": {"module imports openhuman.searxng_search (capability web.searxng), which its manifest does not request"},
		"fswrite.wasm":  {"openhuman.fs_write does not exist"},
		"sneaky.wasm": {"wasi_snapshot_preview1.path_open is not allowed", "wasi_snapshot_preview1.fd_read is not allowed",
			"wasi_snapshot_preview1.path_filestat_get is not allowed"},
		"opener.wasm": {"wasi_snapshot_preview1.path_open is not allowed"},
	}
	for name, wants := range want {
		st := statusOf(t, h, name)
		if st.State != StateRefused {
			t.Errorf("%s: state %s", name, st.State)
		}
		for _, w := range wants {
			if !strings.Contains(st.Error, w) {
				t.Errorf("%s: error %q lacks %q", name, st.Error, w)
			}
		}
		// Never compiled or instantiated.
		m := findModule(h, name)
		if m.rt != nil || m.compiled != nil {
			t.Errorf("%s was compiled despite the refusal", name)
		}
	}
	if len(h.Tools()) != 0 {
		t.Errorf("refused modules serve tools: %+v", h.Tools())
	}
	if _, err := call(t, h, "websneak", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("call to refused tool: %v", err)
	}

	// Granted only memory.read while the manifest asks for web.searxng too: policy refuses.
	websneak2 := pack(t, guest(t, "websneak"), manifest(abi.Version, []string{abi.CapMemoryRead, abi.CapWebSearXNG}, "", tool{name: "websneak"}))
	h2, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"websneak.wasm": websneak2}), Policy: policyFor(t, entry("websneak.wasm", websneak2, "memory.read")), SearXNGEnabled: true})
	if st := statusOf(t, h2, "websneak.wasm"); st.State != StateRefused || !strings.Contains(st.Error, `missing ["web.searxng"]`) {
		t.Errorf("short grant: %+v", st)
	}
}

func findModule(h *Host, name string) *module {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, m := range append(append([]*module{}, h.builtins...), h.third...) {
		if m.info.Name == name {
			return m
		}
	}
	return nil
}

func TestPolicyAdmission(t *testing.T) {
	mod := pack(t, guest(t, "echo"), manifest(abi.Version, []string{abi.CapMemoryRead}, "timeout_ms = 5000", tool{name: "timeline"}, tool{name: "echo"}))
	sum := digest(mod)

	// Not pinned.
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"timeline.wasm": mod}), Policy: policyFor(t)})
	st := statusOf(t, h, "timeline.wasm")
	// Refused before parsing: the entry to add is the audit's to print.
	want := "refused timeline.wasm: no policy entry pins sha256 " + sum + ", so it was not parsed; review it with `openhuman-core tools audit timeline.wasm`, which prints the entry to add to /home/u/.openhuman/policy.toml:\n[[module]]\nfile = \"timeline.wasm\"\nsha256 = \"" + sum + "\"\ngrant = []"
	if st.State != StateRefused || st.Error != want {
		t.Errorf("unpinned:\n got %q\nwant %q", st.Error, want)
	}

	// Pinned with a short grant.
	h, _ = newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"timeline.wasm": mod}), Policy: policyFor(t, entry("timeline.wasm", mod))})
	st = statusOf(t, h, "timeline.wasm")
	if st.State != StateRefused || !strings.Contains(st.Error, "grants [] but the module requests [\"memory.read\"]") ||
		!strings.Contains(st.Error, "[[module]]\nfile = \"timeline.wasm\"\nsha256 = \""+sum+"\"\ngrant = [\"memory.read\"]") {
		t.Errorf("short grant: %q", st.Error)
	}

	// Admitted: served after the builtins, limits from manifest and policy; a tool
	// name already served by a builtin refuses the module.
	builtinMod := pack(t, guest(t, "echo"), manifest(abi.Version, []string{abi.CapMemoryRead}, "", tool{name: "echo"}))
	dir := thirdParty(t, map[string][]byte{"timeline.wasm": mod})
	pol := policyFor(t, "[defaults]\ntimeout_ms = 8000\n", entry("timeline.wasm", mod, "memory.read"))
	h, _ = newHost(t, Options{ToolsDir: dir, Policy: pol, Builtins: []BuiltinModule{builtinModule("b.wasm", builtinMod)}})
	st = statusOf(t, h, "timeline.wasm")
	if st.State != StateRefused || !strings.Contains(st.Error, `tool name "echo" is already served by b.wasm`) {
		t.Errorf("collision: %+v", st)
	}
	modOK := pack(t, guest(t, "echo"), manifest(abi.Version, []string{abi.CapMemoryRead}, "timeout_ms = 5000", tool{name: "timeline"}))
	os.Remove(filepath.Join(dir, "timeline.wasm"))
	os.WriteFile(filepath.Join(dir, "timeline.wasm"), modOK, 0o644)
	pol.Modules = append(pol.Modules, policyFor(t, entry("timeline.wasm", modOK, "memory.read")).Modules...)
	changed := make(chan struct{}, 1)
	h.OnChange(func() { changed <- struct{}{} })
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Error("OnChange not called after the tool set changed")
	}
	tools := h.Tools()
	if len(tools) != 2 || tools[0].Name != "echo" || tools[1].Name != "timeline" || tools[1].Module.Origin != OriginDirectory || tools[1].Module.Limits.TimeoutMS != 5000 {
		t.Fatalf("tools after reload = %+v", tools)
	}
	// The echo guest answers unknown tool names with its own error: the call ran there.
	out, err := call(t, h, "timeline", `{}`)
	if err != nil || out.ToolError == nil || out.ToolError.Message != "unknown tool timeline" || out.ModuleSHA256 != digest(modOK) {
		t.Errorf("timeline = %+v, %v", out, err)
	}
	// Removing the file unloads it.
	os.Remove(filepath.Join(dir, "timeline.wasm"))
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tools := h.Tools(); len(tools) != 1 {
		t.Errorf("tools after removal = %+v", tools)
	}
	if _, err := call(t, h, "timeline", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("removed tool: %v", err)
	}
}

func TestSearxngDisabled(t *testing.T) {
	mod := pack(t, guest(t, "websneak"), manifest(abi.Version, []string{abi.CapWebSearXNG}, "", tool{name: "searxng_search"}))
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("searxng_search.wasm", mod)}})
	if st := statusOf(t, h, "searxng_search.wasm"); st.State != StateDisabled || len(h.Tools()) != 0 {
		t.Errorf("status = %+v", st)
	}
	if _, err := call(t, h, "searxng_search", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("disabled searxng: %v", err)
	}
	// Enabled but no client: the host function answers unavailable.
	h, _ = newHost(t, Options{Builtins: []BuiltinModule{builtinModule("searxng_search.wasm", mod)}, SearXNGEnabled: true})
	var r struct {
		Reply string `json:"reply"`
	}
	mustResult(t, h, "searxng_search", `{}`, &r)
	if !strings.Contains(r.Reply, `"code":"unavailable"`) || !strings.Contains(r.Reply, "SearXNG is not configured") {
		t.Errorf("reply = %s", r.Reply)
	}
}

// TestWASIBasicsGiveNothing runs a guest that stays within the WASI basics.
func TestWASIBasicsGiveNothing(t *testing.T) {
	t.Setenv("OPENHUMAN_SECRET", "hunter2")
	mod := pack(t, guest(t, "probe"), manifest(abi.Version, nil, "", tool{name: "probe"}))
	h, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("probe.wasm", mod)}})
	var r struct {
		Env     []string         `json:"env"`
		Args    []string         `json:"args"`
		Prestat map[string]int32 `json:"prestat"`
		Writes  map[string]int32 `json:"writes"`
		Now     int64            `json:"now_unix"`
		Random  []uint64         `json:"random"`
	}
	mustResult(t, h, "probe", `{}`, &r)
	if len(r.Env) != 0 || len(r.Args) != 0 {
		t.Errorf("guest sees env %v args %v", r.Env, r.Args)
	}
	const ebadf = 8
	for fd, errno := range r.Prestat {
		if errno != ebadf {
			t.Errorf("fd_prestat_get(%s) = %d, want EBADF: a directory is preopened", fd, errno)
		}
	}
	for fd, errno := range r.Writes {
		want := int32(ebadf)
		if fd == "1" || fd == "2" {
			want = 0
		}
		if errno != want {
			t.Errorf("fd_write(%s) = %d, want %d", fd, errno, want)
		}
	}
	if r.Now < 1700000000 {
		t.Errorf("guest clock is fake: %d", r.Now)
	}
	var r2 struct {
		Random []uint64 `json:"random"`
	}
	// A fresh instance must not repeat the random stream (wazero's default is a fixed seed).
	h2, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("probe.wasm", mod)}})
	mustResult(t, h2, "probe", `{}`, &r2)
	if len(r.Random) != 2 || r.Random[0] == r2.Random[0] {
		t.Errorf("random streams repeat across instances: %v %v", r.Random, r2.Random)
	}
}

// TestSneakyGuestUngated shows the second layer: even run without the static gate
// (so path_open and friends are linked), the sandbox's WASI configuration gives a
// guest no files, no environment and no network.
func TestSneakyGuestUngated(t *testing.T) {
	t.Setenv("HOME", "/root-secret-home")
	target := t.TempDir()
	t.Setenv("SNEAKY_TARGET", target)
	tmpMarker := "/tmp/sneaky-was-here"
	_, statErr := os.Stat(tmpMarker)
	preexisting := statErr == nil

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(mustCache(t)))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	cm, err := rt.CompileModule(ctx, guest(t, "sneaky"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := newWazeroInstance(ctx, rt, cm)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close(ctx)
	out, err := in.invoke(ctx, []byte(`{"tool":"sneaky","arguments":{}}`), MaxMessageBytes)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result struct {
			ReadBytes  int      `json:"read_bytes"`
			ReadErr    string   `json:"read_err"`
			WriteErr   string   `json:"write_err"`
			WriteTmp   string   `json:"write_tmp_err"`
			DirEntries int      `json:"dir_entries"`
			DirErr     string   `json:"dir_err"`
			Env        []string `json:"env"`
			Home       string   `json:"home"`
			DialErr    string   `json:"dial_err"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	r := resp.Result
	t.Logf("sneaky guest got: %+v", r)
	if r.ReadBytes != 0 || r.ReadErr == "" || r.WriteErr == "" || r.WriteTmp == "" || r.DirEntries != 0 || r.DirErr == "" {
		t.Errorf("guest reached the filesystem: %+v", r)
	}
	if len(r.Env) != 0 || r.Home != "" {
		t.Errorf("guest read the environment: %+v", r)
	}
	if r.DialErr == "" {
		t.Error("guest dialed 127.0.0.1:22")
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("guest created files on the host: %v", entries)
	}
	if _, err := os.Stat(tmpMarker); err == nil && !preexisting {
		t.Errorf("guest created %s", tmpMarker)
	}
}

func mustCache(t *testing.T) wazero.CompilationCache {
	c, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func TestExtismModule(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("secret"))
	}))
	defer srv.Close()

	mod := pack(t, guest(t, "extism_search"), manifest(abi.ExtismVersion, []string{abi.CapMemoryRead}, "timeout_ms = 10000",
		tool{name: "ext.search", export: "run"}, tool{name: "ext.http", export: "run"}))
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"ext.wasm": mod}), Policy: policyFor(t, entry("ext.wasm", mod, "memory.read"))})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sr abi.SearchResult
	out := mustResult(t, h, "ext.search", `{"query":"budget","k":3}`, &sr)
	if len(sr.Chunks) != 3 || out.Usage.HostCalls[abi.FnMemorySearch] != 1 {
		t.Errorf("ext.search = %+v usage %+v", sr, out.Usage)
	}
	args, _ := json.Marshal(map[string]string{"url": srv.URL + "/steal"})
	_, err := call(t, h, "ext.http", string(args))
	if err == nil || !strings.Contains(err.Error(), "is not allowed") {
		t.Errorf("http_request: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the guest reached the loopback server %d times", n)
	}
	// The module still works after the refused request.
	mustResult(t, h, "ext.search", `{"query":"budget","k":1}`, &sr)
	if len(sr.Chunks) != 1 {
		t.Errorf("after refusal: %+v", sr)
	}
	if st := statusOf(t, h, "ext.wasm"); st.Module.ABI != abi.ExtismVersion || st.State != StateReady {
		t.Errorf("status = %+v", st)
	}
}
