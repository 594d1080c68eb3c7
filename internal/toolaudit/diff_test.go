package toolaudit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

// helloChanged is examples/c-hello/hello.wasm re-packed with a manifest that
// changes a limit, a description, the annotations and both schemas.
func helloChanged(t *testing.T) []byte {
	t.Helper()
	man := string(readExample(t, "c-hello/hello.toml"))
	for _, r := range [][2]string{
		{"timeout_ms = 2000", "timeout_ms = 5000"},
		{"Greets the caller", "Greets whoever calls"},
		{"openWorldHint = false", "openWorldHint = true"},
		{`"maxLength":64`, `"maxLength":128`},
		{`"sources":{"type":"integer"}}`, `"sources":{"type":"integer"},"note":{"type":"string"}}`},
	} {
		if !strings.Contains(man, r[0]) {
			t.Fatalf("hello.toml no longer contains %q", r[0])
		}
		man = strings.Replace(man, r[0], r[1], 1)
	}
	out, err := wasmbin.SetCustomSection(readExample(t, "c-hello/hello.wasm"), policy.ManifestSection, []byte(man))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffPairs are the fixture pairs: each shows kinds of change a reviewer meets.
func diffPairs(t *testing.T) []struct {
	name     string
	old, new string
	oldB     []byte
	newB     []byte
	kinds    []string
} {
	hello := readExample(t, "c-hello/hello.wasm")
	signed, err := signature.Sign(hello, testKey)
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := wasmbin.StripCustomSection(hello, policy.ManifestSection)
	if err != nil {
		t.Fatal(err)
	}
	// The same module declaring the clang that built it (a build without --strip-all).
	declared, err := wasmbin.SetCustomSection(hello, wasmbin.ProducersSection,
		wasmbin.AppendProducers(nil, wasmbin.Producers{Language: []wasmbin.Producer{{Name: "C11"}}, ProcessedBy: []wasmbin.Producer{{Name: "clang", Version: "14.0.6"}}}))
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		name     string
		old, new string
		oldB     []byte
		newB     []byte
		kinds    []string
	}{
		{"producer", "hello.wasm", "hello.wasm", hello, declared, []string{KindFile, KindProducer}},
		{"same", "hello.wasm", "hello.wasm", hello, hello, nil},
		{"manifest_fields", "hello.wasm", "hello.wasm", hello, helloChanged(t), []string{KindFile, KindLimit, KindToolField, KindSchema}},
		{"capability_and_tools", "hello.wasm", "ungranted.wasm", hello, readExample(t, "hostile/ungranted.wasm"), []string{KindCapability, KindImport, KindTool}},
		{"forbidden_import", "hello.wasm", "path_open.wasm", hello, readExample(t, "hostile/path_open.wasm"), []string{KindImport, KindTool, KindVerdict}},
		{"extism_abi_exports", "hello.wasm", "extism_http.wasm", hello, readExample(t, "hostile/extism_http.wasm"), []string{KindABI, KindExport}},
		{"signed", "hello.wasm", "hello.wasm", hello, signed, []string{KindFile, KindSignature}},
		{"manifest_removed", "hello.wasm", "hello.wasm", hello, stripped, []string{KindManifest, KindTool, KindVerdict}},
	}
}

// TestDiffFixturePairs: each pair shows its kinds of change, the JSON equals its
// golden (stable), and together the pairs show every kind.
func TestDiffFixturePairs(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range diffPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			old, _ := Audit(p.oldB, Options{Name: p.old})
			new, _ := Audit(p.newB, Options{Name: p.new})
			d := Compare(old, new)
			got := map[string]bool{}
			for _, c := range d.Changes {
				got[c.Kind] = true
				seen[c.Kind] = true
			}
			for _, k := range p.kinds {
				if !got[k] {
					t.Errorf("no %s change in %+v", k, d.Changes)
				}
			}
			if (p.kinds == nil) == d.Differs() {
				t.Errorf("differs = %v with changes %+v", d.Differs(), d.Changes)
			}
			var buf bytes.Buffer
			if err := d.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			// Stable: a second comparison of fresh audits writes the same bytes.
			var again bytes.Buffer
			old2, _ := Audit(p.oldB, Options{Name: p.old})
			new2, _ := Audit(p.newB, Options{Name: p.new})
			_ = Compare(old2, new2).WriteJSON(&again)
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Errorf("two comparisons differ:\n%s\n%s", buf.String(), again.String())
			}
			checkDiffGolden(t, "diff_"+p.name, buf.Bytes())
			var text bytes.Buffer
			if err := d.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if lines := strings.Count(text.String(), "\n"); lines > 50 {
				t.Errorf("text diff takes %d lines, more than a screen:\n%s", lines, text.String())
			}
		})
	}
	for _, k := range kindOrder {
		if !seen[k] {
			t.Errorf("no fixture pair shows a %s change", k)
		}
	}
}

func checkDiffGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./internal/toolaudit -update` to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update if the change is intended):\n%s", path, got)
	}
	var back Diff
	if err := json.Unmarshal(got, &back); err != nil || back.Schema != DiffSchema {
		t.Errorf("diff does not round-trip: %v", err)
	}
}

// TestDiffSchemaPointers: a schema change is reported at its JSON pointer.
func TestDiffSchemaPointers(t *testing.T) {
	cs := schemaChanges(json.RawMessage(`{"type":"object","properties":{"a/b":{"type":"string"}},"required":["a/b"]}`),
		json.RawMessage(`{"type":"object","properties":{"a/b":{"type":"integer"},"c":{"type":"string"}},"required":["a/b","c"]}`))
	var got []string
	for _, c := range cs {
		got = append(got, c.Op+" "+c.Subject+" "+c.Old+" "+c.New)
	}
	want := []string{
		`changed /properties/a~1b/type "string" "integer"`,
		`added /properties/c/type  "string"`,
		`changed /required ["a/b"] ["a/b","c"]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("schema changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
