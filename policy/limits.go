package policy

import (
	"fmt"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// MaxModuleBytes bounds a module file: the loader reads at most this much, and
// `tools audit` refuses a larger file without reading it whole.
const MaxModuleBytes = 64 << 20

// CheckModuleSize is the loader's and the audit's verdict on a module file of
// size bytes.
func CheckModuleSize(size int64) error {
	if size > MaxModuleBytes {
		return fmt.Errorf("the file has %d bytes; the limit for a module is %d (64 MiB)", size, MaxModuleBytes)
	}
	return nil
}

// Static bounds on what compiling a module may cost. wazero's optimising compiler
// cannot be interrupted inside one function and takes superlinear time in a
// function's nesting depth and in its loops times its locals, so each function is
// bounded here, before anything compiles; the runtime's compile deadline bounds the
// whole module (wazero checks it between functions). Figures measured with wazero
// 1.12 on a shared 2-core machine (runtime/RATIONALE.md "Compile-time bounds:
// statically per function, by a deadline per module").
const (
	// MaxCodeBytes bounds the code section (a Go guest of the SDK has about 2 MB).
	MaxCodeBytes = 32 << 20
	// MaxFunctions bounds the number of function bodies (100,000 empty functions
	// compile in 1.5 s; the first-party memory module has 2,273).
	MaxFunctions = wasmbin.MaxFunctions
	// MaxFunctionBytes bounds one function body (a 1 MiB body compiles in 0.4 s;
	// the largest first-party body is 29 KB).
	MaxFunctionBytes = 1 << 20
	// MaxNestingDepth bounds block/loop/if nesting in one body: compile time is
	// quadratic in it (2,000 levels 20 ms, 10,000 levels 1.2 s, 100,000 levels
	// 96 s and 1 GB). Go's output nests up to 549 in the first-party modules.
	MaxNestingDepth = 4096
	// MaxLocals bounds the locals one body declares.
	MaxLocals = 50_000
	// MaxLoopCost bounds loops² × (locals + parameters + 10) in one body: 1,000
	// loops over 1,000 locals (1.0e9) compile in 3.2 s, 50,000 over 50,000 did not
	// finish in 9 minutes. First-party functions stay under 200.
	MaxLoopCost = 1 << 30
)

// Static bounds on the entries of the sections whose cost wazero keeps outside
// linear memory and memory_mib: every instance holds a Go value per global and
// per data and element segment, and the compiled module one per type, import
// and export. A module of 12 M globals or 30 M passive data segments (≤ 64 MiB)
// cost 0.9–3 GB of host memory per instance under memory_mib = 4. Measured on
// the modules this project builds or documents (a Go guest of the SDK: 15
// types, 23 imports, 2,134 functions, 8 globals, 4 exports, 1 element and
// 36,809 data segments; the C first-party modules and examples: at most 3
// types, 6 imports, 1 global, 1 data segment), each bound is at least 100× the
// largest of them except data segments (6.8× a Go guest's; ≈ 24 bytes each per
// instance, 5.8 MiB at the limit) (runtime/RATIONALE.md "Whole-instance memory").
const (
	MaxTypes           = wasmbin.MaxTypes // Parse refuses more (wasmbin.ErrTooManyEntries)
	MaxImports         = wasmbin.MaxImports
	MaxGlobals         = 10_000
	MaxExports         = wasmbin.MaxExports
	MaxElementSegments = 10_000
	MaxDataSegments    = 250_000
	MaxTables          = wasmbin.MaxTables
)

// MaxFunctionsTimesTypes bounds the module's defined functions × its types:
// wazero's compiler does work per type for every function it compiles, so a
// module within MaxFunctions and MaxTypes apiece still took 15–32 s to compile
// at every start (issue 39, finding 4: 99k functions × 10k unused types, a
// 615 KB file). Measured with wazero 1.12 on a loaded 2-core machine: 20,000
// functions compile in 0.26 s with 3 types and 2.0 s with 10,000 (≈ 9 ns per
// function-type pair); at this bound the pairs add ≈ 0.5 s. A Go guest of the
// SDK has 2,134 × 15 (32,010), the first-party modules less: the bound is
// 1,500× that (runtime/RATIONALE.md "Compiling").
const MaxFunctionsTimesTypes = 50_000_000

// checkCounts bounds the section entry counts (see MaxTypes and the rest).
func checkCounts(mod *wasmbin.Module) []string {
	var problems []string
	over := func(what string, n, limit int) {
		if n > limit {
			problems = append(problems, fmt.Sprintf("the module declares %d %s; the limit is %d (each costs host memory outside memory_mib)", n, what, limit))
		}
	}
	over("types", len(mod.Types), MaxTypes)
	over("imports", len(mod.Imports), MaxImports)
	over("globals", int(mod.Counts.Globals), MaxGlobals)
	over("exports", len(mod.Exports), MaxExports)
	over("element segments", int(mod.Counts.Elements), MaxElementSegments)
	over("data segments", int(max(mod.Counts.Data, mod.Counts.DataCount)), MaxDataSegments)
	over("tables", len(mod.Tables), MaxTables)
	if p := FunctionsTimesTypes(mod); p > MaxFunctionsTimesTypes {
		problems = append(problems, fmt.Sprintf("the module has %d functions and %d types: %d function-type pairs, over the limit of %d (compiling does work per type for every function: drop unused types, or split the module)",
			len(mod.FuncTypeIndices), len(mod.Types), p, MaxFunctionsTimesTypes))
	}
	return problems
}

// FunctionsTimesTypes is the product MaxFunctionsTimesTypes bounds: what
// compiling the module costs beyond its code, which `tools audit` reports.
func FunctionsTimesTypes(mod *wasmbin.Module) int64 {
	return int64(len(mod.FuncTypeIndices)) * int64(len(mod.Types))
}

// TableEntryBytes is what one table entry costs the host (wazero keeps a
// pointer-sized reference per entry); tables count against memory_mib with
// linear memory.
const TableEntryBytes = 8

// TableBytes is the most host memory the module's tables can take: each table's
// declared maximum, or its minimum when it has none (a module whose tables lack a
// maximum may not grow them; see checkTables).
func TableBytes(mod *wasmbin.Module) uint64 {
	var n uint64
	for _, t := range mod.Tables {
		entries := t.Min
		if t.HasMax {
			entries = max(t.Max, t.Min)
		}
		n += min(entries, 1<<40) * TableEntryBytes // saturates far above any budget
	}
	return n
}

// checkTables bounds the module's tables: a table the module can grow must declare
// a maximum, and tables plus the declared memory must fit in memory_mib.
func checkTables(mod *wasmbin.Module, cs wasmbin.CodeStats, memoryMiB int) []string {
	var problems []string
	budget := uint64(memoryMiB) << 20
	for i, t := range mod.Tables {
		if !t.HasMax && cs.TableGrow {
			problems = append(problems, fmt.Sprintf("table %d declares no maximum size and the module grows tables (table.grow), so it could grow to 2^32 entries outside memory_mib; declare a maximum (each entry counts %d bytes against memory_mib)", i, TableEntryBytes))
		}
	}
	tb := TableBytes(mod)
	if tb > budget {
		problems = append(problems, fmt.Sprintf("the tables can hold %d entries (%d MiB at %d bytes each) but memory_mib = %d; lower the tables' declared sizes or raise memory_mib (at most %d)",
			tb/TableEntryBytes, ceilMiB(tb), TableEntryBytes, memoryMiB, CapMemoryMiB))
	}
	return problems
}

// MemoryLimitPages is the linear memory a module may grow to: memory_mib less what
// its tables can take (rounded up to whole pages). The runtime passes it to
// wazero's memory limit.
func MemoryLimitPages(mod *wasmbin.Module, memoryMiB int) uint32 {
	pages := uint64(memoryMiB) * (1 << 20) / pageBytes
	tablePages := (TableBytes(mod) + pageBytes - 1) / pageBytes
	if tablePages >= pages {
		return 0
	}
	return uint32(pages - tablePages)
}

func ceilMiB(b uint64) uint64 { return (b + 1<<20 - 1) >> 20 }

// checkCode bounds the cost of compiling the module's code (see the constants).
func checkCode(cs wasmbin.CodeStats) []string {
	var problems []string
	if cs.CodeBytes > MaxCodeBytes {
		problems = append(problems, fmt.Sprintf("the code section has %d bytes; the limit is %d", cs.CodeBytes, MaxCodeBytes))
	}
	if cs.Functions > MaxFunctions {
		problems = append(problems, fmt.Sprintf("the module has %d functions; the limit is %d", cs.Functions, MaxFunctions))
	}
	if cs.MaxBodyBytes > MaxFunctionBytes {
		problems = append(problems, fmt.Sprintf("function %d has a body of %d bytes; the limit is %d per function (split it)", cs.MaxBodyFunc, cs.MaxBodyBytes, MaxFunctionBytes))
	}
	if cs.MaxDepth > MaxNestingDepth {
		problems = append(problems, fmt.Sprintf("function %d nests blocks %d deep; the limit is %d (compiling takes time quadratic in the depth: 100,000 levels took 96 s and 1 GB)", cs.MaxDepthFunc, cs.MaxDepth, MaxNestingDepth))
	}
	if cs.MaxLocals > MaxLocals {
		problems = append(problems, fmt.Sprintf("function %d declares %d locals; the limit is %d", cs.MaxLocalsFunc, cs.MaxLocals, MaxLocals))
	}
	if cs.MaxLoopCost > MaxLoopCost {
		problems = append(problems, fmt.Sprintf("function %d has %d loops over %d locals (parameters included); compiling takes time that grows with loops² × locals and %d² × (%d + 10) exceeds the limit %d (split the function or use fewer locals)",
			cs.MaxLoopCostFunc, cs.MaxLoopCostLoops, cs.MaxLoopCostLocals, cs.MaxLoopCostLoops, cs.MaxLoopCostLocals, MaxLoopCost))
	}
	return problems
}
