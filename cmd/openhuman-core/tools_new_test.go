package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestToolsNewRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	busy := filepath.Join(dir, "busy")
	os.MkdirAll(busy, 0o755)
	os.WriteFile(filepath.Join(busy, "x"), nil, 0o644)
	cases := []struct {
		name string
		f    newFlags
		want string
	}{
		{"Hello", newFlags{lang: "go", dir: filepath.Join(dir, "a")}, "must match"},
		{"memory.search", newFlags{lang: "go", dir: filepath.Join(dir, "b")}, "first-party tool name"},
		{"hello", newFlags{lang: "cobol", dir: filepath.Join(dir, "c")}, "give go, c, rust or as"},
		{"hello", newFlags{lang: "c", dir: filepath.Join(dir, "d"), sdk: dir}, "--sdk is for --lang go"},
		{"hello", newFlags{lang: "go", dir: busy}, "not empty"},
		{"hello", newFlags{lang: "go", dir: filepath.Join(dir, "e"), sdk: dir}, "not a checkout of openhuman-core"},
	}
	for _, c := range cases {
		err := runNew(&bytes.Buffer{}, c.name, c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.name, c.f, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(busy); len(entries) != 1 {
		t.Errorf("a refused new wrote into %s", busy)
	}
}

// TestToolsNewGoModule: the Go skeleton's go.mod resolves the SDK from the copy
// beside it, which holds the SDK's packages without their tests.
func TestToolsNewGoModule(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	var out bytes.Buffer
	if err := runNew(&out, "hello", newFlags{lang: "go", dir: dir}); err != nil {
		t.Fatal(err)
	}
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if !strings.Contains(string(gomod), "replace github.com/openhuman/openhuman-core => ./openhuman-sdk") {
		t.Errorf("go.mod:\n%s", gomod)
	}
	for _, f := range []string{"sdk/sdk.go", "sdk/abi/abi.go", "sdk/memory/memory_wasip1.go", "sdk/openhuman.h", "go.mod"} {
		if _, err := os.Stat(filepath.Join(dir, "openhuman-sdk", f)); err != nil {
			t.Errorf("SDK copy: %v", err)
		}
	}
	tests, _ := filepath.Glob(filepath.Join(dir, "openhuman-sdk", "sdk", "*_test.go"))
	if len(tests) > 0 {
		t.Errorf("the SDK copy carries tests: %v", tests)
	}
	if fi, err := os.Stat(filepath.Join(dir, "build.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("build.sh is not executable: %v", err)
	}
	if !strings.Contains(out.String(), "openhuman-core tools install "+dir) {
		t.Errorf("next steps missing:\n%s", out.String())
	}
}

// TestToolsNewRustAndAS: the Rust and AssemblyScript skeletons carry their SDK
// (and only theirs), a build.sh, and a manifest; the Go SDK copy carries
// neither of the other languages' SDKs.
func TestToolsNewRustAndAS(t *testing.T) {
	base := t.TempDir()
	for lang, files := range map[string][]string{
		"rust": {"Cargo.toml", "src/lib.rs", "build.sh", "tool.toml", "openhuman-sdk/Cargo.toml", "openhuman-sdk/src/lib.rs", "openhuman-sdk/src/json.rs", "openhuman-sdk/src/memory.rs", "openhuman-sdk/src/searxng.rs"},
		"as":   {"acme.notes.ts", "package.json", "build.sh", "tool.toml", "openhuman-sdk/package.json", "openhuman-sdk/assembly/index.ts", "openhuman-sdk/assembly/json.ts", "openhuman-sdk/assembly/memory.ts", "openhuman-sdk/assembly/searxng.ts"},
	} {
		dir := filepath.Join(base, lang)
		var out bytes.Buffer
		if err := runNew(&out, "acme.notes", newFlags{lang: lang, dir: dir}); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("--lang %s: %v", lang, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "openhuman-sdk", "sdk")); err == nil {
			t.Errorf("--lang %s carries the Go SDK", lang)
		}
		if !strings.Contains(out.String(), "openhuman-core tools install "+dir) {
			t.Errorf("--lang %s: next steps missing:\n%s", lang, out.String())
		}
	}
	cargo, _ := os.ReadFile(filepath.Join(base, "rust", "Cargo.toml"))
	build, _ := os.ReadFile(filepath.Join(base, "rust", "build.sh"))
	if !strings.Contains(string(cargo), `name = "acme-notes"`) || !strings.Contains(string(build), "release/acme_notes.wasm acme.notes.wasm") {
		t.Errorf("a dotted tool name: Cargo.toml\n%s\nbuild.sh\n%s", cargo, build)
	}
	pkg, _ := os.ReadFile(filepath.Join(base, "as", "package.json"))
	if !strings.Contains(string(pkg), `"assemblyscript": "0.28.20"`) {
		t.Errorf("package.json does not pin asc:\n%s", pkg)
	}
	goDir := filepath.Join(base, "go")
	if err := runNew(&bytes.Buffer{}, "hello", newFlags{lang: "go", dir: goDir}); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"rust", "assemblyscript"} {
		if _, err := os.Stat(filepath.Join(goDir, "openhuman-sdk", "sdk", sub)); err == nil {
			t.Errorf("the Go SDK copy carries sdk/%s", sub)
		}
	}
}
