package wasmbin

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

var (
	sigHost = FuncType{Params: []ValType{I32, I32}, Results: []ValType{I64}}
	sigLog  = FuncType{Params: []ValType{I32, I32, I32}}
	sigOne  = FuncType{Params: []ValType{I32}, Results: []ValType{I32}}
)

func sample() []byte {
	var b Builder
	b.ImportFunc("openhuman", "memory_search", sigHost)
	b.ImportFunc("openhuman", "log", sigLog)
	b.ImportFunc("wasi_snapshot_preview1", "path_open", FuncType{Params: []ValType{I32, I32, I32, I32, I32, I64, I64, I32, I32}, Results: []ValType{I32}})
	b.Memory(1)
	b.Func("oh_alloc", sigOne, []byte{0x41, 0x10}) // i32.const 16
	b.Func("oh_call", sigHost, []byte{0x42, 0x00}) // i64.const 0
	return b.Bytes()
}

func TestParseBuiltModule(t *testing.T) {
	mod := sample()
	m, err := Parse(mod)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Imports) != 3 {
		t.Fatalf("imports = %d, want 3", len(m.Imports))
	}
	if got := m.Imports[0].String(); got != "openhuman.memory_search" {
		t.Errorf("import 0 = %q", got)
	}
	if !m.Imports[0].Type.Equal(sigHost) || m.Imports[0].Kind != KindFunc {
		t.Errorf("import 0 type = %v kind %v", m.Imports[0].Type, m.Imports[0].Kind)
	}
	if got := m.Imports[2].Type.String(); got != "(i32, i32, i32, i32, i32, i64, i64, i32, i32) -> (i32)" {
		t.Errorf("path_open type = %s", got)
	}
	if m.ImportedFuncCount() != 3 {
		t.Errorf("imported funcs = %d", m.ImportedFuncCount())
	}
	names := []string{}
	for _, e := range m.Exports {
		names = append(names, e.Name+":"+e.Kind.String())
	}
	if strings.Join(names, ",") != "memory:memory,oh_alloc:func,oh_call:func" {
		t.Errorf("exports = %v", names)
	}
	ft, ok := m.ExportFuncType("oh_call")
	if !ok || !ft.Equal(sigHost) {
		t.Errorf("oh_call type = %v %v", ft, ok)
	}
	ft, ok = m.ExportFuncType("oh_alloc")
	if !ok || !ft.Equal(sigOne) {
		t.Errorf("oh_alloc type = %v %v", ft, ok)
	}
	if _, ok := m.ExportFuncType("memory"); ok {
		t.Error("memory reported as a function")
	}
}

