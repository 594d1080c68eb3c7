package guestbuild

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// need skips when a toolchain is missing, and fails under CI=true (.ci/run
// installs both).
func need(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, ErrMissing) && os.Getenv("CI") != "true" {
		t.Skipf("not run: %v", err)
	}
	t.Fatal(err)
}

// TestRustSDKUnitTests runs the Rust SDK's own tests (its JSON reader and
// writer: round trips, refusals with their byte offsets, float accuracy) with
// `cargo test --offline` on the host target.
func TestRustSDKUnitTests(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the Rust SDK; run without -short")
	}
	rustc, cargo, err := Rustc()
	need(t, err)
	cmd := exec.Command(cargo, "test", "--offline", "--quiet")
	cmd.Dir = filepath.Join("..", "..", "sdk", "rust")
	cmd.Env = append(os.Environ(), "RUSTC="+rustc, "CARGO_TARGET_DIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("cargo test in sdk/rust: %v\n%s", err, out.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("test result: ok. 3 passed")) {
		t.Errorf("cargo test ran other than the SDK's 3 tests:\n%s", out.String())
	}
}

// TestRustcSkipsAToolchainWithoutTheTarget: $RUSTC naming a rustc that cannot
// build for wasm32 (here: not a rustc at all) is passed over for one that can.
func TestRustcSkipsAToolchainWithoutTheTarget(t *testing.T) {
	if _, _, err := Rustc(); err != nil {
		need(t, err)
	}
	t.Setenv("RUSTC", "/bin/false")
	rustc, cargo, err := Rustc()
	if err != nil || rustc == "/bin/false" || filepath.Dir(cargo) != filepath.Dir(rustc) {
		t.Errorf("Rustc() = %q, %q, %v", rustc, cargo, err)
	}
}
