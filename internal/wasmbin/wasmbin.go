// Package wasmbin reads and edits the section structure of WebAssembly binary
// modules (imports, exports, custom sections) without executing anything.
//
// It understands just enough of the binary format (core spec 1.0 plus the
// multi-memory, memory64, exception-handling tag and shared-memory limit flags) to
// audit a module's imports and to add, replace, read or strip custom sections such
// as the tool manifest ("openhuman.manifest") and a signature.
package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Magic is the first four bytes of every wasm binary module.
var Magic = []byte{0x00, 'a', 's', 'm'}

// Version1 is the only binary format version this package reads.
var Version1 = []byte{0x01, 0x00, 0x00, 0x00}

// ErrInvalid is wrapped by every error that reports a malformed module.
var ErrInvalid = errors.New("invalid wasm module")

// ErrTooManyEntries marks a module that declares more types, imports,
// functions or exports than any module may load with (the limits below):
// Parse refuses it from the section's count, before decoding an entry, so
// that no reader of a hostile file — the loader, `tools audit`, the signature
// check — spends memory on entries that can never load (issue 39: a 10.5 MB
// file of 3.5 M types took `tools audit` to 677 MB, 1.2 M imports to 2.9 GB).
var ErrTooManyEntries = errors.New("too many entries")

// The most entries of each kind a module may declare; package policy states
// them as its static limits (policy.MaxTypes and the rest), with the
// measurements behind them.
const (
	MaxTypes     = 10_000
	MaxImports   = 2_000
	MaxFunctions = 100_000
	MaxExports   = 10_000
	MaxTables    = 100
	MaxMemories  = 100
	// MaxCustomSections bounds custom sections (a toolchain writes a few:
	// name, producers, target_features; openhuman adds the manifest and the
	// signature).
	MaxCustomSections = 1_000
)

// Section ids of the binary format.
const (
	SectionCustom    byte = 0
	SectionType      byte = 1
	SectionImport    byte = 2
	SectionFunction  byte = 3
	SectionTable     byte = 4
	SectionMemory    byte = 5
	SectionGlobal    byte = 6
	SectionExport    byte = 7
	SectionStart     byte = 8
	SectionElement   byte = 9
	SectionCode      byte = 10
	SectionData      byte = 11
	SectionDataCount byte = 12
	SectionTag       byte = 13
)

// ExternKind is the kind of an import or export.
type ExternKind byte

// Extern kinds.
const (
	KindFunc   ExternKind = 0
	KindTable  ExternKind = 1
	KindMemory ExternKind = 2
	KindGlobal ExternKind = 3
	KindTag    ExternKind = 4
)

func (k ExternKind) String() string {
	switch k {
	case KindFunc:
		return "func"
	case KindTable:
		return "table"
	case KindMemory:
		return "memory"
	case KindGlobal:
		return "global"
	case KindTag:
		return "tag"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// ValType is a value type byte (0x7f i32, 0x7e i64, ...).
type ValType byte

// Value types.
const (
	I32       ValType = 0x7f
	I64       ValType = 0x7e
	F32       ValType = 0x7d
	F64       ValType = 0x7c
	V128      ValType = 0x7b
	FuncRef   ValType = 0x70
	ExternRef ValType = 0x6f
)

func (v ValType) String() string {
	switch v {
	case I32:
		return "i32"
	case I64:
		return "i64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	case V128:
		return "v128"
	case FuncRef:
		return "funcref"
	case ExternRef:
		return "externref"
	}
	return fmt.Sprintf("valtype(0x%02x)", byte(v))
}

// FuncType is a function signature.
type FuncType struct {
	Params  []ValType
	Results []ValType
}

func (f FuncType) String() string {
	var b bytes.Buffer
	b.WriteString("(")
	for i, p := range f.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
	}
	b.WriteString(") -> (")
	for i, r := range f.Results {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.String())
	}
	b.WriteString(")")
	return b.String()
}

// Equal reports whether two signatures are identical.
func (f FuncType) Equal(o FuncType) bool {
	return bytes.Equal(valBytes(f.Params), valBytes(o.Params)) && bytes.Equal(valBytes(f.Results), valBytes(o.Results))
}

func valBytes(v []ValType) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// Import is one entry of the import section.
type Import struct {
	Module string
	Name   string
	Kind   ExternKind
	// TypeIndex and Type are set for function (and tag) imports.
	TypeIndex uint32
	Type      FuncType
	// Global is the value type of a global import.
	Global ValType
}

// String renders the import as "module.name".
func (i Import) String() string { return i.Module + "." + i.Name }

// Export is one entry of the export section.
type Export struct {
	Name  string
	Kind  ExternKind
	Index uint32
}

