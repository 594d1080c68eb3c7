package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/runtime"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

// unsetEnv removes key from the environment for the test (restored after it).
func unsetEnv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// gcSettings reads GOGC's percentage and the memory limit in force.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// The start window turns the collector off under a memory limit, and gives the
// settings in force before it back when it ends.
func TestStartWindowHoldsTheCollector(t *testing.T) {
	unsetEnv(t, "GOGC")
	unsetEnv(t, "GOMEMLIMIT")
	defer debug.SetGCPercent(debug.SetGCPercent(73))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64 - 1))
	w := openStartWindow(time.Hour)
	if p, l := gcSettings(); p != -1 || l != startWindowMemory {
		t.Fatalf("in the window: GOGC %d, memory limit %d; want off (-1) and %d", p, l, startWindowMemory)
	}
	select {
	case <-w.done:
		t.Fatal("the window ended before close")
	default:
	}
	w.close()
	<-w.done
	if p, l := gcSettings(); p != 73 || l != math.MaxInt64-1 {
		t.Fatalf("after the window: GOGC %d, memory limit %d; want the settings from before (73, %d)", p, l, int64(math.MaxInt64-1))
	}
	w.close() // a second close (the deferred one in serveMCP) changes nothing
	if p, _ := gcSettings(); p != 73 {
		t.Fatalf("a second close changed GOGC to %d", p)
	}
}

// GOGC or GOMEMLIMIT in the environment: the operator's settings stand.
func TestStartWindowLeavesOperatorSettings(t *testing.T) {
	for _, key := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(key, func(t *testing.T) {
			unsetEnv(t, "GOGC")
			unsetEnv(t, "GOMEMLIMIT")
			t.Setenv(key, "200")
			defer debug.SetGCPercent(debug.SetGCPercent(81))
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64 - 2))
			w := openStartWindow(time.Hour)
			if p, l := gcSettings(); p != 81 || l != math.MaxInt64-2 {
				t.Fatalf("with %s set the window changed GOGC to %d and the limit to %d", key, p, l)
			}
			w.close()
			<-w.done
		})
	}
}

// The window ends on its own after its longest time.
func TestStartWindowEndsByItself(t *testing.T) {
	unsetEnv(t, "GOGC")
	unsetEnv(t, "GOMEMLIMIT")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	w := openStartWindow(10 * time.Millisecond)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the window did not end after its longest time")
	}
	if p, _ := gcSettings(); p != 100 {
		t.Fatalf("GOGC %d after the window ended by itself, want 100", p)
	}
}

// The first call the host answers ends the window; nothing before it does.
func TestStartWindowEndsAfterFirstCall(t *testing.T) {
	unsetEnv(t, "GOGC")
	unsetEnv(t, "GOMEMLIMIT")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	store, err := memtree.OpenReadOnly(filepath.Join(t.TempDir(), "chunks.db")) // reads as empty
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mods, err := toolswasm.Modules()
	if err != nil {
		t.Fatal(err)
	}
	var builtins []runtime.BuiltinModule
	for _, m := range mods {
		builtins = append(builtins, runtime.BuiltinModule{Name: m.Name + ".wasm", SHA256: m.SHA256, Wasm: m.Wasm, SchemasChecked: true})
	}
	w := openStartWindow(time.Hour)
	defer w.close()
	host, err := runtime.New(context.Background(), runtime.Options{Reader: memory.Default(store), Builtins: builtins, CacheDir: "-", AfterStart: w.done})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	if err := host.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
		t.Fatal("the window ended before any call")
	default:
	}
	d := &firstCallDispatcher{Host: host, window: w}
	out, err := d.Call(context.Background(), runtime.Call{Tool: "memory.search", Arguments: []byte(`{"query":"x"}`), Client: "mcp:test"})
	if err != nil || out.ToolError != nil || !strings.Contains(string(out.Result), "hint") {
		t.Fatalf("first call: %+v, %v", out, err)
	}
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the window did not end after the first call")
	}
}

// The store is opened beside the rest of the start, but a store that cannot be
// read still stops `mcp` before it serves anything, with the same error.
func TestMCPUnreadableStoreStopsTheStart(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("OPENHUMAN_HOME", t.TempDir())
	t.Setenv("OPENHUMAN_WORKSPACE", ws)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if err := os.MkdirAll(filepath.Join(ws, "memory_tree"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "memory_tree", "chunks.db"), []byte(strings.Repeat("not a database ", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	err := serveMCP(context.Background(), strings.NewReader(mcpSmoke), &stdout, &stderr, false)
	if err == nil || !strings.Contains(err.Error(), "open the memory tree read-only at") || stdout.Len() != 0 {
		t.Fatalf("mcp on an unreadable store: err %v, stdout %q", err, stdout.String())
	}
}
