// Command gen writes internal/analysis/fts5tables.go: the character tables of
// SQLite's FTS5 unicode61 tokenizer (which code points are token characters and
// what each folds to with remove_diacritics 2), read from the very SQLite the
// module links. modernc.org/sqlite ships SQLite as Go translated from C; its lib
// package holds fts5_unicode2.c's tables (aFts5UnicodeBlock, aFts5UnicodeMap,
// aFts5UnicodeData for categories; aEntry and aiOff for case folding; aDia and
// aChar, local to fts5_remove_diacritic, for diacritics). gen parses them, applies
// SQLite's lookup rules (restated below from fts5_unicode2.c) to every code point
// and writes the results as flat two-stage tables the analyzer reads in O(1).
//
// Run it from internal/analysis after changing the modernc.org/sqlite version:
//
//	go generate ./internal/analysis
//
// internal/memtree's TestFTSTokenizerEveryCodePoint then proves the tables (and
// the analyzer around them) equal to FTS5 itself, code point by code point.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("out", "fts5tables.go", "the Go file to write")
	flag.Parse()
	dir, version, err := sqliteModule()
	if err != nil {
		log.Fatal(err)
	}
	t, err := readTables(filepath.Join(dir, "lib"))
	if err != nil {
		log.Fatalf("reading FTS5's tables from %s: %v", dir, err)
	}
	src, err := render(t, version)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// sqliteModule returns the directory and version of modernc.org/sqlite as the
// current module requires it.
func sqliteModule() (dir, version string, err error) {
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "modernc.org/sqlite").Output()
	if err != nil {
		return "", "", fmt.Errorf("go list -m modernc.org/sqlite: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] == "" {
		return "", "", fmt.Errorf("go list -m modernc.org/sqlite: unexpected output %q (is the module downloaded?)", b)
	}
	return f[0], f[1], nil
}

// tables are fts5_unicode2.c's arrays.
type tables struct {
	block, umap, data []uint32 // aFts5UnicodeBlock, aFts5UnicodeMap, aFts5UnicodeData
	entry             [][3]uint32
	off               []uint32 // aiOff
	dia, char         []uint32 // aDia, aChar
}

// readTables finds the arrays in the translated SQLite of lib.
func readTables(lib string) (*tables, error) {
	want := map[string]*[]uint32{}
	t := &tables{}
	want["_aFts5UnicodeBlock"] = &t.block
	want["_aFts5UnicodeMap"] = &t.umap
	want["_aFts5UnicodeData"] = &t.data
	want["_aiOff"] = &t.off
	files, err := filepath.Glob(filepath.Join(lib, "*.go"))
	if err != nil {
		return nil, err
	}
	haveEntry, haveDia := false, false
	for _, f := range files {
		if strings.Contains(filepath.Base(f), "windows") {
			continue // the same tables, in files for other targets
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(b, []byte("var _aFts5UnicodeData")) && !bytes.Contains(b, []byte("func _fts5_remove_diacritic(")) {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, b, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
						continue
					}
					name := vs.Names[0].Name
					lit, ok := vs.Values[0].(*ast.CompositeLit)
					if !ok {
						continue
					}
					if p := want[name]; p != nil && *p == nil {
						if *p, err = array(lit); err != nil {
							return nil, fmt.Errorf("%s: %w", name, err)
						}
					}
					if name == "_aEntry" && !haveEntry {
						if t.entry, err = entries(lit); err != nil {
							return nil, fmt.Errorf("%s: %w", name, err)
						}
						haveEntry = true
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name != "_fts5_remove_diacritic" || haveDia {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					as, ok := n.(*ast.AssignStmt)
					if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
						return true
					}
					id, ok := as.Lhs[0].(*ast.Ident)
					lit, ok2 := as.Rhs[0].(*ast.CompositeLit)
					if !ok || !ok2 {
						return true
					}
					switch id.Name {
					case "aDia":
						t.dia, err = array(lit)
					case "aChar":
						t.char, err = array(lit)
					}
					return err == nil
				})
				if err != nil {
					return nil, fmt.Errorf("fts5_remove_diacritic: %w", err)
				}
				haveDia = true
			}
		}
	}
	for name, p := range want {
		if *p == nil {
			return nil, fmt.Errorf("%s not found", name)
		}
	}
	if !haveEntry || t.dia == nil || t.char == nil {
		return nil, fmt.Errorf("aEntry, aDia or aChar not found")
	}
	if len(t.umap) != len(t.data) || len(t.dia) != len(t.char) || len(t.block) != 17 {
		return nil, fmt.Errorf("tables of unexpected sizes: map %d, data %d, dia %d, char %d, block %d",
			len(t.umap), len(t.data), len(t.dia), len(t.char), len(t.block))
	}
	return t, nil
}

