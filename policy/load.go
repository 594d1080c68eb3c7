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
//   - the section entry counts (checkCounts): globals, data and element
//     segments, types, imports, exports cost host memory beyond memory_mib;
//   - the WebAssembly features wazero does not run with this host's settings
//     (checkFeatures): several memories, memory64, threads (shared memory,
//     atomics), tail calls, exception handling;
//   - the start function (checkStart): it runs at every instantiation, outside
//     any call, where a capability host call traps the instance;
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
		cs = wasmbin.CodeStats{} // what a partial scan saw is not evidence
	} else {
		problems = append(problems, checkCode(cs)...)
	}
	problems = append(problems, checkCounts(mod)...)
	problems = append(problems, checkFeatures(mod, cs)...)
	problems = append(problems, checkStart(mod, cs)...)
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

// checkFeatures refuses what wazero would refuse when compiling with this host's
// runtime configuration (core 2.0 features: no multi-memory, memory64, threads,
// tail calls or exception handling), so that the audit never says WOULD LOAD
// for a module whose compile fails.
func checkFeatures(mod *wasmbin.Module, cs wasmbin.CodeStats) []string {
	var problems []string
	if len(mod.Memories) > 1 {
		problems = append(problems, fmt.Sprintf("the module declares %d memories; only one is supported (multi-memory is not enabled)", len(mod.Memories)))
	}
	for i, mem := range mod.Memories {
		if mem.Is64 {
			problems = append(problems, fmt.Sprintf("memory %d is a 64-bit memory (memory64 is not enabled)", i))
		}
		if mem.Shared {
			problems = append(problems, fmt.Sprintf("memory %d is shared (threads are not enabled)", i))
		}
	}
	for i, t := range mod.Tables {
		if t.Is64 {
			problems = append(problems, fmt.Sprintf("table %d is a 64-bit table (memory64 is not enabled)", i))
		}
	}
	if cs.Atomics {
		problems = append(problems, "the code uses atomic instructions (threads are not enabled)")
	}
	if cs.TailCalls {
		problems = append(problems, "the code uses tail calls (return_call; not enabled)")
	}
	if cs.Exceptions || mod.Counts.Tags > 0 {
		problems = append(problems, "the module uses exception handling (tags, try, throw; not enabled)")
	}
	return problems
}

// checkStart refuses a start function that can reach a capability host
// function: it runs at every instantiation, outside any call, and the runtime
// traps the instance there (runtime/RATIONALE.md "No host↔guest nesting").
// Reaching an indirect call counts as reaching every capability the module
// imports.
func checkStart(mod *wasmbin.Module, cs wasmbin.CodeStats) []string {
	if mod.Start < 0 {
		return nil
	}
	var funcs []wasmbin.Import
	for _, im := range mod.Imports {
		if im.Kind == wasmbin.KindFunc {
			funcs = append(funcs, im)
		}
	}
	var problems []string
	reached := map[int]bool{}
	for _, i := range cs.StartCalls {
		reached[i] = true
	}
	for i, im := range funcs {
		if Classify(im).Kind != CapabilityFunc {
			continue
		}
		switch {
		case reached[i]:
			problems = append(problems, fmt.Sprintf("the start function (function %d) calls capability host function %s; capability host calls are legal only inside oh_call, and from a start function they trap every instance (do the work inside oh_call)", mod.Start, im))
		case cs.StartIndirect:
			problems = append(problems, fmt.Sprintf("the start function (function %d) makes indirect calls and the module imports capability host function %s, which it may reach; capability host calls are legal only inside oh_call (remove the start section or its indirect calls)", mod.Start, im))
		}
	}
	return problems
}
