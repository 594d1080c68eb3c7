package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/guestbuild"
)

// TestGuestLanguageFigures measures, for the threads-per-year example in each
// of Go, C, Rust and AssemblyScript, what a tool author sees: `tools new`, the
// example's source copied in, then `tools install` with empty build caches
// (a fresh folder, an empty GOCACHE), `tools install` again after an edit of
// the code (the page size; warm caches), and the first `tools call` (an empty
// compiled-code cache). It prints
// the table of sdk/AUTHORING.md and asserts nothing about time (figures come
// from a run on the machine at hand): opt in with OPENHUMAN_GUEST_FIGURES=1,
//
//	OPENHUMAN_GUEST_FIGURES=1 go test ./cmd/openhuman-core -run TestGuestLanguageFigures -v -count=1
func TestGuestLanguageFigures(t *testing.T) {
	if os.Getenv("OPENHUMAN_GUEST_FIGURES") != "1" {
		t.Skip("measures cold builds (Go's takes ~20 s of CPU); set OPENHUMAN_GUEST_FIGURES=1")
	}
	bin := builtBinary(t)
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	example := filepath.Join(root, "examples", "threads-per-year")
	pathEnv := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	if asc, err := guestbuild.Asc(root); err == nil {
		pathEnv += string(os.PathListSeparator) + filepath.Dir(asc)
	}
	sources := map[string][2]string{ // lang → (example source, file in the new project)
		"go":   {"go/main.go", "main.go"},
		"c":    {"c/threads.c", "NAME.c"},
		"rust": {"rust/src/lib.rs", "src/lib.rs"},
		"as":   {"as/threads.ts", "NAME.ts"},
	}
	callTook := regexp.MustCompile(`\), ([0-9.]+[µm]?s)\n`)
	var rows []string
	for _, lang := range []string{"c", "rust", "as", "go"} {
		work, home, gocache, xdg := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
		env := []string{"HOME=" + home, "PATH=" + pathEnv, "GOCACHE=" + gocache, "GOMODCACHE=" + filepath.Join(home, "gomod"),
			"GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "XDG_CACHE_HOME=" + xdg, "LANG=C.UTF-8"}
		// run returns the output, the wall time and the CPU time of the command
		// and every child it waited for (the compilers): the CPU figure does not
		// depend on what else the machine is running.
		run := func(args ...string) (string, time.Duration, time.Duration) {
			t.Helper()
			cmd := exec.Command(bin, args...)
			cmd.Dir, cmd.Env = work, env
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("%s: %v\n%s\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
			}
			return out.String() + errOut.String(), took, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		name := "threads-" + lang
		run("tools", "new", name, "--lang", lang)
		src, err := os.ReadFile(filepath.Join(example, sources[lang][0]))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(src), "../../../sdk/assemblyscript/", "./openhuman-sdk/")
		dst := filepath.Join(work, name, strings.ReplaceAll(sources[lang][1], "NAME", name))
		man, _ := os.ReadFile(filepath.Join(example, "tool.toml"))
		os.WriteFile(filepath.Join(work, name, "tool.toml"), []byte(strings.ReplaceAll(string(man), "TOOL", name)), 0o644)
		if err := os.WriteFile(dst, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, cold, coldCPU := run("tools", "install", name)
		// An edit that changes the code: the page size, 50 in every version.
		if edited := strings.Replace(text, "50", "49", 1); edited == text {
			t.Fatalf("%s: no page size to edit", sources[lang][0])
		} else {
			os.WriteFile(dst, []byte(edited), 0o644)
		}
		out, warm, warmCPU := run("tools", "install", name)
		if !strings.Contains(out, "updated ") {
			t.Fatalf("%s: the install after the edit did not update the module:\n%s", name, out)
		}
		out, first, _ := run("tools", "call", name, "{}")
		if !strings.Contains(out, `"years"`) || !strings.Contains(out, "output_schema: matches") {
			t.Errorf("%s: %s", name, out)
		}
		inCall := "?"
		if m := callTook.FindStringSubmatch(out); m != nil {
			inCall = m[1]
		}
		fi, err := os.Stat(filepath.Join(home, ".openhuman", "tools", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %.1f s (%.1f s CPU) | %.1f s (%.1f s CPU) | %d ms (%s in the sandbox) |",
			map[string]string{"go": "Go", "c": "C", "rust": "Rust", "as": "AssemblyScript"}[lang], kb(fi.Size()),
			cold.Seconds(), coldCPU.Seconds(), warm.Seconds(), warmCPU.Seconds(), first.Milliseconds(), inCall))
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("\n| language | module (packed) | install, empty caches: wall (CPU) | install after an edit, warm: wall (CPU) | first `tools call`: process wall time |\n|---|---|---|---|---|\n%s\n(load average at the end: %s)", strings.Join(rows, "\n"), strings.TrimSpace(string(load)))
}

func kb(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}
