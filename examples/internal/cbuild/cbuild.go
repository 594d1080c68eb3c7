// Package cbuild compiles the C example modules with clang (wasm32-wasi, no libc)
// and packs their TOML manifests into them, so tests can rebuild the committed
// .wasm files and check they match their sources.
package cbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// ManifestSection is the custom section the manifest goes into.
const ManifestSection = "openhuman.manifest"

// Flags are the clang flags every C example is built with: no libc, no entry point,
// every `export_name` exported, symbols stripped (so the build is reproducible and
// small).
var Flags = []string{
	"--target=wasm32-wasi", "-nostdlib", "-O2", "-mbulk-memory",
	"-Wl,--no-entry", "-Wl,--export-dynamic", "-Wl,--strip-all",
}

// Clang returns the path of clang when it is installed and can link wasm (wasm-ld
// from lld); the reason it cannot otherwise.
func Clang() (string, error) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		return "", fmt.Errorf("clang is not installed (apt-get install -y clang lld): %w", err)
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		return "", fmt.Errorf("wasm-ld is not installed (apt-get install -y lld): %w", err)
	}
	return clang, nil
}

// Build compiles src (one .c file) with includes as -I directories and returns the
// module with manifest (a TOML file) packed in. It runs in src's directory with
// relative paths so the output does not depend on where the repository lives.
func Build(ctx context.Context, clang, src, manifest string, includes ...string) ([]byte, error) {
	dir, err := filepath.Abs(filepath.Dir(src))
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", src, err)
	}
	tmp, err := os.MkdirTemp("", "cbuild-")
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", src, err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "out.wasm")
	args := append([]string{}, Flags...)
	for _, inc := range includes {
		rel, err := filepath.Rel(dir, inc)
		if err != nil {
			return nil, fmt.Errorf("build %s: include %s: %w", src, inc, err)
		}
		args = append(args, "-I"+rel)
	}
	args = append(args, "-o", out, filepath.Base(src))
	cmd := exec.CommandContext(ctx, clang, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("clang %s: %w\n%s", src, err, stderr.Bytes())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", src, err)
	}
	m, err := os.ReadFile(manifest)
	if err != nil {
		return nil, fmt.Errorf("build %s: manifest: %w", src, err)
	}
	packed, err := wasmbin.SetCustomSection(raw, ManifestSection, m)
	if err != nil {
		return nil, fmt.Errorf("build %s: pack manifest: %w", src, err)
	}
	return packed, nil
}
