package runtime

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// startWithCache starts a host serving the echo guest with the given CacheDir
// and checks that it serves a call; it returns the host and its log.
func startWithCache(t *testing.T, dir string) (*Host, string) {
	t.Helper()
	logs := &logBuffer{}
	// Compiled: under the default engine a builtin runs on the interpreter and
	// never opens the cache (TestFirstPartyModulesNeverOpenTheCache).
	h, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: dir, Engine: EngineCompiled,
		Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))},
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatalf("the host did not start with cache dir %q: %v", dir, err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	out, err := call(t, h, "echo", `{"x":1}`)
	if err != nil || out.ToolError != nil {
		t.Fatalf("echo call: %v %+v\n%s", err, out, logs.String())
	}
	// A module not yet in the cache is served interpreted while it compiles
	// into the cache (tier.go): let that finish.
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h, logs.String()
}

func warnings(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"level":"WARN"`) {
			out = append(out, l)
		}
	}
	return out
}

// An unusable cache never stops the host: it compiles in memory and warns once.
func TestUnusableCacheFallsBackToMemory(t *testing.T) {
	readOnly := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	worldWritable := filepath.Join(t.TempDir(), "ww")
	if err := os.Mkdir(worldWritable, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(worldWritable, 0o777); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ dir, why string }{
		"read-only":         {readOnly, "is read-only"},
		"writable-by-other": {worldWritable, "may be written by other users"},
	}
	if os.Getuid() == 0 {
		foreign := filepath.Join(t.TempDir(), "foreign")
		if err := os.Mkdir(foreign, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["foreign-owner"] = struct{ dir, why string }{foreign, "is owned by uid 65534"}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h, log := startWithCache(t, c.dir)
			w := warnings(log)
			if h.cache != nil || len(w) != 1 || !strings.Contains(w[0], "compiling tool modules in memory") || !strings.Contains(w[0], c.why) {
				t.Errorf("cache used=%v, warnings %q; want one warning saying %q", h.cache != nil, w, c.why)
			}
			if entries, _ := os.ReadDir(c.dir); len(entries) != 0 {
				t.Errorf("something was written into the refused cache dir: %v", entries)
			}
		})
	}
	t.Run("no-HOME", func(t *testing.T) {
		t.Setenv("HOME", "")
		t.Setenv("XDG_CACHE_HOME", "")
		h, log := startWithCache(t, "")
		w := warnings(log)
		if h.cache != nil || len(w) != 1 || !strings.Contains(w[0], "set XDG_CACHE_HOME or HOME") {
			t.Errorf("cache used=%v, warnings %q; want one warning naming HOME", h.cache != nil, w)
		}
	})
	t.Run("usable", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ok")
		h, log := startWithCache(t, dir)
		if h.cache == nil || len(warnings(log)) != 0 {
			t.Errorf("a private cache dir was not used: %s", log)
		}
	})
}

// Under the default engine the first-party modules run on the interpreter: a
// host serving only them never opens (or creates) the compilation cache; a
// large guest given as a builtin and a third-party module are compiled into it.
func TestFirstPartyModulesNeverOpenTheCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	h, _ := newHost(t, Options{Builtins: firstPartyBuiltins(t), CacheDir: dir, Engine: EngineDefault})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, err := call(t, h, "memory.search", `{"query":"budget"}`); err != nil || out.ToolError != nil {
		t.Fatalf("memory.search call: %v %+v", err, out)
	}
	for _, m := range h.builtins {
		if st, _ := m.currentState(); st != StateDisabled && !m.interpreted() {
			t.Errorf("first-party module %s is not interpreted under the default engine", m.info.Name)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) || h.cache != nil {
		t.Fatalf("the compilation cache was opened for a first-party module: %v", err)
	}

	// The Go echo guest has megabytes of code: compiled, though a builtin.
	big, _ := newHost(t, Options{Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}, CacheDir: "-", Engine: EngineDefault})
	if big.builtins[0].interpreted() {
		t.Error("a builtin with megabytes of code runs on the interpreter")
	}

	third := pack(t, wasmgen.Uses(""), manifest(abi.Version, nil, "memory_mib = 4", tool{name: "t"}))
	h2, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"t.wasm": third}), Policy: policyFor(t, entry("t.wasm", third)),
		CacheDir: dir, Engine: EngineDefault})
	if err := h2.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h2.third[0].interpreted() || h2.cache == nil {
		t.Fatalf("a third-party module was not compiled with the cache (interpreted %v)", h2.third[0].interpreted())
	}
	h2.Close(context.Background())
	cacheEntries(t, dir) // fails without an entry
}

// cacheEntries lists the compiled-module entries of a cache dir (not the key or MACs).
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	a := &cacheAuth{dir: dir}
	var out []string
	if err := a.entries(func(p, _ string) error { out = append(out, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no entries in the cache %s", dir)
	}
	return out
}

// An entry whose contents were replaced (forged or corrupt) fails its MAC and is
// deleted before wazero reads it; the module is compiled again and re-signed.
func TestForgedCacheEntryIsDeleted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	h, _ := startWithCache(t, dir)
	h.Close(context.Background())
	entries := cacheEntries(t, dir)
	for _, p := range entries {
		if _, err := os.Stat(p + cacheMACExt); err != nil {
			t.Fatalf("entry %s was not signed: %v", p, err)
		}
		if err := os.WriteFile(p, []byte("forged native code"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, log := startWithCache(t, dir) // fails the test if the echo call fails
	if w := warnings(log); len(w) != 1 || !strings.Contains(w[0], "deleted entries without a valid MAC") {
		t.Errorf("want one warning about deleted entries, got %q", w)
	}
	for _, p := range cacheEntries(t, dir) {
		data, _ := os.ReadFile(p)
		if string(data) == "forged native code" {
			t.Errorf("the forged entry %s is still in the cache", p)
		}
	}
}

// An entry wazero cannot use although its MAC is valid does not leave the module
// failed: it is compiled again in memory, with a warning.
func TestUnusableCacheEntryIsRecompiled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	h, _ := startWithCache(t, dir)
	h.Close(context.Background())
	for _, p := range cacheEntries(t, dir) {
		if err := os.WriteFile(p, []byte("not a compiled module"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(p + cacheMACExt)
	}
	a, err := openCacheAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.sign(); err != nil {
		t.Fatal(err)
	}
	_, log := startWithCache(t, dir)
	if w := warnings(log); len(w) != 1 || !strings.Contains(w[0], "compiling in memory") {
		t.Errorf("want one warning about compiling in memory, got %q", w)
	}
}

// An entry's stamp spares a later start reading it only while the entry is the
// file that was checked: contents changed in place (same size, modification time
// set back) change its inode change time, fail the stamp, are read, fail the MAC
// and are deleted; a stamp that is not the MAC of the entry's metadata is
// ignored (the entry is read, checked, and stamped again).
func TestCacheStampTracksTheEntry(t *testing.T) {
	settleStampsNow(t)
	dir := filepath.Join(t.TempDir(), "cache")
	h, _ := startWithCache(t, dir)
	h.Close(context.Background())
	a, err := openCacheAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries := cacheEntries(t, dir)
	stamps := map[string][]byte{}
	for _, p := range entries {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		stamp, err := os.ReadFile(p + cacheStampExt)
		if err != nil || !bytes.Equal(stamp, a.stampOf(rel, fi)) {
			t.Fatalf("entry %s has no valid stamp after its compile signed it: %v", p, err)
		}
		stamps[p] = stamp
		// A forged stamp is ignored: the entry is read, passes its MAC and is stamped again.
		if err := os.WriteFile(p+cacheStampExt, make([]byte, len(stamp)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if removed, err := a.verify(); err != nil || removed != 0 {
		t.Fatalf("verify removed %d good entries: %v", removed, err)
	}
	for _, p := range entries {
		if stamp, _ := os.ReadFile(p + cacheStampExt); !bytes.Equal(stamp, stamps[p]) {
			t.Fatalf("entry %s was not stamped again after its check", p)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	if removed, err := a.verify(); err != nil || removed != len(entries) {
		t.Fatalf("verify removed %d of %d entries changed in place (%v)", removed, len(entries), err)
	}
	for _, p := range entries {
		for _, f := range []string{p, p + cacheMACExt, p + cacheStampExt} {
			if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is still there: %v", f, err)
			}
		}
	}
}

// settleStampsNow lets entries changed a moment ago be stamped, for the tests
// that check stamps on files they have just written.
func settleStampsNow(t *testing.T) {
	old := stampSettle
	stampSettle = 0
	t.Cleanup(func() { stampSettle = old })
}

// An entry changed less than stampSettle ago gets no stamp: a write in the same
// tick of the filesystem's coarse clock as the check could leave its change time
// unchanged, so it is read and checked again until it has settled.
func TestRecentlyChangedEntryIsNotStamped(t *testing.T) {
	dir := t.TempDir()
	a, err := openCacheAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "entry")
	if err := os.WriteFile(p, []byte("compiled code"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if stamp := a.stampOf("entry", fi); stamp != nil {
		t.Fatalf("an entry written just now was stamped (%x); it must be read until it has settled", stamp)
	}
	settleStampsNow(t)
	if a.stampOf("entry", fi) == nil {
		t.Skip("this platform gives no change time: entries are never stamped")
	}
}
