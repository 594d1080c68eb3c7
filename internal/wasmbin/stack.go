package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// The stack rewrite bounds a module's wasm call stack by instrumenting it: one
// mutable i32 global counts the stack the active frames may use, in 8-byte
// slots, and every defined function adds its frame weight to it on entry (and
// traps with unreachable when the sum passes the budget) and subtracts it on
// every exit. wazero 1.12 has no setting for the call stack; its compiler
// engine grows each call engine's stack in the Go heap up to ≈ 50 MB (and the
// copy that doubles it), outside memory_mib (runtime/RATIONALE.md, "The wasm
// call stack").
//
// Every exit falls through one epilogue: the original body is wrapped in a
// block with the function's results, each return becomes a br to that block at
// its nesting depth, and a branch to the function's own label now targets the
// wrapper, which has the same results. Tail calls and exception handling leave
// a frame without passing its epilogue: a module that uses them is refused
// (policy.CheckLoad refuses them as well). Atomics are left as they are: an
// instance runs one thread (wazero spawns none), so one counter per instance
// holds (policy.CheckLoad refuses shared memory and atomics anyway).

// StackOptions configure InstrumentStack.
type StackOptions struct {
	// Budget is the stack the active frames may use, in 8-byte slots (at least 1).
	Budget uint32
	// CounterExport, when not empty, exports the counter global under this name
	// (the host reads it to tell a stack trap from the module's own unreachable,
	// and resets it before each call), with "_" appended while the module
	// already exports the name.
	CounterExport string
}

// StackInfo describes an instrumented module.
type StackInfo struct {
	// Functions is the number of instrumented (defined) functions.
	Functions int
	// Counter is the index of the counter global in the global index space.
	Counter uint32
	// MaxWeight is the largest frame weight in slots (capped at Budget+1) and
	// MaxWeightFunc that function's index (imports first).
	MaxWeight     uint32
	MaxWeightFunc int
	// AddedTypes is the number of types added for multi-value wrapper blocks.
	AddedTypes int
	// CounterExport is the name the counter is exported under ("" when not).
	CounterExport string
}

// ErrStackRewrite is wrapped by errors for modules the stack rewrite refuses
// though they may be valid (tail calls, exception handling).
var ErrStackRewrite = errors.New("module cannot be stack-instrumented")

// Frame weight constants, in 8-byte slots (wazero 1.12's optimizing engine,
// internal/engine/wazevo/backend/isa/{amd64,arm64}): a frame holds the return
// address and caller frame pointer (16 bytes), 16 bytes for the stack check,
// the callee-saved registers it clobbers (at most 13 on amd64 and 23 on arm64,
// 16 bytes each: ≤ 368 bytes), one spill slot per spilled virtual register (the
// value's size: 4 or 8 bytes, 16 for v128, the total rounded up to 16) and the
// stack-passed arguments and results of the calls it makes (≤ 8 bytes per
// value of the largest signature, 16 for v128, + 16).
const frameHeaderSlots = (16 + 16 + 368 + 16 + 16) / 8

// FrameShape is what the frame weight of one function depends on.
type FrameShape struct {
	Params, Results, Locals uint64
	// Instructions is the body's instruction count; Blocks its block, loop and
	// if instructions; Assigned its local.set and local.tee instructions (at most
	// Params+Locals count: a variable assigned twice needs one block parameter).
	Instructions, Blocks, Assigned uint64
	// Values counts the values the body's instructions define beyond one each:
	// the results of the calls it makes and the parameters and results of its
	// blocks with a type index (multi-value).
	Values uint64
	// MaxArity is the module's largest parameters + results of any signature
	// (the stack-passed values of a call the function makes).
	MaxArity uint64
	// V128 is set when the module has v128 values anywhere (types, globals,
	// locals or SIMD instructions): a spill slot may then take 16 bytes, not 8.
	V128 bool
}

