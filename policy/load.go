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
//   - the cost of compiling the code (checkCode: code size, function count, body
//     size, nesting depth, locals, loops × locals), decoded without compiling;
//   - the tables (checkTables): a table the module grows must declare a maximum,
//     and tables count against memory_mib at TableEntryBytes an entry;
//   - the declared memory against what memory_mib leaves beside the tables: a
//     memory whose initial (or declared maximum) size is above it could never be
//     instantiated;
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
	cs, err := mod.Code()
	if err != nil {
		problems = append(problems, fmt.Sprintf("the code section cannot be checked: %v", err))
	} else {
		problems = append(problems, checkCode(cs)...)
	}
	tableProblems := checkTables(mod, cs, g.Limits.MemoryMiB)
	problems = append(problems, tableProblems...)
	limitPages := uint64(MemoryLimitPages(mod, g.Limits.MemoryMiB))
	allows := fmt.Sprintf("memory_mib = %d allows %d pages", g.Limits.MemoryMiB, limitPages)
	if tb := TableBytes(mod); tb > 0 {
		allows += fmt.Sprintf(" beside the tables' %d KiB", (tb+1023)/1024)
	}
	for i, mem := range mod.Memories {
		if len(tableProblems) > 0 {
			break // the tables alone exceed memory_mib
		}
		if mem.Min > limitPages {
			problems = append(problems, fmt.Sprintf("memory %d declares %d initial pages (%d MiB) but %s; raise memory_mib (at most %d) or make the module's initial memory smaller",
				i, mem.Min, mem.Min*pageBytes>>20, allows, CapMemoryMiB))
		} else if mem.HasMax && mem.Max > limitPages {
			problems = append(problems, fmt.Sprintf("memory %d declares a maximum of %d pages (%d MiB) but %s; raise memory_mib (at most %d) or lower the module's declared maximum",
				i, mem.Max, mem.Max*pageBytes>>20, allows, CapMemoryMiB))
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