// array evaluates a translated C array literal ([N]T{i: v, …}; missing indexes are 0).
func array(lit *ast.CompositeLit) ([]uint32, error) {
	at, ok := lit.Type.(*ast.ArrayType)
	if !ok {
		return nil, fmt.Errorf("not an array literal")
	}
	n, err := eval(at.Len)
	if err != nil {
		return nil, fmt.Errorf("length: %w", err)
	}
	a := make([]uint32, n)
	next := uint32(0)
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if next, err = eval(kv.Key); err != nil {
				return nil, err
			}
			e = kv.Value
		}
		v, err := eval(e)
		if err != nil {
			return nil, err
		}
		if next >= n {
			return nil, fmt.Errorf("index %d out of %d", next, n)
		}
		a[next] = v
		next++
	}
	return a, nil
}

// entries evaluates aEntry: {iCode, flags, nRange} per element.
func entries(lit *ast.CompositeLit) ([][3]uint32, error) {
	at, ok := lit.Type.(*ast.ArrayType)
	if !ok {
		return nil, fmt.Errorf("not an array literal")
	}
	n, err := eval(at.Len)
	if err != nil {
		return nil, err
	}
	a := make([][3]uint32, n)
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return nil, fmt.Errorf("element without index")
		}
		i, err := eval(kv.Key)
		if err != nil {
			return nil, err
		}
		fields, ok := kv.Value.(*ast.CompositeLit)
		if !ok || i >= n {
			return nil, fmt.Errorf("element %d: not a struct literal", i)
		}
		for _, f := range fields.Elts {
			fkv, ok := f.(*ast.KeyValueExpr)
			if !ok {
				return nil, fmt.Errorf("element %d: unnamed field", i)
			}
			v, err := eval(fkv.Value)
			if err != nil {
				return nil, err
			}
			switch fkv.Key.(*ast.Ident).Name {
			case "FiCode":
				a[i][0] = v
			case "Fflags":
				a[i][1] = v
			case "FnRange":
				a[i][2] = v
			default:
				return nil, fmt.Errorf("element %d: unknown field", i)
			}
		}
	}
	return a, nil
}

// eval computes the constant expressions of the translated tables: integer and
// character literals, conversions (uint16(x), libc.Uint8FromInt32(x), …) and |.
func eval(e ast.Expr) (uint32, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		switch e.Kind {
		case token.INT:
			v, err := strconv.ParseUint(e.Value, 0, 32)
			return uint32(v), err
		case token.CHAR:
			s, err := strconv.Unquote(e.Value)
			if err != nil || len(s) != 1 {
				return 0, fmt.Errorf("character %s", e.Value)
			}
			return uint32(s[0]), nil
		}
	case *ast.ParenExpr:
		return eval(e.X)
	case *ast.CallExpr:
		if len(e.Args) == 1 {
			return eval(e.Args[0])
		}
	case *ast.BinaryExpr:
		if e.Op == token.OR {
			a, err := eval(e.X)
			if err != nil {
				return 0, err
			}
			b, err := eval(e.Y)
			return a | b, err
		}
	}
	return 0, fmt.Errorf("unexpected expression at %d", e.Pos())
}

// category is sqlite3Fts5UnicodeCategory: the general category index of c (0 for
// code points the table does not list, and for every code point from U+100000).
func (t *tables) category(c uint32) uint32 {
	if c >= 1<<20 {
		return 0
	}
	lo, hi := int(t.block[c>>16]), int(t.block[1+c>>16])
	key := c & 0xFFFF
	res := -1
	for hi > lo {
		mid := (hi + lo) / 2
		if key >= t.umap[mid] {
			res, lo = mid, mid+1
		} else {
			hi = mid
		}
	}
	if res < 0 || key >= t.umap[res]+t.data[res]>>5 {
		return 0
	}
	cat := t.data[res] & 0x1F
	if cat != 30 {
		return cat
	}
	if (key-t.umap[res])&1 != 0 { // "LC": Lu and Ll alternating
		return 5
	}
	return 9
}

// tokenCategories are the categories unicode61 makes token characters by default
// ("L* N* Co"), indexed as sqlite3Fts5UnicodeCatParse indexes them; index 0 (a
// code point the table does not list) is always a token character.
var tokenCategories = map[uint32]bool{
	0: true,
	5: true, 6: true, 7: true, 8: true, 9: true, 30: true, // Ll Lm Lo Lt Lu LC
	13: true, 14: true, 15: true, // Nd Nl No
	31: true, // Co
}

