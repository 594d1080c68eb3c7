package policy

import (
	"fmt"
	"slices"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// pageBytes is the size of one WebAssembly memory page.
const pageBytes = 64 << 10

// CheckLoad is the one verdict on a module whose manifest has been read and whose
// grant is decided: the runtime's loader and `tools audit` both call it, so the
// audit's "WOULD LOAD" means the loader admits the module. It checks
//
//   - the static gate and the ABI's exports (CheckModule);
//   - the declared memory against the effective memory_mib: a memory whose initial
//     (or declared maximum) size is above it could never be instantiated;
//   - for a third-party module, its tool names against reserved: every
//     first-party tool name (tools-wasm's Names), whether or not that tool is
//     served now (searxng_search stays reserved while SearXNG is disabled); nil
//     for a first-party module. The caller passes the list, so this package does
//     not depend on the module catalogue (whose tests import policy).
//
// Every problem found is listed in one *GateError.
func CheckLoad(mod *wasmbin.Module, m *Manifest, g *Grant, reserved []string) error {
	var problems []string
	if err := CheckModule(mod, m, g.Capabilities); err != nil {
		if ge, ok := err.(*GateError); ok {
			problems = append(problems, ge.Problems...)
		} else {
			problems = append(problems, err.Error())
		}
	}
	limitPages := uint64(g.Limits.MemoryMiB) * (1 << 20) / pageBytes
	for i, mem := range mod.Memories {
		if mem.Min > limitPages {
			problems = append(problems, fmt.Sprintf("memory %d declares %d initial pages (%d MiB) but memory_mib = %d allows %d pages; raise memory_mib (at most %d) or make the module's initial memory smaller",
				i, mem.Min, mem.Min*pageBytes>>20, g.Limits.MemoryMiB, limitPages, CapMemoryMiB))
		} else if mem.HasMax && mem.Max > limitPages {
			problems = append(problems, fmt.Sprintf("memory %d declares a maximum of %d pages (%d MiB) but memory_mib = %d allows %d pages; raise memory_mib (at most %d) or lower the module's declared maximum",
				i, mem.Max, mem.Max*pageBytes>>20, g.Limits.MemoryMiB, limitPages, CapMemoryMiB))
		}
	}
	for _, t := range m.Tools {
		if slices.Contains(reserved, t.Name) {
			problems = append(problems, fmt.Sprintf("tool name %q is a first-party tool name (reserved whether or not it is served now); rename the tool in this module's manifest", t.Name))
		}
	}
	if len(problems) > 0 {
		return &GateError{Problems: problems}
	}
	return nil
}
