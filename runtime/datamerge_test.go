package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// mergeGap is wasmbin.MergeGap (the merge itself lives there since tools-wasm/gen
// packs the first-party modules already merged).
const mergeGap = wasmbin.MergeGap

// dataSeg is one active data segment: its offset and bytes.
type dataSeg struct {
	off  uint32
	init []byte
}

func appendSLEB32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// initialMemory instantiates wasm without running any start function and returns
// a copy of its linear memory: what the data segments wrote.
func initialMemory(t *testing.T, wasm []byte) []byte {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter()) // only the data is compared
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("compiling: %v", err)
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatalf("instantiating: %v", err)
	}
	b, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		t.Fatal("reading memory")
	}
	return bytes.Clone(b)
}

// dataModule builds a module with one memory of one page and the given active
// segments (offset, bytes), plus extra raw sections appended after the data section.
func dataModule(segs []dataSeg, extra ...[]byte) []byte {
	w := []byte("\x00asm\x01\x00\x00\x00")
	w = append(w, 5, 3, 1, 0, 1) // memory section: one memory, min 1 page
	for _, e := range extra {
		w = append(w, e...)
	}
	var sec []byte
	sec = binary.AppendUvarint(sec, uint64(len(segs)))
	for _, s := range segs {
		sec = append(sec, 0, 0x41)
		sec = appendSLEB32(sec, int32(s.off))
		sec = append(sec, 0x0b)
		sec = binary.AppendUvarint(sec, uint64(len(s.init)))
		sec = append(sec, s.init...)
	}
	w = append(w, 11)
	w = binary.AppendUvarint(w, uint64(len(sec)))
	return append(w, sec...)
}

func countDataSegments(t *testing.T, wasm []byte) int {
	t.Helper()
	for i := 8; i < len(wasm); {
		id := wasm[i]
		n, k := binary.Uvarint(wasm[i+1:])
		if id == 11 {
			c, _ := binary.Uvarint(wasm[i+1+k:])
			return int(c)
		}
		i += 1 + k + int(n)
	}
	t.Fatal("no data section")
	return 0
}

func TestMergeDataSegmentsSameMemory(t *testing.T) {
	segs := []dataSeg{
		{off: 300, init: []byte("later")},           // out of order: sorted before merging
		{off: 10, init: []byte("abc")},              // gap 5 to the next: merged
		{off: 18, init: []byte("defg")},             //
		{off: 18 + 4 + mergeGap, init: []byte("h")}, // gap exactly mergeGap: merged
		{off: 1000, init: []byte("far")},            // gap > mergeGap: kept apart
		{off: 5000, init: nil},                      // empty segment
	}
	orig := dataModule(segs)
	merged := mergeDataSegments(orig)
	if got := countDataSegments(t, merged); got != 4 {
		t.Fatalf("merged module has %d data segments, want 4 (10..h, 300, 1000, 5000)", got)
	}
	if !bytes.Equal(initialMemory(t, orig), initialMemory(t, merged)) {
		t.Fatal("merged module's initial memory differs from the original's")
	}
}

func TestMergeDataSegmentsLeavesUnprovableModules(t *testing.T) {
	overlap := dataModule([]dataSeg{{off: 10, init: []byte("abcd")}, {off: 12, init: []byte("XY")}})
	if got := mergeDataSegments(overlap); !bytes.Equal(got, overlap) {
		t.Error("overlapping segments were rewritten; their write order matters")
	}
	// A data count section (id 12, count 2) means memory.init/data.drop may name segments.
	counted := dataModule([]dataSeg{{off: 10, init: []byte("a")}, {off: 12, init: []byte("b")}}, []byte{12, 1, 2})
	if got := mergeDataSegments(counted); !bytes.Equal(got, counted) {
		t.Error("a module with a data count section was rewritten")
	}
	for _, bad := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x01\x00\x00\x00\x0b\xff"), append(dataModule([]dataSeg{{off: 1, init: []byte("a")}, {off: 3, init: []byte("b")}}), 0xff)} {
		if got := mergeDataSegments(bad); !bytes.Equal(got, bad) {
			t.Errorf("malformed module %x was rewritten", bad)
		}
	}
}

// TestMergeDataSegmentsFirstParty checks every first-party module: far fewer
// segments, and the same linear memory after instantiation as the original.
func TestMergeDataSegmentsFirstParty(t *testing.T) {
	ctx := context.Background()
	// The first-party modules are packed already merged (tools-wasm/gen): the
	// runtime's pass leaves them as they are.
	for _, b := range firstPartyBuiltins(t) {
		if n := countDataSegments(t, b.Wasm); n > 100 {
			t.Errorf("%s is packed with %d data segments; go generate ./tools-wasm/... merges them", b.Name, n)
		}
		if merged := mergeDataSegments(b.Wasm); !bytes.Equal(merged, b.Wasm) {
			t.Errorf("%s: merging the packed module changed it", b.Name)
		}
	}
	// A Go guest as the linker writes it.
	for _, b := range []BuiltinModule{{Name: "echo.wasm", Wasm: guest(t, "echo")}} {
		merged := mergeDataSegments(b.Wasm)
		before, after := countDataSegments(t, b.Wasm), countDataSegments(t, merged)
		if after*100 > before {
			t.Errorf("%s: %d data segments merged into %d, want under 1%%", b.Name, before, after)
		}
		mem := func(wasm []byte) []byte {
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter()) // only the data is compared
			defer rt.Close(ctx)
			h := &Host{opt: Options{Reader: newFakeReader()}}
			if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
				t.Fatal(err)
			}
			if err := h.newHostFuncs(b.Name).instantiateHostModule(ctx, rt, []string{abi.CapMemoryRead, abi.CapWebSearXNG}); err != nil {
				t.Fatal(err)
			}
			mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions())
			if err != nil {
				t.Fatalf("%s: %v", b.Name, err)
			}
			m, _ := mod.Memory().Read(0, mod.Memory().Size())
			return bytes.Clone(m)
		}
		if !bytes.Equal(mem(b.Wasm), mem(merged)) {
			t.Errorf("%s: initial memory differs after merging data segments", b.Name)
		}
		t.Logf("%s: %d → %d data segments, %d → %d bytes", b.Name, before, after, len(b.Wasm), len(merged))
	}
}
