package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKeygenFreshMachine is the guide's keygen on a machine without the key's
// folder: the folder is made, private to the user.
func TestKeygenFreshMachine(t *testing.T) {
	home := t.TempDir()
	key := filepath.Join(home, ".config", "openhuman", "signing.key")
	if err := runKeygen(io.Discard, key, false); err != nil {
		t.Fatalf("keygen into a folder that does not exist yet: %v", err)
	}
	fi, err := os.Stat(filepath.Dir(key))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("key folder mode = %v, want 0700", fi.Mode().Perm())
	}
	if _, err := os.Stat(key + ".pub"); err != nil {
		t.Errorf("public key: %v", err)
	}
}

// TestKeygenErrorNamesTheFile: a key that cannot be written is named as the
// user gave it, not by the temporary file it is written through.
func TestKeygenErrorNamesTheFile(t *testing.T) {
	key := filepath.Join(t.TempDir(), "missing", "signing.key")
	err := writeFileAtomic(key, []byte("k"), 0o600)
	if err == nil {
		t.Fatal("wrote into a folder that does not exist")
	}
	if !strings.Contains(err.Error(), key+":") || regexp.MustCompile(`signing\.key\.[0-9]+`).MatchString(err.Error()) {
		t.Errorf("error does not name %s (or names a temporary file): %v", key, err)
	}
}

// TestGuideCBuildCommand runs the C build command of sdk/AUTHORING.md on the
// example and compares it with the committed examples/c-hello/hello.wasm after
// packing: the guide's command is the one that built it.
func TestGuideCBuildCommand(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang is not installed (apt-get install clang lld)")
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		t.Skip("wasm-ld is not installed (apt-get install lld)")
	}
	guide, err := os.ReadFile("../../sdk/AUTHORING.md")
	if err != nil {
		t.Fatal(err)
	}
	var build string
	for _, b := range readmeBlocks(t, "../../sdk/AUTHORING.md") {
		if b.Lang == "sh" && strings.Contains(b.Text, "clang ") && strings.Contains(b.Text, "examples/c-hello/hello.c") {
			build = b.Text
		}
	}
	if build == "" {
		t.Fatalf("sdk/AUTHORING.md has no sh block building examples/c-hello/hello.c with clang (%d bytes read)", len(guide))
	}
	bin := builtBinary(t)
	out := t.TempDir()
	script := strings.ReplaceAll(build, "-o hello.wasm", "-o "+filepath.Join(out, "hello.wasm"))
	script = strings.ReplaceAll(script, "pack hello.wasm", "pack "+filepath.Join(out, "hello.wasm"))
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the guide's C build fails: %v\n%s\n%s", err, script, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(out, "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../examples/c-hello/hello.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the guide's C build makes %d bytes (sha256 %s), the committed example is %d bytes (sha256 %s)",
			len(got), fileSHA256(got), len(want), fileSHA256(want))
	}
}
