package wasmbin

// Builder assembles small, valid modules byte by byte: function imports, one
// memory, functions with raw bodies, exports. Tests and examples use it to make
// hostile or minimal modules without a toolchain.
type Builder struct {
	types   []FuncType
	imports []Import
	funcs   []builtFunc
	table   *Table
	memory  *uint32 // minimum pages
	exports []Export
}

type builtFunc struct {
	typ       uint32
	locals    uint32 // number of locals of localType
	localType ValType
	body      []byte // instructions, without locals and without the final 0x0b
}

func (b *Builder) typeIndex(ft FuncType) uint32 {
	for i, t := range b.types {
		if t.Equal(ft) {
			return uint32(i)
		}
	}
	b.types = append(b.types, ft)
	return uint32(len(b.types) - 1)
}

// ImportFunc adds a function import and returns its function index. All imports
// must be added before any Func.
func (b *Builder) ImportFunc(module, name string, ft FuncType) uint32 {
	b.imports = append(b.imports, Import{Module: module, Name: name, Kind: KindFunc, TypeIndex: b.typeIndex(ft), Type: ft})
	return uint32(len(b.imports) - 1)
}

// Memory declares one memory of min pages and exports it as "memory".
func (b *Builder) Memory(min uint32) {
	b.memory = &min
	b.exports = append(b.exports, Export{Name: "memory", Kind: KindMemory, Index: 0})
}

// Func adds a function with the given instruction bytes (no locals; the final end
// opcode is added) and exports it under export when export is not empty. It
// returns the function index.
func (b *Builder) Func(export string, ft FuncType, body []byte) uint32 {
	b.funcs = append(b.funcs, builtFunc{typ: b.typeIndex(ft), body: body})
	idx := uint32(len(b.imports) + len(b.funcs) - 1)
	if export != "" {
		b.exports = append(b.exports, Export{Name: export, Kind: KindFunc, Index: idx})
	}
	return idx
}

// FuncWithLocals is Func with n locals of type t declared.
func (b *Builder) FuncWithLocals(export string, ft FuncType, n uint32, t ValType, body []byte) uint32 {
	idx := b.Func(export, ft, body)
	b.funcs[len(b.funcs)-1].locals, b.funcs[len(b.funcs)-1].localType = n, t
	return idx
}

// Table declares one funcref table of min entries, with a maximum when hasMax.
func (b *Builder) Table(min, max uint32, hasMax bool) {
	b.table = &Table{Elem: FuncRef, Limits: Limits{Min: uint64(min), Max: uint64(max), HasMax: hasMax}}
}

// Bytes encodes the module.
func (b *Builder) Bytes() []byte {
	out := append(append([]byte{}, Magic...), Version1...)
	section := func(id byte, content []byte) {
		out = append(out, id)
		out = AppendULEB(out, uint64(len(content)))
		out = append(out, content...)
	}
	name := func(c []byte, s string) []byte {
		c = AppendULEB(c, uint64(len(s)))
		return append(c, s...)
	}
	if len(b.types) > 0 {
		c := AppendULEB(nil, uint64(len(b.types)))
		for _, t := range b.types {
			c = append(c, 0x60)
			c = AppendULEB(c, uint64(len(t.Params)))
			c = append(c, valBytes(t.Params)...)
			c = AppendULEB(c, uint64(len(t.Results)))
			c = append(c, valBytes(t.Results)...)
		}
		section(SectionType, c)
	}
	if len(b.imports) > 0 {
		c := AppendULEB(nil, uint64(len(b.imports)))
		for _, im := range b.imports {
			c = name(c, im.Module)
			c = name(c, im.Name)
			c = append(c, byte(KindFunc))
			c = AppendULEB(c, uint64(im.TypeIndex))
		}
		section(SectionImport, c)
	}
	if len(b.funcs) > 0 {
		c := AppendULEB(nil, uint64(len(b.funcs)))
		for _, f := range b.funcs {
			c = AppendULEB(c, uint64(f.typ))
		}
		section(SectionFunction, c)
	}
	if b.table != nil {
		c := []byte{1, byte(b.table.Elem)}
		if b.table.HasMax {
			c = append(c, 1)
			c = AppendULEB(c, b.table.Min)
			c = AppendULEB(c, b.table.Max)
		} else {
			c = append(c, 0)
			c = AppendULEB(c, b.table.Min)
		}
		section(SectionTable, c)
	}
	if b.memory != nil {
		c := []byte{1, 0}
		c = AppendULEB(c, uint64(*b.memory))
		section(SectionMemory, c)
	}
	if len(b.exports) > 0 {
		c := AppendULEB(nil, uint64(len(b.exports)))
		for _, e := range b.exports {
			c = name(c, e.Name)
			c = append(c, byte(e.Kind))
			c = AppendULEB(c, uint64(e.Index))
		}
		section(SectionExport, c)
	}
	if len(b.funcs) > 0 {
		c := AppendULEB(nil, uint64(len(b.funcs)))
		for _, f := range b.funcs {
			body := []byte{0} // zero local declarations
			if f.locals > 0 {
				body = AppendULEB([]byte{1}, uint64(f.locals))
				body = append(body, byte(f.localType))
			}
			body = append(body, f.body...)
			body = append(body, 0x0b)
			c = AppendULEB(c, uint64(len(body)))
			c = append(c, body...)
		}
		section(SectionCode, c)
	}
	return out
}
