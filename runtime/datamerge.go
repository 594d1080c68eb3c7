package runtime

import "github.com/openhuman/openhuman-core/internal/wasmbin"

// mergeDataSegments joins a module's data segments where that cannot be observed
// (wasmbin.MergeDataSegments): wazero keeps per-segment state for the life of a
// compiled module and per instance, and the Go linker writes ≈ 38,600 segments.
func mergeDataSegments(wasm []byte) []byte { return wasmbin.MergeDataSegments(wasm) }
