package runtime

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

// withBadSchema returns wasm with its manifest's first output schema replaced by
// one that does not compile (a $ref to nothing).
func withBadSchema(t *testing.T, wasm []byte) []byte {
	t.Helper()
	man, found, err := wasmbin.CustomSection(wasm, policy.ManifestSection)
	if err != nil || !found {
		t.Fatalf("no manifest section: %v", err)
	}
	bad := bytes.Replace(man, []byte(`output_schema = '''{"type":"object"}`), []byte(`output_schema = '''{"type":"object","$ref":"#/$defs/nope"}`), 1)
	if bytes.Equal(bad, man) {
		t.Fatal("the test manifest has no output_schema to break")
	}
	out, err := wasmbin.SetCustomSection(wasm, policy.ManifestSection, bad)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A builtin's schemas are compiled by the compile worker, not in New: one that does
// not compile is listed, then refused in ParseManifest's words before its code is
// compiled or called — unless the build that pinned its digest says it compiled
// them (SchemasChecked), which the host then trusts.
func TestBuiltinSchemasChecked(t *testing.T) {
	wasm := withBadSchema(t, echoModule(t, ""))
	const want = "output_schema: does not compile"
	for _, checked := range []bool{false, true} {
		h, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: "-",
			Builtins: []BuiltinModule{{Name: "echo.wasm", SHA256: digest(wasm), Wasm: wasm, SchemasChecked: checked}}})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(h.Tools()); n != len(echoTools) {
			t.Fatalf("checked=%v: listed %d tools at New, want %d", checked, n, len(echoTools))
		}
		_, err = call(t, h, "echo", `{}`)
		st := h.Status()[0]
		if checked {
			if err != nil || st.State != StateReady {
				t.Fatalf("SchemasChecked: call = %v, state %s %q; the build's check must be trusted", err, st.State, st.Error)
			}
		} else if err == nil || !strings.Contains(err.Error(), want) || st.State != StateRefused || !strings.Contains(st.Error, want) {
			t.Fatalf("call = %v, status %s %q; want refused saying %q", err, st.State, st.Error, want)
		}
		h.Close(context.Background())
	}
}

// With Hold set, nothing is compiled until it is closed; the tools are listed
// meanwhile, and a host closed while holding closes without compiling.
func TestHoldDelaysCompiling(t *testing.T) {
	hold := make(chan struct{})
	h, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: t.TempDir(), Hold: hold,
		Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}})
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
	if st := h.Status()[0]; st.State != StateCompiling {
		t.Fatalf("state %s while holding, want %s", st.State, StateCompiling)
	}
	close(hold)
	mustResult(t, h, "echo", `{"x":1}`, nil)

	held, err := New(context.Background(), Options{Reader: newFakeReader(), CacheDir: "-", Hold: make(chan struct{}),
		Builtins: []BuiltinModule{builtinModule("echo.wasm", echoModule(t, ""))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Close(context.Background()); err != nil {
		t.Fatalf("closing a host still holding: %v", err)
	}
	if st := held.Status()[0]; st.State == StateReady {
		t.Fatal("a host closed while holding compiled its module")
	}
}
