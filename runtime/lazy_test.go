package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// lazyBuiltin describes wasm as a lazily loaded first-party module, counting loads.
func lazyBuiltin(t *testing.T, name string, wasm []byte, loads *atomic.Int32, loadErr error) BuiltinModule {
	t.Helper()
	man, found, err := wasmbin.CustomSection(wasm, policy.ManifestSection)
	if err != nil || !found {
		t.Fatalf("no manifest section: %v", err)
	}
	return BuiltinModule{Name: name, SHA256: digest(wasm), Manifest: man, Load: func() ([]byte, error) {
		loads.Add(1)
		return wasm, loadErr
	}}
}

// A lazily loaded builtin lists its tools from the manifest without loading its
// bytes, loads them once to compile, and serves calls.
func TestLazyBuiltinListsFromManifestAndLoadsOnce(t *testing.T) {
	var loads atomic.Int32
	h, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: "-",
		Builtins: []BuiltinModule{lazyBuiltin(t, "echo.wasm", echoModule(t, ""), &loads, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if n := len(h.Tools()); n != len(echoTools) {
		t.Fatalf("listed %d tools, want %d", n, len(echoTools))
	}
	mustResult(t, h, "echo", `{"x":1}`, nil)
	if n := loads.Load(); n != 1 {
		t.Fatalf("Load called %d times, want once", n)
	}
}

// A disabled lazily loaded builtin (SearXNG off) is never unpacked.
func TestLazyDisabledBuiltinIsNeverLoaded(t *testing.T) {
	var loads atomic.Int32
	wasm := pack(t, guest(t, "echo"), manifest(abi.Version, []string{abi.CapWebSearXNG}, "", tool{name: "web"}))
	h, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: "-",
		Builtins: []BuiltinModule{lazyBuiltin(t, "web.wasm", wasm, &loads, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Close(context.Background())
	if n := loads.Load(); n != 0 || len(h.Status()) != 1 || h.Status()[0].State != StateDisabled {
		t.Fatalf("loads = %d, status %+v; want a disabled module never loaded", n, h.Status())
	}
}

// A lazily loaded builtin whose bytes cannot be had, or do not carry the manifest
// it was listed with, is refused with the reason, and its calls fail.
func TestLazyBuiltinLoadFailures(t *testing.T) {
	other := pack(t, guest(t, "echo"), manifest(abi.Version, []string{abi.CapMemoryRead}, "", tool{name: "echo"}))
	cases := map[string]struct {
		mod  func(*atomic.Int32) BuiltinModule
		want string
	}{
		"load error": {func(n *atomic.Int32) BuiltinModule {
			return lazyBuiltin(t, "echo.wasm", echoModule(t, ""), n, errors.New("module is corrupt"))
		}, "module is corrupt"},
		"manifest differs": {func(n *atomic.Int32) BuiltinModule {
			b := lazyBuiltin(t, "echo.wasm", echoModule(t, ""), n, nil)
			b.Load = func() ([]byte, error) { n.Add(1); return other, nil }
			return b
		}, "differs from the manifest it was listed with"},
		// The schemas are compiled when the module is unpacked, not at New: a
		// schema that does not compile still refuses the module, before its bytes
		// are loaded.
		"schema does not compile": {func(n *atomic.Int32) BuiltinModule {
			b := lazyBuiltin(t, "echo.wasm", echoModule(t, ""), n, nil)
			b.Manifest = bytes.Replace(b.Manifest, []byte(`output_schema = '''{"type":"object"}`), []byte(`output_schema = '''{"type":"object","$ref":"#/$defs/nope"}`), 1)
			return b
		}, "output_schema: does not compile"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var loads atomic.Int32
			h, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: "-", Builtins: []BuiltinModule{c.mod(&loads)}})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(context.Background())
			_, err = call(t, h, "echo", `{}`)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("call = %v, want an error saying %q", err, c.want)
			}
			if st := h.Status()[0]; st.State != StateRefused || !strings.Contains(st.Error, c.want) {
				t.Fatalf("status %s %q, want refused saying %q", st.State, st.Error, c.want)
			}
			if n := loads.Load(); name == "schema does not compile" && n != 0 {
				t.Fatalf("loads = %d; a module whose schemas do not compile must not be loaded", n)
			}
		})
	}
}