// CustomSectionInfo is one custom section with its location in the module bytes.
type CustomSectionInfo struct {
	Name    string
	Payload []byte // aliases the parsed bytes
	// Offset is where the section (its id byte) starts; End is one past its last byte.
	Offset int
	// PayloadOffset is where Payload starts.
	PayloadOffset int
	End           int
}

// SectionCounts are the declared entry counts of the globals, element, data
// and tag sections (0 when absent) and the data count section's value.
type SectionCounts struct {
	Globals, Elements, Data, DataCount, Tags uint32
}

// Section is the location of one section of any kind.
type Section struct {
	ID     byte
	Offset int // where the id byte is
	Start  int // where the contents start
	End    int // one past the last byte
}

// Module is the parsed outline of a module.
type Module struct {
	Sections       []Section
	Types          []FuncType
	Imports        []Import
	Exports        []Export
	CustomSections []CustomSectionInfo
	// FuncTypeIndices are the type indices of the module's own (non-imported) functions.
	FuncTypeIndices []uint32
	// Memories are the declared limits (in 64 KiB pages) of every memory, imported first.
	Memories []Limits
	// Tables are the declared tables (limits in entries), imported first.
	Tables []Table
	// Counts are the entry counts of the sections not decoded here (each
	// section's leading vector length), for the static limits.
	Counts SectionCounts
	// Start is the index of the start function, or -1 when there is none.
	Start int64

	// The code section, decoded on demand by Code.
	code               *codeScan
	codeBytes          []byte
	codeStart, codeEnd int
}

// ImportedFuncCount is the number of function imports (they come first in the function index space).
func (m *Module) ImportedFuncCount() int {
	n := 0
	for _, im := range m.Imports {
		if im.Kind == KindFunc {
			n++
		}
	}
	return n
}

// Export returns the export with the given name.
func (m *Module) Export(name string) (Export, bool) {
	for _, e := range m.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}

// ExportFuncType returns the signature of an exported function.
func (m *Module) ExportFuncType(name string) (FuncType, bool) {
	e, ok := m.Export(name)
	if !ok || e.Kind != KindFunc {
		return FuncType{}, false
	}
	idx := int(e.Index)
	nimp := 0
	for _, im := range m.Imports {
		if im.Kind == KindFunc {
			if nimp == idx {
				return im.Type, true
			}
			nimp++
		}
	}
	local := idx - nimp
	if local < 0 || local >= len(m.FuncTypeIndices) {
		return FuncType{}, false
	}
	ti := m.FuncTypeIndices[local]
	if int(ti) >= len(m.Types) {
		return FuncType{}, false
	}
	return m.Types[ti], true
}

// Custom returns the payload of the last custom section with the given name.
func (m *Module) Custom(name string) ([]byte, bool) {
	for i := len(m.CustomSections) - 1; i >= 0; i-- {
		if m.CustomSections[i].Name == name {
			return m.CustomSections[i].Payload, true
		}
	}
	return nil, false
}

// reader is a bounds-checked cursor over module bytes; every read reports the
// absolute byte offset on failure.
type reader struct {
	b   []byte
	pos int
	end int
	// scan, set while decoding a function body, collects the features and
	// calls the body uses (code.go).
	scan *bodyScan
}

func (r *reader) errf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %d", ErrInvalid, fmt.Sprintf(format, args...), r.pos)
}

