package wasmbin

import (
	"fmt"
	"slices"
	"sync"
)

// Table is one table of the module (imported or defined): its element type and
// declared limits in entries.
type Table struct {
	Elem ValType
	Limits
}

// CodeStats describes the code section as far as the cost of compiling and running
// it goes. Function indices count imported functions first, as in the binary
// format's function index space.
type CodeStats struct {
	// Functions is the number of function bodies.
	Functions int
	// CodeBytes is the size of the code section.
	CodeBytes int
	// MaxBodyBytes is the largest function body and MaxBodyFunc its index.
	MaxBodyBytes, MaxBodyFunc int
	// MaxDepth is the deepest nesting of block, loop, if, try and try_table in any
	// body (a body's own level is 0), and MaxDepthFunc that function's index.
	MaxDepth, MaxDepthFunc int
	// MaxLocals is the most locals any body declares (parameters not counted), and
	// MaxLocalsFunc that function's index.
	MaxLocals     uint64
	MaxLocalsFunc int
	// MaxLoopCost is the largest loops² × (locals + parameters + 10) of any body,
	// and MaxLoopCostFunc that function's index; MaxLoopCostLoops and
	// MaxLoopCostLocals are its loop and local (parameters included) counts. It
	// models the optimising compiler's time on a function (runtime/RATIONALE.md
	// "Compile-time bounds: statically per function, by a deadline per module").
	MaxLoopCost                         uint64
	MaxLoopCostFunc                     int
	MaxLoopCostLoops, MaxLoopCostLocals uint64
	// Instructions is the number of instructions in all bodies.
	Instructions int
	// TableGrow is set when some body contains table.grow (0xFC 15).
	TableGrow bool
	// Atomics, TailCalls and Exceptions are set when some body uses an
	// instruction of the threads (0xFE), tail-call (return_call*) or
	// exception-handling (try, throw, catch, try_table, …) proposals.
	Atomics, TailCalls, Exceptions bool
	// StartCalls lists the imported functions the start function can reach
	// through direct calls (import indices in the function index space), and
	// StartIndirect is set when it can reach an indirect call (which may reach
	// any function). Both are empty without a start function.
	StartCalls    []int
	StartIndirect bool
}

// bodyScan collects what one body uses beyond what CodeStats counts.
type bodyScan struct {
	atomics, tail, exceptions, indirect bool
	calls                               []uint32 // direct callees, when collected
	collect                             bool
	// rw, set by the stack rewrite (stack.go), collects what it needs.
	rw *rewriteScan
}

// codeScan is the memoised result of Module.Code.
type codeScan struct {
	once  sync.Once
	stats CodeStats
	err   error
}

// Code decodes every instruction of every function body once (the result is
// kept) and returns what CodeStats describes. It executes nothing, allocates
// nothing per instruction and never panics; an instruction stream it cannot
// decode is an error wrapping ErrInvalid that names the function and byte
// offset. A module without a code section has zero stats.
func (m *Module) Code() (CodeStats, error) {
	if m.code == nil {
		return CodeStats{}, nil
	}
	m.code.once.Do(func() {
		m.code.stats, m.code.err = scanCode(m)
	})
	return m.code.stats, m.code.err
}

// parseTables reads the table section.
func parseTables(r *reader, m *Module) error {
	n, err := r.bounded("table", "tables", 2, MaxTables)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		t, err := r.tableType()
		if err != nil {
			return err
		}
		m.Tables = append(m.Tables, t)
	}
	return nil
}

func (r *reader) tableType() (Table, error) {
	at := r.pos
	elem, err := r.valType("table element type")
	if err != nil {
		return Table{}, err
	}
	switch elem {
	case FuncRef, ExternRef, 0x63, 0x64:
	default:
		r.pos = at
		return Table{}, r.errf("table element type %v is not a reference type", elem)
	}
	l, err := r.readLimits("table limits")
	if err != nil {
		return Table{}, err
	}
	return Table{Elem: elem, Limits: l}, nil
}

