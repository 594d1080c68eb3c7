package sdk

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestCHeader compiles a C guest against openhuman.h and runs it: its imports are
// exactly the host functions it calls (no WASI), and a call round-trips through
// memory_search with the host allocating the reply through oh_alloc.
func TestCHeader(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err == nil {
		_, err = exec.LookPath("wasm-ld")
	}
	if err != nil {
		t.Skipf("the C header check needs clang and wasm-ld (apt-get install -y clang lld): %v", err)
	}
	out := filepath.Join(t.TempDir(), "echo.wasm")
	cmd := exec.Command(clang, "--target=wasm32-wasi", "-nostdlib", "-O2", "-mbulk-memory", "-Wall", "-Werror",
		"-Wl,--no-entry", "-Wl,--export-dynamic", "-Wl,--strip-all", "-o", out, "testdata/echo_search.c")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, msg)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := wasmbin.Parse(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, imp := range mod.Imports {
		imports = append(imports, imp.String())
	}
	slices.Sort(imports)
	if want := []string{"openhuman.log", "openhuman.memory_search"}; !slices.Equal(imports, want) {
		t.Fatalf("imports = %v, want %v", imports, want)
	}
	for _, e := range []string{abi.ExportAlloc, abi.ExportCall, abi.ExportMemory} {
		if _, ok := mod.Export(e); !ok {
			t.Fatalf("the C guest does not export %s", e)
		}
	}

	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	var sawReq []byte
	var logged string
	reply := []byte(`{"ok":{"chunks":[{"id":"0123456789abcdef0123456789abcdef","seq":0}]}}`)
	_, err = r.NewHostModuleBuilder(abi.HostModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
		req, _ := m.Memory().Read(uint32(stack[0]), uint32(stack[1]))
		sawReq = append([]byte(nil), req...)
		res, err := m.ExportedFunction(abi.ExportAlloc).Call(ctx, uint64(len(reply)))
		if err != nil || !m.Memory().Write(uint32(res[0]), reply) {
			panic("oh_alloc failed")
		}
		stack[0] = res[0]<<32 | uint64(len(reply))
	}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).Export(abi.FnMemorySearch).
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, level int32, ptr, n uint32) {
		b, _ := m.Memory().Read(ptr, n)
		logged = string(b)
	}).Export(abi.FnLog).
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	call := func() []byte {
		req := []byte(`{"tool":"echo","arguments":{}}`)
		res, err := g.ExportedFunction(abi.ExportAlloc).Call(ctx, uint64(len(req)))
		if err != nil || !g.Memory().Write(uint32(res[0]), req) {
			t.Fatalf("writing the request: %v", err)
		}
		res, err = g.ExportedFunction(abi.ExportCall).Call(ctx, res[0], uint64(len(req)))
		if err != nil {
			t.Fatal(err)
		}
		out, ok := g.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		if !ok {
			t.Fatal("oh_call returned an out-of-range result")
		}
		return out
	}
	if got := call(); !bytes.Equal(got, []byte(`{"result":{"chunks":[{"id":"0123456789abcdef0123456789abcdef","seq":0}]}}`)) {
		t.Fatalf("result = %s", got)
	}
	if string(sawReq) != `{"query":"phoenix","k":3}` || logged != "echo_search: calling memory_search" {
		t.Fatalf("host saw request %q and log %q", sawReq, logged)
	}
	reply = []byte(`{"error":{"code":"unavailable","message":"store locked"}}`)
	if got := call(); !bytes.Equal(got, []byte(`{"error":{"code":"unavailable","message":"store locked"}}`)) {
		t.Fatalf("error result = %s", got)
	}
}