func (r *reader) byte(what string) (byte, error) {
	if r.pos >= r.end {
		return 0, r.errf("truncated %s", what)
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) uleb(what string, maxBits uint) (uint64, error) {
	var v uint64
	var shift uint
	start := r.pos
	for {
		if r.pos >= r.end {
			r.pos = start
			return 0, r.errf("truncated %s", what)
		}
		c := r.b[r.pos]
		r.pos++
		if shift >= maxBits || (shift+7 > maxBits && uint64(c&0x7f)>>(maxBits-shift) != 0) {
			r.pos = start
			return 0, r.errf("%s overflows %d bits", what, maxBits)
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
		shift += 7
	}
}

func (r *reader) u32(what string) (uint32, error) {
	v, err := r.uleb(what, 32)
	return uint32(v), err
}

// sleb33 skips a signed LEB128 of up to 33 bits (heap types).
func (r *reader) sleb33(what string) error {
	for i := 0; i < 5; i++ {
		c, err := r.byte(what)
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return r.errf("%s overflows 33 bits", what)
}

func (r *reader) bytesN(n uint32, what string) ([]byte, error) {
	if uint64(n) > uint64(r.end-r.pos) {
		return nil, r.errf("truncated %s: %d bytes declared, %d left", what, n, r.end-r.pos)
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

func (r *reader) name(what string) (string, error) {
	n, err := r.u32(what + " length")
	if err != nil {
		return "", err
	}
	at := r.pos
	s, err := r.bytesN(n, what)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(s) {
		return "", fmt.Errorf("%w: %s is not valid UTF-8 at byte %d", ErrInvalid, what, at)
	}
	return string(s), nil
}

// count reads a vector length and rejects counts that cannot fit in the remaining
// bytes (each element takes at least minSize bytes), so a hostile count cannot make
// the parser allocate gigabytes.
func (r *reader) count(what string, minSize int) (int, error) {
	n, err := r.u32(what + " count")
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minSize) > uint64(r.end-r.pos) {
		return 0, r.errf("%s count %d exceeds the %d bytes left in the section", what, n, r.end-r.pos)
	}
	return int(n), nil
}

// bounded is count for the entries of a section whose number is limited:
// more than limit is ErrTooManyEntries, worded as the static limit is.
func (r *reader) bounded(what, plural string, minSize, limit int) (int, error) {
	n, err := r.count(what, minSize)
	if err != nil {
		return 0, err
	}
	if n > limit {
		return 0, fmt.Errorf("%w: the module declares %d %s; the limit is %d (each costs host memory outside memory_mib)", ErrTooManyEntries, n, plural, limit)
	}
	return n, nil
}

func (r *reader) valType(what string) (ValType, error) {
	c, err := r.byte(what)
	if err != nil {
		return 0, err
	}
	switch ValType(c) {
	case I32, I64, F32, F64, V128, FuncRef, ExternRef:
		return ValType(c), nil
	case 0x63, 0x64: // (ref null? ht) from the function-references proposal
		if err := r.sleb33(what + " heap type"); err != nil {
			return 0, err
		}
		return ValType(c), nil
	}
	r.pos--
	return 0, r.errf("unknown %s 0x%02x", what, c)
}

// Limits are the declared limits of a memory or table (pages or entries).
type Limits struct {
	Min    uint64
	Max    uint64
	HasMax bool
	// Shared (threads proposal) and Is64 (memory64) are the limit flags 0x02
	// and 0x04.
	Shared, Is64 bool
}

func (r *reader) readLimits(what string) (Limits, error) {
	var l Limits
	flags, err := r.byte(what + " flags")
	if err != nil {
		return l, err
	}
	if flags > 0x07 {
		r.pos--
		return l, r.errf("unknown %s flags 0x%02x", what, flags)
	}
	bits := uint(32)
	l.Shared = flags&0x02 != 0
	if flags&0x04 != 0 {
		bits = 64
		l.Is64 = true
	}
	if l.Min, err = r.uleb(what+" minimum", bits); err != nil {
		return l, err
	}
	if flags&0x01 != 0 {
		if l.Max, err = r.uleb(what+" maximum", bits); err != nil {
			return l, err
		}
		l.HasMax = true
	}
	return l, nil
}

// parseMemories reads the memory section's declared limits.
func parseMemories(r *reader, m *Module) error {
	n, err := r.bounded("memory", "memories", 2, MaxMemories)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		l, err := r.readLimits("memory limits")
		if err != nil {
			return err
		}
		m.Memories = append(m.Memories, l)
	}
	return nil
}

// Parse reads a module's section outline: types, imports, function types, exports
// and custom sections. It never executes anything and never panics on bad input;
// a malformed module gives an error wrapping ErrInvalid that names the byte offset.
func Parse(b []byte) (*Module, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes is too short for a wasm header (need 8)", ErrInvalid, len(b))
	}
	if !bytes.Equal(b[:4], Magic) {
		return nil, fmt.Errorf("%w: bad magic % x (want 00 61 73 6d: \"\\0asm\"); is this a wasm file?", ErrInvalid, b[:4])
	}
	if !bytes.Equal(b[4:8], Version1) {
		return nil, fmt.Errorf("%w: unsupported binary version % x (want 01 00 00 00)", ErrInvalid, b[4:8])
	}
	m := &Module{Start: -1}
	r := &reader{b: b, pos: 8, end: len(b)}
	var lastID byte
	for r.pos < r.end {
		off := r.pos
		id, _ := r.byte("section id")
		size, err := r.u32("section size")
		if err != nil {
			return nil, err
		}
		start := r.pos
		if uint64(size) > uint64(r.end-start) {
			return nil, fmt.Errorf("%w: truncated section %d at byte %d: %d bytes declared, %d left", ErrInvalid, id, off, size, r.end-start)
		}
		end := start + int(size)
		if id > SectionTag {
			return nil, fmt.Errorf("%w: unknown section id %d at byte %d", ErrInvalid, id, off)
		}
		if id != SectionCustom {
			if order(id) <= order(lastID) && lastID != 0 {
				return nil, fmt.Errorf("%w: section %d at byte %d is out of order or repeated", ErrInvalid, id, off)
			}
			lastID = id
		}
		m.Sections = append(m.Sections, Section{ID: id, Offset: off, Start: start, End: end})
		sr := &reader{b: b, pos: start, end: end}
		switch id {
		case SectionCustom:
			if len(m.CustomSections) >= MaxCustomSections {
				return nil, fmt.Errorf("%w: the module has more than %d custom sections; the limit is %d", ErrTooManyEntries, MaxCustomSections, MaxCustomSections)
			}
			name, err := sr.name("custom section name")
			if err != nil {
				return nil, err
			}
			m.CustomSections = append(m.CustomSections, CustomSectionInfo{
				Name: name, Payload: b[sr.pos:end:end], Offset: off, PayloadOffset: sr.pos, End: end,
			})
			sr.pos = end
		case SectionType:
			err = parseTypes(sr, m)
		case SectionImport:
			err = parseImports(sr, m)
		case SectionFunction:
			err = parseFunctions(sr, m)
		case SectionExport:
			err = parseExports(sr, m)
		case SectionMemory:
			err = parseMemories(sr, m)
		case SectionTable:
			err = parseTables(sr, m)
		case SectionCode:
			m.code, m.codeBytes, m.codeStart, m.codeEnd = &codeScan{}, b, start, end
			sr.pos = end // decoded on demand (Module.Code)
		case SectionGlobal, SectionElement, SectionData, SectionDataCount, SectionTag, SectionStart:
			var n uint32
			if n, err = sr.u32("section entry count"); err != nil {
				break
			}
			switch id {
			case SectionGlobal:
				m.Counts.Globals = n
			case SectionElement:
				m.Counts.Elements = n
			case SectionData:
				m.Counts.Data = n
			case SectionDataCount:
				m.Counts.DataCount = n
			case SectionTag:
				m.Counts.Tags = n
			case SectionStart:
				m.Start = int64(n)
			}
			if id != SectionStart && id != SectionDataCount {
				sr.pos = end // the entries are not needed for auditing
			}
		default:
			sr.pos = end // other sections are not needed for auditing
		}
		if err != nil {
			return nil, err
		}
		if sr.pos != end {
			return nil, fmt.Errorf("%w: section %d at byte %d has %d unread trailing bytes", ErrInvalid, id, off, end-sr.pos)
		}
		r.pos = end
	}
	return m, nil
}

// order gives the required position of a non-custom section (data count and tag
// sections sit between others).
func order(id byte) int {
	switch id {
	case SectionTag:
		return 55 // after memory (5), before global (6)
	case SectionDataCount:
		return 95 // after element (9), before code (10)
	}
	return int(id) * 10
}

func parseTypes(r *reader, m *Module) error {
	n, err := r.bounded("type", "types", 3, MaxTypes)
	if err != nil {
		return err
	}
	m.Types = make([]FuncType, 0, n)
	for i := 0; i < n; i++ {
		form, err := r.byte("type form")
		if err != nil {
			return err
		}
		if form != 0x60 {
			r.pos--
			return r.errf("unsupported type form 0x%02x (only function types 0x60 are understood)", form)
		}
		var ft FuncType
		for _, list := range []*[]ValType{&ft.Params, &ft.Results} {
			k, err := r.count("value type", 1)
			if err != nil {
				return err
			}
			*list = make([]ValType, 0, k)
			for j := 0; j < k; j++ {
				v, err := r.valType("value type")
				if err != nil {
					return err
				}
				*list = append(*list, v)
			}
		}
		m.Types = append(m.Types, ft)
	}
	return nil
}

func parseImports(r *reader, m *Module) error {
	n, err := r.bounded("import", "imports", 4, MaxImports)
	if err != nil {
		return err
	}
	m.Imports = make([]Import, 0, n)
	for i := 0; i < n; i++ {
		var im Import
		if im.Module, err = r.name("import module name"); err != nil {
			return err
		}
		if im.Name, err = r.name("import field name"); err != nil {
			return err
		}
		k, err := r.byte("import kind")
		if err != nil {
			return err
		}
		im.Kind = ExternKind(k)
		switch im.Kind {
		case KindFunc:
			if im.TypeIndex, err = r.u32("import type index"); err != nil {
				return err
			}
		case KindTable:
			t, err := r.tableType()
			if err != nil {
				return err
			}
			m.Tables = append(m.Tables, t)
		case KindMemory:
			l, err := r.readLimits("memory limits")
			if err != nil {
				return err
			}
			m.Memories = append(m.Memories, l)
		case KindGlobal:
			if im.Global, err = r.valType("global type"); err != nil {
				return err
			}
			mut, err := r.byte("global mutability")
			if err != nil {
				return err
			}
			if mut > 1 {
				r.pos--
				return r.errf("bad global mutability %d", mut)
			}
		case KindTag:
			if _, err := r.byte("tag attribute"); err != nil {
				return err
			}
			if im.TypeIndex, err = r.u32("tag type index"); err != nil {
				return err
			}
		default:
			r.pos--
			return r.errf("unknown import kind %d for %s.%s", k, im.Module, im.Name)
		}
		if im.Kind == KindFunc || im.Kind == KindTag {
			if int(im.TypeIndex) >= len(m.Types) {
				return r.errf("import %s.%s uses type %d but the module declares %d types", im.Module, im.Name, im.TypeIndex, len(m.Types))
			}
			im.Type = m.Types[im.TypeIndex]
		}
		m.Imports = append(m.Imports, im)
	}
	return nil
}

func parseFunctions(r *reader, m *Module) error {
	n, err := r.bounded("function", "functions", 1, MaxFunctions)
	if err != nil {
		return err
	}
	m.FuncTypeIndices = make([]uint32, 0, n)
	for i := 0; i < n; i++ {
		ti, err := r.u32("function type index")
		if err != nil {
			return err
		}
		if int(ti) >= len(m.Types) {
			return r.errf("function %d uses type %d but the module declares %d types", i, ti, len(m.Types))
		}
		m.FuncTypeIndices = append(m.FuncTypeIndices, ti)
	}
	return nil
}

func parseExports(r *reader, m *Module) error {
	n, err := r.bounded("export", "exports", 3, MaxExports)
	if err != nil {
		return err
	}
	m.Exports = make([]Export, 0, n)
	for i := 0; i < n; i++ {
		var e Export
		if e.Name, err = r.name("export name"); err != nil {
			return err
		}
		k, err := r.byte("export kind")
		if err != nil {
			return err
		}
		if k > byte(KindTag) {
			r.pos--
			return r.errf("unknown export kind %d for %q", k, e.Name)
		}
		e.Kind = ExternKind(k)
		if e.Index, err = r.u32("export index"); err != nil {
			return err
		}
		m.Exports = append(m.Exports, e)
	}
	return nil
}

// CustomSection returns the payload of the last custom section named name in mod.
// found is false when there is none; err is set when mod is not a valid module.
func CustomSection(mod []byte, name string) (payload []byte, found bool, err error) {
	m, err := Parse(mod)
	if err != nil {
		return nil, false, err
	}
	p, ok := m.Custom(name)
	return p, ok, nil
}

// StripCustomSection returns a copy of mod without any custom section named name.
// Other bytes are kept exactly, so the result of stripping a section that
// SetCustomSection appended equals the module before it was appended.
func StripCustomSection(mod []byte, name string) ([]byte, error) {
	m, err := Parse(mod)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(mod))
	prev := 0
	for _, cs := range m.CustomSections {
		if cs.Name != name {
			continue
		}
		out = append(out, mod[prev:cs.Offset]...)
		prev = cs.End
	}
	out = append(out, mod[prev:]...)
	return out, nil
}

// SetCustomSection returns a copy of mod with every custom section named name
// removed and one new custom section (name, payload) appended at the end.
func SetCustomSection(mod []byte, name string, payload []byte) ([]byte, error) {
	if !utf8.ValidString(name) {
		return nil, fmt.Errorf("custom section name %q is not valid UTF-8", name)
	}
	stripped, err := StripCustomSection(mod, name)
	if err != nil {
		return nil, err
	}
	return AppendCustomSection(stripped, name, payload), nil
}

// AppendCustomSection appends a custom section to mod without checking mod or
// removing existing sections of the same name.
func AppendCustomSection(mod []byte, name string, payload []byte) []byte {
	var content []byte
	content = AppendULEB(content, uint64(len(name)))
	content = append(content, name...)
	size := len(content) + len(payload)
	out := make([]byte, 0, len(mod)+1+5+size)
	out = append(out, mod...)
	out = append(out, SectionCustom)
	out = AppendULEB(out, uint64(size))
	out = append(out, content...)
	out = append(out, payload...)
	return out
}

// AppendULEB appends v to b in unsigned LEB128, as WebAssembly encodes
// counts, sizes and indices.
func AppendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
		} else {
			return append(b, c)
		}
	}
}