func scanCode(m *Module) (CodeStats, error) {
	b, start, end := m.codeBytes, m.codeStart, m.codeEnd
	imported, declared := m.ImportedFuncCount(), len(m.FuncTypeIndices)
	st := CodeStats{CodeBytes: end - start}
	r := &reader{b: b, pos: start, end: end}
	n, err := r.count("function body", 2)
	if err != nil {
		return st, err
	}
	if n != declared {
		return st, r.errf("code section has %d bodies but the function section declares %d functions", n, declared)
	}
	st.Functions = n
	// Direct calls are kept only when a start function exists (to see which
	// imports it reaches).
	var edges [][]uint32
	var indirect []bool
	if m.Start >= 0 {
		edges, indirect = make([][]uint32, n), make([]bool, n)
	}
	for i := 0; i < n; i++ {
		size, err := r.u32("function body size")
		if err != nil {
			return st, err
		}
		if uint64(size) > uint64(r.end-r.pos) {
			return st, r.errf("truncated function body %d: %d bytes declared, %d left", imported+i, size, r.end-r.pos)
		}
		fr := &reader{b: b, pos: r.pos, end: r.pos + int(size)}
		r.pos += int(size)
		fn := imported + i
		if int(size) > st.MaxBodyBytes {
			st.MaxBodyBytes, st.MaxBodyFunc = int(size), fn
		}
		locals, err := fr.locals()
		if err != nil {
			return st, fmt.Errorf("function %d: %w", fn, err)
		}
		if locals > st.MaxLocals {
			st.MaxLocals, st.MaxLocalsFunc = locals, fn
		}
		bs := bodyScan{collect: edges != nil}
		fr.scan = &bs
		depth, count, loops, grows, err := fr.instructions()
		st.Instructions += count
		st.TableGrow = st.TableGrow || grows
		st.Atomics = st.Atomics || bs.atomics
		st.TailCalls = st.TailCalls || bs.tail
		st.Exceptions = st.Exceptions || bs.exceptions
		if edges != nil {
			edges[i], indirect[i] = bs.calls, bs.indirect
		}
		if err != nil {
			return st, fmt.Errorf("function %d: %w", fn, err)
		}
		if depth > st.MaxDepth {
			st.MaxDepth, st.MaxDepthFunc = depth, fn
		}
		vars := locals + uint64(len(m.Types[m.FuncTypeIndices[i]].Params))
		if cost := uint64(loops) * uint64(loops) * (min(vars, 1<<24) + 10); cost > st.MaxLoopCost {
			st.MaxLoopCost, st.MaxLoopCostFunc, st.MaxLoopCostLoops, st.MaxLoopCostLocals = cost, fn, uint64(loops), vars
		}
	}
	if r.pos != r.end {
		return st, r.errf("code section has %d bytes after its last body", r.end-r.pos)
	}
	if edges != nil {
		st.StartCalls, st.StartIndirect = reach(int(m.Start), imported, edges, indirect)
	}
	return st, nil
}

// reach walks the direct calls from function start (an index in the function
// index space; imported functions come first) and returns the imported
// functions it reaches, and whether it reaches an indirect call.
func reach(start, imported int, edges [][]uint32, indirect []bool) (imports []int, viaIndirect bool) {
	seen := make([]bool, imported+len(edges))
	if start >= len(seen) {
		return nil, false
	}
	stack := []int{start}
	seen[start] = true
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f < imported {
			imports = append(imports, f)
			continue
		}
		viaIndirect = viaIndirect || indirect[f-imported]
		for _, c := range edges[f-imported] {
			if int(c) < len(seen) && !seen[c] {
				seen[c] = true
				stack = append(stack, int(c))
			}
		}
	}
	slices.Sort(imports)
	return imports, viaIndirect
}

// locals reads a body's local declarations and returns how many locals they make.
func (r *reader) locals() (uint64, error) {
	n, err := r.count("local declaration", 2)
	if err != nil {
		return 0, err
	}
	var total uint64
	for i := 0; i < n; i++ {
		c, err := r.u32("local count")
		if err != nil {
			return 0, err
		}
		if _, err := r.valType("local type"); err != nil {
			return 0, err
		}
		total += uint64(c) // at most 2^32 declarations of 2^32: no overflow
	}
	return total, nil
}

