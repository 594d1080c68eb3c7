package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/guestbuild"
)

// TestAuthoringGuide runs sdk/AUTHORING.md as a new tool author would: every
// `sh` block, in order, in one fresh folder with a fresh HOME, its own empty Go
// module cache and no module proxy (GOPROXY=off: the skeleton must build from
// what the binary gives it), with the binary this test built on PATH. A block
// that fails fails the test, and the blocks after it are not run (they build on
// it). The `go`, `c` and `toml` blocks that show what `tools new` writes must be
// what it writes. The README's author and reviewer blocks run in TestReadme.
//
// Acceptance, checked here: a served Go, C, Rust and AssemblyScript tool, each
// in at most 6 commands from nothing (the Rust and AssemblyScript quick starts:
// new, install, call), with a source of at most 30 non-blank lines; an update
// of a served tool is one command. Without a toolchain its blocks are not run
// and the test says so; under CI=true (.ci/run installs them all) it fails.
func TestAuthoringGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go and C tool modules and runs the binary; run without -short")
	}
	haveClang := true
	for _, tool := range []string{"clang", "wasm-ld"} {
		if _, err := exec.LookPath(tool); err != nil {
			haveClang = false
			t.Logf("NOTE: %s is not installed (apt-get install clang lld): the guide's C blocks are not run", tool)
		}
	}
	// The Rust and AssemblyScript toolchains (.ci/run installs both; asc into .ci/node).
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	haveRust, haveAsc := true, true
	extraPath := ""
	if _, _, err := guestbuild.Rustc(); err != nil {
		haveRust = false
		guideMissing(t, "Rust", err)
	}
	if asc, err := guestbuild.Asc(root); err != nil {
		haveAsc = false
		guideMissing(t, "AssemblyScript", err)
	} else {
		extraPath = string(os.PathListSeparator) + filepath.Dir(asc)
	}
	bin := builtBinary(t)
	guide := filepath.Join("..", "..", "sdk", "AUTHORING.md")
	blocks := readmeBlocks(t, guide)
	work, home, modcache := t.TempDir(), t.TempDir(), t.TempDir()
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH") + extraPath,
		"GOMODCACHE=" + modcache, "GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "LANG=C.UTF-8",
		"GOCACHE=" + strings.TrimSpace(string(gocache))} // the build cache only saves time
	t.Cleanup(func() { // the module cache is read-only on disk
		exec.Command("chmod", "-R", "u+w", modcache).Run()
	})

	// shown returns the guide's block of lang whose text starts with prefix.
	shown := func(lang, contains string) string {
		for _, b := range blocks {
			if b.Lang == lang && strings.Contains(b.Text, contains) {
				return b.Text
			}
		}
		t.Fatalf("%s has no %s block containing %q", guide, lang, contains)
		return ""
	}
	ran := 0
	quickGo, quickC, quickRust, quickAS := -1, -1, -1, -1
	for _, b := range blocks {
		if b.Lang != "sh" {
			continue
		}
		if b.Skip != "" {
			if !strings.HasPrefix(b.Skip, "(") || len(b.Skip) < 10 {
				t.Errorf("AUTHORING.md:%d: a skipped block must give its reason: %q", b.Line, b.Skip)
			}
			continue
		}
		isC := strings.Contains(b.Text, "--lang c") || strings.Contains(b.Text, "tools install counter") || strings.Contains(b.Text, "tools call counter")
		if isC && !haveClang {
			continue
		}
		isRust := strings.Contains(b.Text, "tools new hello-rust") || strings.Contains(b.Text, "tools install hello-rust") || strings.Contains(b.Text, "tools call hello-rust")
		isAS := strings.Contains(b.Text, "tools new hello-as") || strings.Contains(b.Text, "tools install hello-as") || strings.Contains(b.Text, "tools call hello-as")
		if (isRust && !haveRust) || (isAS && !haveAsc) {
			continue
		}
		ran++
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.Text)
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("AUTHORING.md:%d: %v\n%s\nstdout:\n%s\nstderr:\n%s", b.Line, err, b.Text, stdout.String(), stderr.String())
		}
		out, errOut := stdout.String(), stderr.String()
		want := func(where, s string) {
			t.Helper()
			if !strings.Contains(where, s) {
				t.Errorf("AUTHORING.md:%d: output lacks %q\n%s\nstdout:\n%s\nstderr:\n%s", b.Line, s, b.Text, out, errOut)
			}
		}
		switch {
		case strings.Contains(b.Text, "tools new hello --lang go"):
			quickGo = b.Line
			checkShown(t, "hello/main.go", filepath.Join(work, "hello", "main.go"), shown("go", "sdk.Handle"))
			checkShown(t, "hello/tool.toml", filepath.Join(work, "hello", "tool.toml"), shown("toml", `name = "hello"`))
			checkCount(t, "Go", b.Text, filepath.Join(work, "hello", "main.go"))
			want(out, `"greeting": "Hello, Ada!"`)
			want(errOut, "output_schema: matches")
			want(errOut, "host calls: sources_list ×1")
		case strings.Contains(b.Text, "tools new counter --lang c"):
			quickC = b.Line
			checkShown(t, "counter/counter.c", filepath.Join(work, "counter", "counter.c"), shown("c", "oh_call"))
			checkCount(t, "C", b.Text, filepath.Join(work, "counter", "counter.c"))
			want(out, `"sources": 0`)
			want(errOut, "output_schema: matches")
		case strings.Contains(b.Text, "tools new hello-rust --lang rust"):
			quickRust = b.Line
			checkShown(t, "hello-rust/src/lib.rs", filepath.Join(work, "hello-rust", "src", "lib.rs"), shown("rust", "openhuman::export!"))
			checkCount(t, "Rust", b.Text, filepath.Join(work, "hello-rust", "src", "lib.rs"))
			want(out, `"greeting": "Hello, there!"`)
			want(errOut, "output_schema: matches")
			want(errOut, "host calls: sources_list ×1")
		case strings.Contains(b.Text, "tools new hello-as --lang as"):
			quickAS = b.Line
			checkShown(t, "hello-as/hello-as.ts", filepath.Join(work, "hello-as", "hello-as.ts"), shown("ts", "serve(ptr, len, handle)"))
			checkCount(t, "AssemblyScript", b.Text, filepath.Join(work, "hello-as", "hello-as.ts"))
			want(out, `"greeting": "Hello, Ada!"`)
			want(errOut, "output_schema: matches")
			want(errOut, "host calls: sources_list ×1")
		case strings.Contains(b.Text, `"method":"tools/list"`):
			want(out, `"name":"hello"`)
			if haveClang {
				want(out, `"name":"counter"`)
			}
			if haveRust {
				want(out, `"name":"hello-rust"`)
			}
			if haveAsc {
				want(out, `"name":"hello-as"`)
			}
		case strings.Contains(b.Text, "sed -i"):
			// The update: one command after the edit.
			if n := len(commands(b.Text)); n != 3 {
				t.Errorf("AUTHORING.md:%d: the update block has %d commands; edit, install, call", b.Line, n)
			}
			want(out, `"greeting": "Hi, Ada!"`)
		case strings.Contains(b.Text, "tools keygen"):
			want(out, "ed25519:")
			if fi, err := os.Stat(filepath.Join(home, ".config", "openhuman")); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("AUTHORING.md:%d: the key folder: %v %v", b.Line, fi, err)
			}
		case strings.Contains(b.Text, "tools audit --diff"):
			want(out, "signature")
			want(out, "verdict: WOULD LOAD")
			want(out, `"schema": "openhuman.audit/1"`)
		}
	}
	if quickGo < 0 {
		t.Error("the guide lost its Go quick start")
	}
	if haveClang && quickC < 0 {
		t.Error("the guide lost its C quick start")
	}
	if haveRust && quickRust < 0 {
		t.Error("the guide lost its Rust quick start")
	}
	if haveAsc && quickAS < 0 {
		t.Error("the guide lost its AssemblyScript quick start")
	}
	if ran < 7 {
		t.Errorf("ran %d sh blocks; the guide lost its runnable examples?", ran)
	}
}

