package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// shapeLimits are the static limits of the shapes of wasmgen.Entries.
var shapeLimits = map[wasmgen.Shape]int{
	wasmgen.ShapeGlobals: policy.MaxGlobals,
	wasmgen.ShapeData:    policy.MaxDataSegments,
	wasmgen.ShapeElems:   policy.MaxElementSegments,
	wasmgen.ShapeTypes:   policy.MaxTypes,
}

// instanceCost loads wasm (packed, pinned, memory_mib = 4) and returns the Go
// heap one more instance of it holds, the heap after compiling it, and the
// host's verdict on it.
func instanceCost(t *testing.T, name string, wasm []byte) (perInstance, compiled int64, st ModuleStatus) {
	t.Helper()
	before := heapInUse()
	h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{name: wasm}),
		Policy: policyFor(t, entry(name, wasm)), CacheDir: "-"})
	_ = h.WaitReady(context.Background())
	if st = statusOf(t, h, name); st.State != StateReady {
		return 0, 0, st
	}
	m := findModule(h, name)
	h.pool.drain(m, false)
	base := heapInUse()
	compiled = int64(base) - int64(before)
	in, err := m.newInstance(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	perInstance = int64(heapInUse()) - int64(base)
	in.close(context.Background())
	h.Close(context.Background())
	return perInstance, compiled, st
}

// TestEntryShapesBounded (finding 3): each shape of module whose cost lies in
// section entries is refused before compiling one entry past its static
// limit, with the reason; at the limit one instance (what one call costs under
// memory_mib = 4) holds at most 16 MiB of Go heap. On 3656465 12 M globals cost
// 2.2 GB per call.
func TestEntryShapesBounded(t *testing.T) {
	for shape, limit := range shapeLimits {
		t.Run(string(shape), func(t *testing.T) {
			name := strings.ReplaceAll(string(shape), " ", "_") + ".wasm"
			man := manifest(abi.Version, nil, "memory_mib = 4", tool{name: "shape"})
			per, compiled, st := instanceCost(t, name, pack(t, wasmgen.Entries(shape, limit), man))
			if st.State != StateReady {
				t.Fatalf("at the limit (%d %s): %s %s", limit, shape, st.State, st.Error)
			}
			t.Logf("%d %s: %.1f MiB of Go heap per instance, %.1f MiB compiled", limit, shape, float64(per)/(1<<20), float64(compiled)/(1<<20))
			if per > 16<<20 {
				t.Errorf("one instance of %d %s holds %d MiB", limit, shape, per>>20)
			}
			_, _, st = instanceCost(t, name, pack(t, wasmgen.Entries(shape, limit+1), man))
			want := fmt.Sprintf("declares %d %s; the limit is %d", limit+1, shape, limit)
			if st.State != StateRefused || !strings.Contains(st.Error, want) {
				t.Errorf("one past the limit: %s %q, want refused with %q", st.State, st.Error, want)
			}
		})
	}
}