// instructions decodes a body's instructions up to the end that closes the body,
// which must be its last byte. It returns the deepest block nesting, the number of
// instructions and of loops, and whether table.grow occurs.
func (r *reader) instructions() (maxDepth, count, loops int, tableGrow bool, err error) {
	depth := 0
	for {
		if r.pos >= r.end {
			return maxDepth, count, loops, tableGrow, r.errf("function body ends without its final end")
		}
		at := r.pos
		op := r.b[r.pos]
		r.pos++
		count++
		switch opClass[op] {
		case opNone:
			if (op == 0x0a || op == 0x19) && r.scan != nil { // throw_ref, catch_all
				r.scan.exceptions = true
			}
			if op == 0x0f && r.scan != nil && r.scan.rw != nil { // return
				r.scan.rw.returns = append(r.scan.rw.returns, retSite{pos: at, depth: depth})
			}
			continue
		case opIndex:
			idx, err := r.u32("index immediate")
			if err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			if r.scan != nil {
				r.scan.index(op, idx)
			}
			continue
		case opMemarg:
			if err := r.memarg(); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			continue
		}
		if r.scan != nil {
			r.scan.other(op)
		}
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06: // block loop if try
			bt := r.pos
			if err := r.blockType(); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			if r.scan != nil && r.scan.rw != nil {
				r.scan.rw.blockType(r.b[bt:r.pos])
			}
			depth++
			maxDepth = max(maxDepth, depth)
			if op == 0x03 {
				loops++
			}
		case op == 0x1f: // try_table bt vec(catch)
			if err := r.blockType(); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			n, err := r.count("try_table catch", 2)
			if err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			for i := 0; i < n; i++ {
				kind, err := r.byte("catch kind")
				if err != nil {
					return maxDepth, count, loops, tableGrow, err
				}
				if kind > 3 {
					r.pos--
					return maxDepth, count, loops, tableGrow, r.errf("unknown catch kind %d", kind)
				}
				if kind < 2 {
					if _, err := r.u32("catch tag"); err != nil {
						return maxDepth, count, loops, tableGrow, err
					}
				}
				if _, err := r.u32("catch label"); err != nil {
					return maxDepth, count, loops, tableGrow, err
				}
			}
			depth++
			maxDepth = max(maxDepth, depth)
		case op == 0x0b || op == 0x18: // end, delegate l
			if op == 0x18 {
				if _, err := r.u32("delegate label"); err != nil {
					return maxDepth, count, loops, tableGrow, err
				}
			}
			if depth == 0 {
				if op != 0x0b {
					r.pos = at
					return maxDepth, count, loops, tableGrow, r.errf("delegate outside a try")
				}
				if r.pos != r.end {
					return maxDepth, count, loops, tableGrow, r.errf("function body has %d bytes after its final end", r.end-r.pos)
				}
				return maxDepth, count, loops, tableGrow, nil
			}
			depth--
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0a || op == 0x0f || op == 0x19 ||
			op == 0x1a || op == 0x1b || (op >= 0x45 && op <= 0xc4) || op == 0xd1 || op == 0xd3 || op == 0xd4:
			// no immediates
		case op == 0x07 || op == 0x08 || op == 0x09 || op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 ||
			op == 0x14 || op == 0x15 || (op >= 0x20 && op <= 0x26) || op == 0xd2 || op == 0xd5 || op == 0xd6:
			// one index: catch/throw tag, rethrow/br/br_if label, call/return_call
			// func, call_ref type, local/global/table index, ref.func, br_on_null
			if _, err := r.u32("index immediate"); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect: type, table
			ti, err := r.u32("type index")
			if err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			if r.scan != nil && r.scan.rw != nil {
				r.scan.rw.typeRef(ti)
			}
			if _, err := r.u32("table index"); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0x0e: // br_table vec(label) label
			n, err := r.count("br_table label", 1)
			if err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			for i := 0; i <= n; i++ {
				if _, err := r.u32("br_table label"); err != nil {
					return maxDepth, count, loops, tableGrow, err
				}
			}
		case op == 0x1c: // select t*
			n, err := r.count("select type", 1)
			if err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			for i := 0; i < n; i++ {
				if _, err := r.valType("select type"); err != nil {
					return maxDepth, count, loops, tableGrow, err
				}
			}
		case op >= 0x28 && op <= 0x3e: // loads and stores
			if err := r.memarg(); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0x3f || op == 0x40: // memory.size, memory.grow
			if _, err := r.u32("memory index"); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0x41:
			if err := r.sleb("i32.const", 5); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0x42:
			if err := r.sleb("i64.const", 10); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0x43:
			if _, err := r.bytesN(4, "f32.const"); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0x44:
			if _, err := r.bytesN(8, "f64.const"); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0xd0: // ref.null heaptype
			if err := r.sleb33("ref.null heap type"); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0xfc:
			grows, err := r.prefixFC()
			if err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
			tableGrow = tableGrow || grows
		case op == 0xfd:
			if err := r.prefixFD(); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		case op == 0xfe:
			if err := r.prefixFE(); err != nil {
				return maxDepth, count, loops, tableGrow, err
			}
		default:
			r.pos = at
			return maxDepth, count, loops, tableGrow, r.errf("unknown opcode 0x%02x", op)
		}
	}
}

// index notes an instruction with one index immediate.
func (s *bodyScan) index(op byte, idx uint32) {
	switch op {
	case 0x10, 0x12: // call, return_call
		if s.collect {
			s.calls = append(s.calls, idx)
		}
		if s.rw != nil {
			s.rw.call(idx)
		}
		s.tail = s.tail || op == 0x12
	case 0x14, 0x15: // call_ref, return_call_ref
		s.indirect = true
		s.tail = s.tail || op == 0x15
	case 0x07, 0x08, 0x09: // catch, throw, rethrow
		s.exceptions = true
	case 0x21, 0x22: // local.set, local.tee
		if s.rw != nil {
			s.rw.assigned++
		}
	case 0x23, 0x24: // global.get, global.set
		if s.rw != nil {
			s.rw.maxGlobal = max(s.rw.maxGlobal, int64(idx))
		}
	}
}