// TestBuilderModulesAreValid cross-checks the builder (and so the parser's
// fixtures) with wazero's own decoder and validator.
func TestBuilderModulesAreValid(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	mod, err := SetCustomSection(sample(), "openhuman.manifest", []byte("abi = \"openhuman/1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, mod)
	if err != nil {
		t.Fatalf("wazero rejects the built module: %v", err)
	}
	if n := len(cm.ImportedFunctions()); n != 3 {
		t.Errorf("wazero sees %d imports", n)
	}
	if _, ok := cm.ExportedFunctions()["oh_call"]; !ok {
		t.Error("wazero does not see oh_call")
	}
}

func TestCustomSections(t *testing.T) {
	base := sample()
	if _, found, err := CustomSection(base, "openhuman.manifest"); err != nil || found {
		t.Fatalf("fresh module: found=%v err=%v", found, err)
	}
	one, err := SetCustomSection(base, "openhuman.manifest", []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	withOther := AppendCustomSection(one, "name", []byte{1, 2, 3})
	two, err := SetCustomSection(withOther, "openhuman.manifest", []byte("second, longer payload"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(two)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, cs := range m.CustomSections {
		if cs.Name == "openhuman.manifest" {
			count++
			if string(cs.Payload) != "second, longer payload" {
				t.Errorf("payload = %q", cs.Payload)
			}
			if !bytes.Equal(two[cs.PayloadOffset:cs.End], cs.Payload) {
				t.Error("payload offsets do not match the bytes")
			}
		}
	}
	if count != 1 {
		t.Errorf("%d manifest sections after replace, want 1", count)
	}
	if p, ok := m.Custom("name"); !ok || !bytes.Equal(p, []byte{1, 2, 3}) {
		t.Errorf("other custom section lost: %v %v", p, ok)
	}
	got, found, err := CustomSection(two, "openhuman.manifest")
	if err != nil || !found || string(got) != "second, longer payload" {
		t.Errorf("CustomSection = %q %v %v", got, found, err)
	}
	stripped, err := StripCustomSection(two, "openhuman.manifest")
	if err != nil {
		t.Fatal(err)
	}
	if want := AppendCustomSection(base, "name", []byte{1, 2, 3}); !bytes.Equal(stripped, want) {
		t.Errorf("strip did not restore the bytes: %d vs %d bytes", len(stripped), len(want))
	}
	// Large payload: the section size needs a multi-byte LEB.
	big := bytes.Repeat([]byte("x"), 300000)
	withBig, err := SetCustomSection(base, "sig", big)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok, _ := CustomSection(withBig, "sig"); !ok || !bytes.Equal(p, big) {
		t.Error("large payload not round-tripped")
	}
}

func TestParseErrors(t *testing.T) {
	good := sample()
	cases := []struct {
		name string
		mod  []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"magic", append([]byte("\x7fELF"), good[4:]...), "bad magic"},
		{"version", append(append([]byte{}, good[:4]...), append([]byte{2, 0, 0, 0}, good[8:]...)...), "unsupported binary version"},
		{"truncated", good[:len(good)-3], "truncated section 10 at byte"},
		{"truncated header", good[:9], "truncated section size at byte 9"},
		{"unknown section", append(append([]byte{}, good[:8]...), 0x20, 0x00), "unknown section id 32 at byte 8"},
		{"import type out of range", func() []byte {
			b := append([]byte{}, Magic...)
			b = append(b, Version1...)
			// import section: 1 import "a"."b" func type 0, but no type section.
			c := []byte{1, 1, 'a', 1, 'b', 0, 0}
			b = append(b, SectionImport, byte(len(c)))
			return append(b, c...)
		}(), "uses type 0 but the module declares 0 types"},
		{"huge count", func() []byte {
			b := append([]byte{}, Magic...)
			b = append(b, Version1...)
			c := []byte{0xff, 0xff, 0xff, 0xff, 0x0f}
			b = append(b, SectionImport, byte(len(c)))
			return append(b, c...)
		}(), "import count 4294967295 exceeds"},
		{"bad utf8 name", func() []byte {
			return AppendCustomSection(append([]byte{}, good...), "\xff\xfe", nil)
		}(), "not valid UTF-8"},
		{"overlong leb", func() []byte {
			b := append([]byte{}, Magic...)
			b = append(b, Version1...)
			return append(b, SectionCustom, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)
		}(), "overflows 32 bits"},
	}
	for _, c := range cases {
		_, err := Parse(c.mod)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error does not wrap ErrInvalid: %v", c.name, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not contain %q", c.name, err, c.want)
		}
	}
	if _, err := SetCustomSection([]byte("nope"), "x", nil); err == nil {
		t.Error("SetCustomSection accepted an invalid module")
	}
	if _, err := StripCustomSection([]byte("nope"), "x"); err == nil {
		t.Error("StripCustomSection accepted an invalid module")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample())
	withManifest, _ := SetCustomSection(sample(), "openhuman.manifest", []byte("abi = \"openhuman/1\""))
	f.Add(withManifest)
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\x05\x01\x01a\x01b"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00"))
	var code Builder
	code.Table(1, 4, true)
	code.FuncWithLocals("f", FuncType{Params: []ValType{I32}}, 3, I64, []byte{0x02, 0x40, 0x03, 0x40, 0x0e, 0x02, 0x00, 0x01, 0x00, 0x0b, 0x0b,
		0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x1a, 0xfd, 0x15, 0x01, 0xfe, 0x03, 0x00, 0x28, 0x42, 0x80, 0x01, 0x1a, 0x06, 0x40, 0x07, 0x00, 0x18, 0x00})
	f.Add(code.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		for _, cs := range m.CustomSections {
			if cs.PayloadOffset > cs.End || cs.End > len(b) {
				t.Fatalf("bad offsets %+v", cs)
			}
		}
		for _, e := range m.Exports {
			m.ExportFuncType(e.Name)
		}
		if cs, err := m.Code(); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Code error does not wrap ErrInvalid: %v", err)
			}
		} else if cs.MaxBodyBytes > cs.CodeBytes || cs.MaxDepth > cs.CodeBytes || cs.Instructions > cs.CodeBytes || cs.MaxLoopCostLoops > uint64(cs.CodeBytes) {
			t.Fatalf("code stats beyond the code's %d bytes: %+v", cs.CodeBytes, cs)
		}
		for _, tb := range m.Tables {
			if tb.Elem != FuncRef && tb.Elem != ExternRef && tb.Elem != 0x63 && tb.Elem != 0x64 {
				t.Fatalf("table of %v", tb.Elem)
			}
		}
		out, err := SetCustomSection(b, "openhuman.manifest", []byte("x"))
		if err != nil {
			t.Fatalf("SetCustomSection failed on a module Parse accepted: %v", err)
		}
		if p, ok, err := CustomSection(out, "openhuman.manifest"); err != nil || !ok || string(p) != "x" {
			t.Fatalf("round trip: %q %v %v", p, ok, err)
		}
	})
}