// FrameWeight is the weight in 8-byte slots InstrumentStack gives a function:
// an upper bound on wazero's compiler-engine frame for it. Every value the
// function can define takes its own spill slot of up to 16 bytes: its
// parameters and locals, one per instruction, and the block parameters the SSA
// form adds where control merges (at most one per assigned variable at each
// block, loop or if); plus the frame header and the stack-passed values of any
// call it makes. TestFrameWeightBoundsEngineFrames measures the engine's frames
// against it.
func FrameWeight(f FrameShape) uint64 {
	assigned := min(f.Assigned, f.Params+f.Locals)
	per := uint64(1)
	if f.V128 {
		per = 2
	}
	return frameHeaderSlots + per*(f.MaxArity+f.Params+f.Results+f.Locals+f.Instructions+f.Values+f.Blocks*assigned)
}

type retSite struct{ pos, depth int }

// rewriteScan collects, per body, what the stack rewrite needs.
type rewriteScan struct {
	returns   []retSite
	blocks    uint64 // block, loop, if (and try) instructions
	assigned  uint64 // local.set and local.tee instructions
	maxGlobal int64  // highest global index referenced by global.get/set, -1 if none
	maxType   int64  // highest type index referenced by a block type or call_indirect, -1 if none
	simd      bool   // a SIMD (0xfd) instruction occurs
	values    uint64 // FrameShape.Values
	// types and funcTypes (the function index space's type indices) size the
	// values of calls and multi-value blocks.
	types     []FuncType
	funcTypes []uint32
}

// call notes a call of function fn.
func (s *rewriteScan) call(fn uint32) {
	if int(fn) < len(s.funcTypes) && int(s.funcTypes[fn]) < len(s.types) {
		s.values += uint64(len(s.types[s.funcTypes[fn]].Results))
	}
}

// typeRef notes a type index used by call_indirect or a block type.
func (s *rewriteScan) typeRef(ti uint32) {
	s.maxType = max(s.maxType, int64(ti))
	if int(ti) < len(s.types) {
		s.values += uint64(len(s.types[ti].Params) + len(s.types[ti].Results))
	}
}

// blockType notes a block type's bytes: a non-negative s33 is a type index.
func (s *rewriteScan) blockType(b []byte) {
	s.blocks++
	if len(b) == 0 || (b[0]&0x80 == 0 && b[0]&0x40 != 0) || b[0] == 0x63 || b[0] == 0x64 {
		return // 0x40 or a value type (a negative one-byte s33), or (ref null? ht)
	}
	var v uint64
	for i, c := range b {
		v |= uint64(c&0x7f) << (7 * uint(i))
	}
	if v < 1<<32 {
		s.typeRef(uint32(v))
	} else {
		s.maxType = max(s.maxType, int64(v))
	}
}