// other notes an instruction decoded by instructions' switch (or with no
// immediates).
func (s *bodyScan) other(op byte) {
	switch op {
	case 0x11, 0x13: // call_indirect, return_call_indirect
		s.indirect = true
		s.tail = s.tail || op == 0x13
	case 0x06, 0x0a, 0x18, 0x19, 0x1f: // try, throw_ref, delegate, catch_all, try_table
		s.exceptions = true
	case 0xfe:
		s.atomics = true
	case 0xfd:
		if s.rw != nil {
			s.rw.simd = true
		}
	}
}

// Instruction classes for the common cases of instructions' decoding loop.
const (
	opOther  = iota // decoded by the switch
	opNone          // no immediates
	opIndex         // one LEB128 index
	opMemarg        // a memarg
)

var opClass = func() (c [256]byte) {
	for op := 0x45; op <= 0xc4; op++ {
		c[op] = opNone
	}
	for _, op := range []int{0x00, 0x01, 0x05, 0x0a, 0x0f, 0x19, 0x1a, 0x1b, 0xd1, 0xd3, 0xd4} {
		c[op] = opNone
	}
	for _, op := range []int{0x07, 0x08, 0x09, 0x0c, 0x0d, 0x10, 0x12, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0xd2, 0xd5, 0xd6} {
		c[op] = opIndex
	}
	for op := 0x28; op <= 0x3e; op++ {
		c[op] = opMemarg
	}
	return c
}()

// blockType skips a block type: 0x40, a value type, or a type index (s33).
func (r *reader) blockType() error {
	if r.pos < r.end && (r.b[r.pos] == 0x63 || r.b[r.pos] == 0x64) { // (ref null? ht)
		r.pos++
		return r.sleb33("block type heap type")
	}
	return r.sleb33("block type")
}

// sleb skips a signed LEB128 of at most maxBytes bytes.
func (r *reader) sleb(what string, maxBytes int) error {
	for i := 0; i < maxBytes; i++ {
		c, err := r.byte(what)
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return r.errf("%s is longer than %d bytes", what, maxBytes)
}

// memarg skips align (with the multi-memory flag, a memory index) and offset.
func (r *reader) memarg() error {
	align, err := r.u32("memarg alignment")
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.u32("memarg memory index"); err != nil {
			return err
		}
	}
	_, err = r.uleb("memarg offset", 64)
	return err
}

// prefixFC decodes a 0xFC instruction (saturating truncation, bulk memory, table
// operations) and reports whether it is table.grow.
func (r *reader) prefixFC() (tableGrow bool, err error) {
	sub, err := r.u32("0xfc sub-opcode")
	if err != nil {
		return false, err
	}
	idx := 0
	switch {
	case sub <= 7: // trunc_sat
	case sub == 9 || sub == 11 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
		idx = 1 // data.drop, memory.fill, elem.drop, table.grow/size/fill
	case sub == 8 || sub == 10 || sub == 12 || sub == 14:
		idx = 2 // memory.init, memory.copy, table.init, table.copy
	default:
		return false, r.errf("unknown opcode 0xfc %d", sub)
	}
	for i := 0; i < idx; i++ {
		if _, err := r.u32("0xfc immediate"); err != nil {
			return false, err
		}
	}
	return sub == 15, nil
}

// prefixFD decodes a SIMD instruction.
func (r *reader) prefixFD() error {
	sub, err := r.u32("0xfd sub-opcode")
	if err != nil {
		return err
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores
		return r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		_, err := r.bytesN(16, "v128 immediate")
		return err
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		_, err := r.byte("lane index")
		return err
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		if err := r.memarg(); err != nil {
			return err
		}
		_, err := r.byte("lane index")
		return err
	case sub <= 0xff:
		return nil
	}
	return r.errf("unknown opcode 0xfd %d", sub)
}

// prefixFE decodes an atomic (threads) instruction.
func (r *reader) prefixFE() error {
	sub, err := r.u32("0xfe sub-opcode")
	if err != nil {
		return err
	}
	switch {
	case sub == 3: // atomic.fence
		_, err := r.byte("atomic.fence flags")
		return err
	case sub <= 2 || (sub >= 0x10 && sub <= 0x4e):
		return r.memarg()
	}
	return r.errf("unknown opcode 0xfe %d", sub)
}