// With Hold set, nothing is unpacked or compiled until it is closed; the tools are
// listed meanwhile, and a host closed while holding closes without compiling.
func TestHoldDelaysCompiling(t *testing.T) {
	var loads atomic.Int32
	hold := make(chan struct{})
	h, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: t.TempDir(), Hold: hold,
		Builtins: []BuiltinModule{lazyBuiltin(t, "echo.wasm", echoModule(t, ""), &loads, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if n := len(h.Tools()); n != len(echoTools) {
		t.Fatalf("listed %d tools while holding, want %d", n, len(echoTools))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.WaitReady(ctx); err == nil {
		t.Fatal("modules became ready while the host was told to hold")
	}
	if n := loads.Load(); n != 0 {
		t.Fatalf("Load called %d times while holding, want 0", n)
	}
	close(hold)
	mustResult(t, h, "echo", `{"x":1}`, nil)
	if n := loads.Load(); n != 1 {
		t.Fatalf("Load called %d times after the hold, want once", n)
	}

	held, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: "-", Hold: make(chan struct{}),
		Builtins: []BuiltinModule{lazyBuiltin(t, "echo.wasm", echoModule(t, ""), &loads, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Close(context.Background()); err != nil {
		t.Fatalf("closing a host still holding: %v", err)
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("closing a host still holding loaded its module (%d loads in all, want 1): it must close without compiling", n)
	}
}

// A lazily loaded builtin is unpacked once per cache: the first start keeps the
// decompressed copy in the cache directory and the next reads it instead of
// calling Load. A copy that is corrupt (its sha256 is not the pinned one) is
// ignored and named at debug level, the embedded module is unpacked instead, the
// start does not fail, and the copy is rewritten.
func TestLazyBuiltinUnpackedCopyInCache(t *testing.T) {
	settleStampsNow(t)
	dir := filepath.Join(t.TempDir(), "cache")
	wasm := echoModule(t, "")
	start := func(want int32) string {
		t.Helper()
		var loads atomic.Int32
		h, logs := newHost(t, Options{CacheDir: dir, Engine: EngineCompiled,
			Builtins: []BuiltinModule{lazyBuiltin(t, "echo.wasm", wasm, &loads, nil)}})
		mustResult(t, h, "echo", `{"x":1}`, nil)
		h.Close(context.Background())
		if n := loads.Load(); n != want {
			t.Fatalf("Load called %d times, want %d\n%s", n, want, logs.String())
		}
		return logs.String()
	}
	start(1)
	copyPath := filepath.Join(dir, unpackedPrefix+"echo.wasm-"+digest(wasm))
	kept, err := os.ReadFile(copyPath)
	if err != nil || !bytes.Equal(kept, wasm) {
		t.Fatalf("the first start kept no exact copy at %s: %v", copyPath, err)
	}
	auth, err := openCacheAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := auth.verify(); err != nil || removed != 0 {
		t.Fatalf("the cache's MAC check removed %d entries (%v); the copy is not an entry", removed, err)
	}
	if log := start(0); strings.Contains(log, "ignoring the cached copy") {
		t.Fatalf("a good copy was ignored:\n%s", log)
	}
	// Its sha256 checked, the copy is stamped, and read by the next start unhashed.
	if _, err := os.Stat(copyPath + cacheStampExt); err != nil {
		t.Fatalf("the checked copy was not stamped: %v", err)
	}
	if log := start(0); strings.Contains(log, "ignoring the cached copy") {
		t.Fatalf("a good stamped copy was ignored:\n%s", log)
	}

	// Changed in place (same size and modification time): the stamp no longer
	// matches, the copy is hashed and refused.
	fi, err := os.Stat(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(wasm)
	corrupt[len(corrupt)/2] ^= 0xff
	if err := os.WriteFile(copyPath, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(copyPath, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	log := start(1)
	var named bool
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"level":"DEBUG"`) && strings.Contains(l, "ignoring the cached copy") && strings.Contains(l, "echo.wasm") && strings.Contains(l, "is not the pinned one") {
			named = true
		}
	}
	if !named || len(warnings(log)) != 0 {
		t.Fatalf("a corrupt copy was not named at debug level (or warned about):\n%s", log)
	}
	if kept, err := os.ReadFile(copyPath); err != nil || !bytes.Equal(kept, wasm) {
		t.Fatalf("the corrupt copy was not replaced by the unpacked module: %v", err)
	}
	// A copy of another build of the module is removed when a new one is kept.
	stale := filepath.Join(dir, unpackedPrefix+"echo.wasm-"+strings.Repeat("0", 64))
	if err := os.WriteFile(stale, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(copyPath); err != nil {
		t.Fatal(err)
	}
	start(1)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the copy of another build is still there: %v", err)
	}
}

// The static gate runs once per binary, digest and grant: a later start with the
// same grant skips it (its MAC'd record says it passed), one with another grant,
// or with a record that is not the MAC this binary and grant give, runs it again.
func TestLazyBuiltinGateVerdictIsRecorded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	wasm := echoModule(t, "")
	start := func(pol *policy.Policy, wantRuns int32) {
		t.Helper()
		var loads atomic.Int32
		before := gateRuns.Load()
		h, logs := newHost(t, Options{CacheDir: dir, Engine: EngineCompiled, Policy: pol,
			Builtins: []BuiltinModule{lazyBuiltin(t, "echo.wasm", wasm, &loads, nil)}})
		mustResult(t, h, "echo", `{"x":1}`, nil)
		h.Close(context.Background())
		if n := gateRuns.Load() - before; n != wantRuns {
			t.Fatalf("the static gate ran %d times, want %d\n%s", n, wantRuns, logs.String())
		}
	}
	start(nil, 1)
	record := filepath.Join(dir, gatePrefix+digest(wasm))
	first, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("no record of the gate's verdict: %v", err)
	}
	start(nil, 0)
	other := policy.Default("")
	other.Defaults.TimeoutMS++
	start(other, 1) // another grant: checked again, and recorded for it
	if again, _ := os.ReadFile(record); bytes.Equal(again, first) {
		t.Fatal("the record was not rewritten for the other grant")
	}
	start(other, 0)
	if err := os.WriteFile(record, make([]byte, len(first)), 0o600); err != nil {
		t.Fatal(err)
	}
	start(other, 1) // a forged record is not trusted
}