// InstrumentStack returns mod with its call stack bounded as the package
// comment above describes, and what it added. Indices of existing functions,
// globals, types and exports are unchanged; the counter global, any added
// types and the optional export come after the existing ones. A module whose
// code references the new indices (it would not be valid without them) is
// refused, so the instrumented module is valid exactly when the original is.
func InstrumentStack(mod []byte, opt StackOptions) ([]byte, StackInfo, error) {
	var info StackInfo
	if opt.Budget == 0 || opt.Budget > 1<<30 {
		return nil, info, fmt.Errorf("stack budget %d slots is outside 1..2^30", opt.Budget)
	}
	m, err := Parse(mod)
	if err != nil {
		return nil, info, err
	}
	importedGlobals := 0
	for _, im := range m.Imports {
		if im.Kind == KindGlobal {
			importedGlobals++
		}
	}
	counter := uint64(importedGlobals) + uint64(m.Counts.Globals)
	if counter >= 1<<32-1 {
		return nil, info, fmt.Errorf("%w: too many globals", ErrStackRewrite)
	}
	info.Counter = uint32(counter)
	for _, e := range m.Exports {
		if e.Kind == KindGlobal && uint64(e.Index) >= counter {
			return nil, info, fmt.Errorf("%w: export %q names global %d, but the module has %d globals", ErrInvalid, e.Name, e.Index, counter)
		}
	}
	if info.CounterExport = opt.CounterExport; info.CounterExport != "" {
		for {
			if _, taken := m.Export(info.CounterExport); !taken {
				break
			}
			info.CounterExport += "_"
		}
	}
	var maxArity uint64
	v128 := false
	for _, t := range m.Types {
		maxArity = max(maxArity, uint64(len(t.Params)+len(t.Results)))
		v128 = v128 || slices.Contains(t.Params, V128) || slices.Contains(t.Results, V128)
	}
	for _, im := range m.Imports {
		v128 = v128 || (im.Kind == KindGlobal && im.Global == V128)
	}
	for _, s := range m.Sections {
		// A defined global of type v128 (a 0x7b byte anywhere in the section
		// counts: conservative).
		v128 = v128 || (s.ID == SectionGlobal && bytes.IndexByte(mod[s.Start:s.End], byte(V128)) >= 0)
	}

	// Wrapper block types for functions with several results: an existing type
	// () -> results, else one added after the existing types.
	origTypes := len(m.Types)
	var added []FuncType
	var wrappers map[string]uint32
	wrapperType := func(results []ValType) (uint32, error) {
		for _, v := range results {
			if v == 0x63 || v == 0x64 {
				return 0, fmt.Errorf("%w: typed function references in a result type", ErrStackRewrite)
			}
		}
		// A map from result lists to type indices, built once: a scan of
		// the types per wrapper made the rewrite cost functions × types
		// (issue 39, finding 4).
		if wrappers == nil {
			wrappers = map[string]uint32{}
			for i := len(m.Types) - 1; i >= 0; i-- { // the first such type wins
				if t := m.Types[i]; len(t.Params) == 0 {
					wrappers[string(t.Results)] = uint32(i)
				}
			}
		}
		if i, ok := wrappers[string(results)]; ok {
			return i, nil
		}
		added = append(added, FuncType{Results: slices.Clone(results)})
		i := uint32(origTypes + len(added) - 1)
		wrappers[string(results)] = i
		return i, nil
	}

	code, err := instrumentCode(m, opt.Budget, info.Counter, maxArity, v128, wrapperType, &info)
	if err != nil {
		return nil, info, err
	}
	info.AddedTypes = len(added)

	// The new contents of the type, global, export and code sections.
	newTypes := func(old []byte) []byte {
		c := AppendULEB(nil, uint64(origTypes+len(added)))
		c = append(c, old...)
		for _, t := range added {
			c = append(c, 0x60, 0)
			c = AppendULEB(c, uint64(len(t.Results)))
			c = append(c, valBytes(t.Results)...)
		}
		return c
	}
	newGlobals := func(old []byte) []byte {
		c := AppendULEB(nil, uint64(m.Counts.Globals)+1)
		c = append(c, old...)
		return append(c, byte(I32), 1, 0x41, 0, 0x0b) // (mut i32) (i32.const 0)
	}
	newExports := func(old []byte) []byte {
		c := AppendULEB(nil, uint64(len(m.Exports))+1)
		c = append(c, old...)
		c = AppendULEB(c, uint64(len(info.CounterExport)))
		c = append(c, info.CounterExport...)
		c = append(c, byte(KindGlobal))
		return AppendULEB(c, uint64(info.Counter))
	}
	type edit struct {
		id     byte
		make   func(old []byte) []byte // old: the section's entries after its count
		needed bool
		done   bool
	}
	edits := []*edit{
		{id: SectionType, make: newTypes, needed: len(added) > 0},
		{id: SectionGlobal, make: newGlobals, needed: true},
		{id: SectionExport, make: newExports, needed: opt.CounterExport != ""},
		{id: SectionCode, make: func([]byte) []byte { return code }, needed: m.code != nil},
	}
	out := make([]byte, 0, len(mod)+len(code)-(m.codeEnd-m.codeStart)+64)
	out = append(out, mod[:8]...)
	emit := func(id byte, content []byte) {
		out = append(out, id)
		out = AppendULEB(out, uint64(len(content)))
		out = append(out, content...)
	}
	for _, s := range m.Sections {
		if s.ID != SectionCustom {
			for _, e := range edits {
				if e.needed && !e.done && order(e.id) < order(s.ID) {
					emit(e.id, e.make(nil)) // absent: created before the next section
					e.done = true
				}
			}
		}
		var e *edit
		for _, x := range edits {
			if x.id == s.ID && s.ID != SectionCustom {
				e = x
			}
		}
		if e == nil || !e.needed {
			out = append(out, mod[s.Offset:s.End]...)
			continue
		}
		r := &reader{b: mod, pos: s.Start, end: s.End}
		if _, err := r.u32("section entry count"); err != nil {
			return nil, info, err
		}
		emit(s.ID, e.make(mod[r.pos:s.End]))
		e.done = true
	}
	for _, e := range edits {
		if e.needed && !e.done {
			emit(e.id, e.make(nil))
		}
	}
	return out, info, nil
}

