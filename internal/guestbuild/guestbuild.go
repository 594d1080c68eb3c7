// Package guestbuild finds the Rust and AssemblyScript toolchains and builds
// guest modules with them, for `tools new` (which says what is missing) and for
// the tests that build every example and test module from source.
package guestbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ASCVersion is the AssemblyScript compiler the AssemblyScript SDK is built and
// tested with (.ci/run installs it; `tools new --lang as` pins it). 0.28 needs
// Node 20 or later.
const ASCVersion = "0.28.20"

// RustTarget is the target Rust guests build for: wasm32-unknown-unknown rather
// than wasm32-wasi, so the module's only imports are the host functions it calls.
const RustTarget = "wasm32-unknown-unknown"

// InstallRust and InstallAsc say what to install when a toolchain is missing.
const (
	InstallRust = "Debian: apt-get install rustc cargo libstd-rust-dev-wasm32; rustup: rustup target add " + RustTarget
	InstallAsc  = "npm install -g assemblyscript@" + ASCVersion + " (Node 20 or later)"
)

// ErrMissing marks a toolchain that is not installed.
var ErrMissing = errors.New("toolchain not installed")

// Rustc returns a rustc that has the standard library for wasm32-unknown-unknown,
// trying $RUSTC, the rustc on PATH and Debian's /usr/bin/rustc in that order (a
// rustup toolchain without the target answers --print target-libdir with a
// folder that holds no libstd), and the cargo beside it. build.sh of a Rust tool
// makes the same search.
func Rustc() (rustc, cargo string, err error) {
	cands := []string{os.Getenv("RUSTC")}
	if p, err := exec.LookPath("rustc"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/rustc")
	for _, c := range cands {
		if c == "" {
			continue
		}
		out, err := exec.Command(c, "--print", "target-libdir", "--target", RustTarget).Output()
		if err != nil {
			continue
		}
		if libs, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "libstd-*.rlib")); len(libs) == 0 {
			continue
		}
		cargo := filepath.Join(filepath.Dir(c), "cargo")
		if _, err := os.Stat(cargo); err != nil {
			return "", "", fmt.Errorf("%w: %s has the %s target but there is no cargo beside it (%s)", ErrMissing, c, RustTarget, InstallRust)
		}
		return c, cargo, nil
	}
	return "", "", fmt.Errorf("%w: no rustc with the %s target (%s)", ErrMissing, RustTarget, InstallRust)
}

// Asc returns the AssemblyScript compiler: asc on PATH, else the copy .ci/run
// installs under repoRoot/.ci/node (repoRoot may be "").
func Asc(repoRoot string) (string, error) {
	if p, err := exec.LookPath("asc"); err == nil {
		return p, nil
	}
	if repoRoot != "" {
		p := filepath.Join(repoRoot, ".ci", "node", "node_modules", ".bin", "asc")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("%w: node is not installed, and asc needs it (Debian: apt-get install nodejs npm; then %s)", ErrMissing, InstallAsc)
	}
	return "", fmt.Errorf("%w: asc is not installed (%s)", ErrMissing, InstallAsc)
}

// BuildRust builds the cdylib crate in dir for wasm32-unknown-unknown with
// `cargo build --offline --release` into targetDir (a cache: empty for a cold
// build) and returns the module. lib is the crate's library name.
func BuildRust(ctx context.Context, dir, lib, targetDir string) ([]byte, error) {
	rustc, cargo, err := Rustc()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cargo, "build", "--offline", "--release", "--quiet", "--target", RustTarget)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUSTC="+rustc, "CARGO_TARGET_DIR="+targetDir)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cargo build in %s: %w\n%s", dir, err, stderr.Bytes())
	}
	out := filepath.Join(targetDir, RustTarget, "release", lib+".wasm")
	mod, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("cargo build in %s: %w", dir, err)
	}
	return mod, nil
}

// ASFlags are the asc flags every AssemblyScript guest is built with (after the
// entry file and before --use abort=…): small code, the incremental runtime (a
// GC, so one instance serves many calls).
var ASFlags = []string{"-O3z", "--runtime", "incremental"}

// BuildAS compiles the AssemblyScript entry file with asc (found as Asc finds it)
// and returns the module; abort is the --use abort= element, e.g.
// "openhuman-sdk/assembly/abi/abort" relative to the entry's folder.
func BuildAS(ctx context.Context, repoRoot, entry, abort string) ([]byte, error) {
	asc, err := Asc(repoRoot)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "asbuild-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "out.wasm")
	args := append([]string{filepath.Base(entry), "-o", out}, ASFlags...)
	args = append(args, "--use", "abort="+abort)
	cmd := exec.CommandContext(ctx, asc, args...)
	cmd.Dir = filepath.Dir(entry)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("asc %s: %w\n%s", entry, err, stderr.Bytes())
	}
	return os.ReadFile(out)
}