// fold is sqlite3Fts5UnicodeFold(c, 2) for c ≥ 128: the lower case of c, then its
// letter without diacritics (0 for a diacritic itself).
func (t *tables) fold(c uint32) uint32 {
	if c >= 65536 {
		if c >= 66560 && c < 66600 { // Deseret
			return c + 40
		}
		return c
	}
	ret := c
	res := -1
	for lo, hi := 0, len(t.entry)-1; hi >= lo; {
		mid := (hi + lo) / 2
		if int(c)-int(t.entry[mid][0]) >= 0 {
			res, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	if res >= 0 {
		e := t.entry[res]
		if c < e[0]+e[2] && (e[1]&1)&(e[0]^c) == 0 {
			ret = (c + t.off[e[1]>>1]) & 0xFFFF
		}
	}
	return t.removeDiacritic(ret)
}

// removeDiacritic is fts5_remove_diacritic(c, bComplex=1).
func (t *tables) removeDiacritic(c uint32) uint32 {
	key := c<<3 | 7
	res := 0
	for lo, hi := 0, len(t.dia)-1; hi >= lo; {
		mid := (hi + lo) / 2
		if key >= t.dia[mid] {
			res, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	if c > t.dia[res]>>3+t.dia[res]&7 {
		return c
	}
	return t.char[res] & 0x7F
}

const (
	tokenBlockBits = 8 // code points per token-table block: 1<<8
	planeLimit     = 1 << 20
)

func render(t *tables, version string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by go run ./gen (internal/analysis/gen) from the FTS5 tables of\n")
	fmt.Fprintf(&b, "// modernc.org/sqlite %s; DO NOT EDIT.\n\npackage analysis\n\n", version)

	// Token characters: a bit per code point below U+100000 (all above are token
	// characters), in blocks of 256 shared between equal blocks.
	type block [1 << tokenBlockBits / 64]uint64
	var blocks []block
	seen := map[block]int{}
	index := make([]int, planeLimit>>tokenBlockBits)
	for bi := range index {
		var bl block
		for i := 0; i < 1<<tokenBlockBits; i++ {
			c := uint32(bi<<tokenBlockBits + i)
			if tokenCategories[t.category(c)] {
				bl[i/64] |= 1 << (i % 64)
			}
		}
		k, ok := seen[bl]
		if !ok {
			k = len(blocks)
			seen[bl] = k
			blocks = append(blocks, bl)
		}
		index[bi] = k
	}
	if len(blocks) > 1<<16 {
		return nil, fmt.Errorf("%d token blocks do not fit uint16 indexes", len(blocks))
	}
	fmt.Fprintf(&b, "// tokenIndex maps a code point below U+100000, shifted right by %d, to its\n", tokenBlockBits)
	fmt.Fprintf(&b, "// block of tokenBits, where bit c&%d says whether unicode61 (categories\n", 1<<tokenBlockBits-1)
	fmt.Fprintf(&b, "// \"L* N* Co\", and every code point its table does not list) keeps it in words.\n")
	fmt.Fprintf(&b, "var tokenIndex = [%d]uint16{", len(index))
	for i, k := range index {
		if i%16 == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d,", k)
	}
	b.WriteString("\n}\n\n")
	fmt.Fprintf(&b, "var tokenBits = [%d][%d]uint64{\n", len(blocks), len(block{}))
	for _, bl := range blocks {
		b.WriteString("{")
		for _, w := range bl {
			fmt.Fprintf(&b, "%#x,", w)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n\n")

	// Folding: the BMP in pages of 256; pages where nothing changes are left out.
	var pages [][256]uint16
	var pageIndex [256]uint8
	for p := 0; p < 256; p++ {
		var pg [256]uint16
		changed := false
		for i := 0; i < 256; i++ {
			c := uint32(p<<8 + i)
			f := c
			if c >= 128 {
				f = t.fold(c)
			} else if 'A' <= c && c <= 'Z' {
				f = c + 32
			}
			if f > 0xFFFF {
				return nil, fmt.Errorf("U+%04X folds outside the BMP", c)
			}
			pg[i] = uint16(f)
			changed = changed || f != c
		}
		if !changed {
			pageIndex[p] = 0xFF
			continue
		}
		if len(pages) == 0xFF {
			return nil, fmt.Errorf("too many fold pages")
		}
		pageIndex[p] = uint8(len(pages))
		pages = append(pages, pg)
	}
	fmt.Fprintf(&b, "// foldIndex maps a BMP code point, shifted right by 8, to its page of foldPages\n")
	fmt.Fprintf(&b, "// (noFold: the page folds every code point to itself). foldPages hold what\n")
	fmt.Fprintf(&b, "// sqlite3Fts5UnicodeFold(c, 2) gives: the lower case without diacritics, 0 for\n")
	fmt.Fprintf(&b, "// a diacritic.\n")
	fmt.Fprintf(&b, "var foldIndex = [256]uint8{")
	for i, k := range pageIndex {
		if i%16 == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d,", k)
	}
	b.WriteString("\n}\n\n")
	fmt.Fprintf(&b, "const noFold = 0xFF\n\n")
	fmt.Fprintf(&b, "var foldPages = [%d][256]uint16{\n", len(pages))
	for _, pg := range pages {
		b.WriteString("{")
		for i, v := range pg {
			if i%16 == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%#04x,", v)
		}
		b.WriteString("\n},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