// instrumentCode returns the new code section's contents.
func instrumentCode(m *Module, budget, counter uint32, maxArity uint64, v128 bool, wrapperType func([]ValType) (uint32, error), info *StackInfo) ([]byte, error) {
	if m.code == nil {
		return nil, nil
	}
	b := m.codeBytes
	r := &reader{b: b, pos: m.codeStart, end: m.codeEnd}
	n, err := r.count("function body", 2)
	if err != nil {
		return nil, err
	}
	if n != len(m.FuncTypeIndices) {
		return nil, r.errf("code section has %d bodies but the function section declares %d functions", n, len(m.FuncTypeIndices))
	}
	imported := m.ImportedFuncCount()
	info.Functions = n
	info.MaxWeightFunc = -1
	// First pass: decode every body (its returns, and whether v128 values occur).
	type scanned struct {
		start, instrAt, end int
		locals              uint64
		count               int
		blocks, assigned    uint64
		values              uint64
		returns             []retSite // a window of allReturns
	}
	bodies := make([]scanned, n)
	funcTypes := make([]uint32, 0, imported+n)
	for _, im := range m.Imports {
		if im.Kind == KindFunc {
			funcTypes = append(funcTypes, im.TypeIndex)
		}
	}
	funcTypes = append(funcTypes, m.FuncTypeIndices...)
	rw := &rewriteScan{}
	bs := &bodyScan{rw: rw}
	for i := 0; i < n; i++ {
		size, err := r.u32("function body size")
		if err != nil {
			return nil, err
		}
		if uint64(size) > uint64(r.end-r.pos) {
			return nil, r.errf("truncated function body %d: %d bytes declared, %d left", imported+i, size, r.end-r.pos)
		}
		start, end := r.pos, r.pos+int(size)
		r.pos = end
		fr := &reader{b: b, pos: start, end: end}
		locals, err := fr.locals()
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", imported+i, err)
		}
		instrAt := fr.pos
		v128 = v128 || bytes.IndexByte(b[start:instrAt], byte(V128)) >= 0 // a v128 local (conservative)
		*rw = rewriteScan{maxGlobal: -1, maxType: -1, returns: rw.returns[len(rw.returns):], types: m.Types, funcTypes: funcTypes}
		*bs = bodyScan{rw: rw}
		fr.scan = bs
		_, count, _, _, err := fr.instructions()
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", imported+i, err)
		}
		if bs.tail {
			return nil, fmt.Errorf("%w: it uses tail calls (return_call), which leave a frame without its epilogue", ErrStackRewrite)
		}
		if bs.exceptions {
			return nil, fmt.Errorf("%w: it uses exception handling, which unwinds frames without their epilogues", ErrStackRewrite)
		}
		if rw.maxGlobal >= int64(counter) {
			return nil, fmt.Errorf("%w: function %d references global %d, but the module has %d globals", ErrInvalid, imported+i, rw.maxGlobal, counter)
		}
		if rw.maxType >= int64(len(m.Types)) {
			return nil, fmt.Errorf("%w: function %d references type %d, but the module has %d types", ErrInvalid, imported+i, rw.maxType, len(m.Types))
		}
		v128 = v128 || rw.simd
		bodies[i] = scanned{start: start, instrAt: instrAt, end: end, locals: locals, count: count,
			blocks: rw.blocks, assigned: rw.assigned, values: rw.values, returns: rw.returns}
	}
	if r.pos != r.end {
		return nil, r.errf("code section has %d bytes after its last body", r.end-r.pos)
	}
	// Each body grows by its prologue and epilogue (≤ 40 bytes), its wrapper
	// block (≤ 7) and 1–5 bytes per return.
	out := make([]byte, 0, m.codeEnd-m.codeStart+n*56+len(rw.returns)*5)
	out = AppendULEB(out, uint64(n))
	var body []byte
	for i, sb := range bodies {
		start, instrAt, end := sb.start, sb.instrAt, sb.end
		ft := m.Types[m.FuncTypeIndices[i]]
		w := FrameWeight(FrameShape{Params: uint64(len(ft.Params)), Results: uint64(len(ft.Results)), Locals: sb.locals,
			Instructions: uint64(sb.count), Blocks: sb.blocks, Assigned: sb.assigned, Values: sb.values, MaxArity: maxArity, V128: v128})
		w = min(w, uint64(budget)+1) // a frame over the budget traps on entry
		if uint32(w) > info.MaxWeight || info.MaxWeightFunc < 0 {
			info.MaxWeight, info.MaxWeightFunc = uint32(w), imported+i
		}

		body = body[:0]
		body = append(body, b[start:instrAt]...) // local declarations
		// Prologue: used += w; if used > budget { unreachable }
		body = appendCounter(body, counter, int64(w), 0x6a)
		body = append(body, 0x23)
		body = AppendULEB(body, uint64(counter))
		body = append(body, 0x41)
		body = AppendSLEB(body, int64(budget))
		body = append(body, 0x4b, 0x04, 0x40, 0x00, 0x0b) // i32.gt_u if unreachable end
		// The wrapper block with the function's results.
		body = append(body, 0x02)
		switch len(ft.Results) {
		case 0:
			body = append(body, 0x40)
		case 1:
			if v := ft.Results[0]; v == 0x63 || v == 0x64 {
				return nil, fmt.Errorf("%w: function %d returns a typed function reference", ErrStackRewrite, imported+i)
			}
			body = append(body, byte(ft.Results[0]))
		default:
			ti, err := wrapperType(ft.Results)
			if err != nil {
				return nil, err
			}
			body = AppendSLEB(body, int64(ti))
		}
		// The original instructions, each return a br to the wrapper; the body's
		// final end closes the wrapper.
		at := instrAt
		for _, ret := range sb.returns {
			body = append(body, b[at:ret.pos]...)
			body = append(body, 0x0c)
			body = AppendULEB(body, uint64(ret.depth))
			at = ret.pos + 1
		}
		body = append(body, b[at:end]...)
		// Epilogue: used -= w; end.
		body = appendCounter(body, counter, int64(w), 0x6b)
		body = append(body, 0x0b)
		out = AppendULEB(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// appendCounter appends global.get counter; i32.const w; op; global.set counter.
func appendCounter(b []byte, counter uint32, w int64, op byte) []byte {
	b = append(b, 0x23)
	b = AppendULEB(b, uint64(counter))
	b = append(b, 0x41)
	b = AppendSLEB(b, w)
	b = append(b, op, 0x24)
	return AppendULEB(b, uint64(counter))
}

// AppendSLEB appends v to b in signed LEB128, as WebAssembly encodes signed
// integers (i32.const, i64.const).
func AppendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