// commands lists the command lines of a shell block (no comments, no blank lines,
// continuation lines joined).
func commands(block string) []string {
	var out []string
	cont := false
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !cont {
			out = append(out, l)
		}
		cont = strings.HasSuffix(l, "\\")
	}
	return out
}

// checkCount asserts the acceptance figures of a quick start: at most 6
// commands from nothing to a served tool and a source of at most 30 non-blank
// lines.
func checkCount(t *testing.T, lang, block, source string) {
	t.Helper()
	src, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, l := range strings.Split(string(src), "\n") {
		if strings.TrimSpace(l) != "" {
			lines++
		}
	}
	n := len(commands(block))
	t.Logf("%s: %d commands to a served, called tool; %s has %d non-blank lines", lang, n, filepath.Base(source), lines)
	if n > 6 || lines > 30 {
		t.Errorf("%s quick start: %d commands (at most 6), %d source lines (at most 30)", lang, n, lines)
	}
}

// checkShown asserts that the guide shows a generated file as it is.
func checkShown(t *testing.T, name, path, shownText string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != shownText {
		t.Errorf("sdk/AUTHORING.md shows %s differently from what `tools new` writes:\n--- guide\n%s\n--- written\n%s", name, shownText, got)
	}
}

// guideMissing notes a toolchain the guide's blocks need and cannot find;
// under CI=true, where .ci/run installs it, that is a failure.
func guideMissing(t *testing.T, lang string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Errorf("%s: %v (.ci/run installs it)", lang, err)
		return
	}
	t.Logf("NOTE: %v: the guide's %s blocks are not run", err, lang)
}
