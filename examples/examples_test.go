package examples

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/openhuman/openhuman-core/examples/internal/cbuild"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

var update = flag.Bool("update", false, "rebuild the committed C modules with clang and overwrite them")

// TestCModulesMatchSources checks every committed C module is a valid, packed module
// and, when clang is installed, that rebuilding it from source gives the same bytes.
func TestCModulesMatchSources(t *testing.T) {
	clang, clangErr := cbuild.Clang()
	if clangErr != nil {
		t.Logf("NOT rebuilding the C modules: %v; checking the committed .wasm files only", clangErr)
		if *update {
			t.Fatal("-update needs clang")
		}
	}
	sdkDir, err := filepath.Abs(filepath.Join("..", "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range CModules() {
		t.Run(m.Name, func(t *testing.T) {
			if clangErr == nil {
				built, err := cbuild.Build(context.Background(), clang, m.Source(), m.Manifest(), sdkDir)
				if err != nil {
					t.Fatal(err)
				}
				if *update {
					if err := os.WriteFile(m.Wasm(), built, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				committed, err := os.ReadFile(m.Wasm())
				if err != nil {
					t.Fatalf("%v (run `go test ./examples -run TestCModules -update` with clang installed)", err)
				}
				if !bytes.Equal(built, committed) {
					t.Fatalf("%s is stale: rebuilding %s gives %d bytes that differ from the committed %d; run `go test ./examples -run TestCModules -update`", m.Wasm(), m.Source(), len(built), len(committed))
				}
			}
			mod, err := os.ReadFile(m.Wasm())
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := wasmbin.Parse(mod)
			if err != nil {
				t.Fatalf("%s: %v", m.Wasm(), err)
			}
			manifest, ok := parsed.Custom(cbuild.ManifestSection)
			if !ok {
				t.Fatalf("%s has no manifest", m.Wasm())
			}
			want, err := os.ReadFile(m.Manifest())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(manifest, want) {
				t.Errorf("%s carries a manifest that differs from %s", m.Wasm(), m.Manifest())
			}
			if len(mod) > 64<<10 {
				t.Errorf("%s is %d bytes; a C module should stay small", m.Wasm(), len(mod))
			}
		})
	}
}
