package examples

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/examples/internal/cbuild"
	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/runtime"
)

// threadsManifest is the four-language example's manifest with its tool named.
func threadsManifest(t *testing.T, tool string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("threads-per-year", "tool.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tool.toml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "TOOL", tool)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestThreadsPerYearFourLanguages builds the threads-per-year example from
// source in Go, C, Rust and AssemblyScript, serves the four modules from one
// runtime over one store, and checks each answers the same, right, result. It
// logs each module's size; the Rust and AssemblyScript ones must stay within
// 64 KB (the bound; C is a few KB, Go megabytes).
func TestThreadsPerYearFourLanguages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four wasm modules; run without -short")
	}
	mods := map[string][]byte{} // file → packed module
	t.Run("build", func(t *testing.T) {
		t.Run("go", func(t *testing.T) {
			raw := filepath.Join(t.TempDir(), "threads.raw.wasm")
			buildGo(t, "./examples/threads-per-year/go", raw, true)
			code, err := os.ReadFile(raw)
			if err != nil {
				t.Fatal(err)
			}
			mods["threads-go.wasm"] = packManifest(t, code, filepath.Join("threads-per-year", "tool.toml"), "threads.per_year.go")
		})
		t.Run("c", func(t *testing.T) {
			clang, err := cbuild.Clang()
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatal(err)
				}
				t.Skipf("not run: %v", err)
			}
			mod, err := cbuild.Build(context.Background(), clang, filepath.Join("threads-per-year", "c", "threads.c"), threadsManifest(t, "threads.per_year.c"), filepath.Join(repoRoot(t), "sdk"))
			if err != nil {
				t.Fatal(err)
			}
			mods["threads-c.wasm"] = mod
		})
		t.Run("rust", func(t *testing.T) {
			mods["threads-rust.wasm"] = buildRust(t, filepath.Join("threads-per-year", "rust"), "threads_per_year", filepath.Join("threads-per-year", "tool.toml"), "threads.per_year.rust")
		})
		t.Run("as", func(t *testing.T) {
			mods["threads-as.wasm"] = buildAS(t, filepath.Join("threads-per-year", "as", "threads.ts"), filepath.Join("threads-per-year", "tool.toml"), "threads.per_year.as")
		})
	})
	if t.Failed() {
		t.FailNow()
	}
	for _, f := range []string{"threads-rust.wasm", "threads-as.wasm"} {
		if m, ok := mods[f]; ok && len(m) > 64<<10 {
			t.Errorf("%s is %d bytes; a Rust or AssemblyScript example must stay within 64 KB", f, len(m))
		}
	}
	// The audit names each module's language: from the producers section Go and
	// rustc write, inferred for asc (which writes none); clang's is stripped.
	for f, lang := range map[string]string{"threads-go.wasm": "Go", "threads-rust.wasm": "Rust", "threads-as.wasm": "AssemblyScript", "threads-c.wasm": ""} {
		m, ok := mods[f]
		if !ok {
			continue
		}
		rep, err := toolaudit.Audit(m, toolaudit.Options{Name: f})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if rep.Producer != nil && len(rep.Producer.Language) > 0 {
			got = rep.Producer.Language[0].Name
		}
		if got != lang {
			t.Errorf("%s: the audit names the language %q, want %q (%+v)", f, got, lang, rep.Producer)
		}
	}
	var sizes []string
	for f, m := range mods {
		sizes = append(sizes, fmt.Sprintf("%s %d bytes", f, len(m)))
	}
	slices.Sort(sizes)
	t.Logf("packed sizes: %s", strings.Join(sizes, ", "))

	host := probeHost(t, mods)
	want := map[int]int{}
	for _, y := range threadYears {
		want[y]++
	}
	type result struct {
		Years []struct {
			Year    int `json:"year"`
			Threads int `json:"threads"`
		} `json:"years"`
		Threads int `json:"threads"`
	}
	var first []byte
	for f := range mods {
		tool := "threads.per_year." + strings.TrimSuffix(strings.TrimPrefix(f, "threads-"), ".wasm")
		start := time.Now()
		out, err := host.Call(context.Background(), runtime.Call{Tool: tool, Arguments: json.RawMessage(`{}`), Client: "mcp:test"})
		if err != nil || out.ToolError != nil {
			t.Fatalf("%s: %v %+v", tool, err, out)
		}
		t.Logf("%s: %s (%v, host calls %v)", tool, out.Result, time.Since(start).Round(time.Microsecond), out.Usage.HostCalls)
		var r result
		if err := json.Unmarshal(out.Result, &r); err != nil {
			t.Fatal(err)
		}
		got := map[int]int{}
		for _, y := range r.Years {
			got[y.Year] = y.Threads
		}
		if r.Threads != len(threadYears) || fmt.Sprint(got) != fmt.Sprint(want) || !slices.IsSortedFunc(r.Years, func(a, b struct {
			Year    int `json:"year"`
			Threads int `json:"threads"`
		}) int {
			return a.Year - b.Year
		}) {
			t.Errorf("%s: %s; want %v threads per year, %d in all, oldest year first", tool, out.Result, want, len(threadYears))
		}
		var compact strings.Builder
		json.NewEncoder(&compact).Encode(r)
		if first == nil {
			first = []byte(compact.String())
		} else if compact.String() != string(first) {
			t.Errorf("%s answers %s; another language answered %s", tool, compact.String(), first)
		}
		// An argument the schema does not allow is refused by each, as the SDKs refuse it.
		out, err = host.Call(context.Background(), runtime.Call{Tool: tool, Arguments: json.RawMessage(`{"year":2024}`), Client: "mcp:test"})
		if f != "threads-c.wasm" && (err != nil || out.ToolError == nil || !strings.Contains(out.ToolError.Message, "unexpected argument `year`")) {
			t.Errorf("%s with an unknown argument: %v %+v", tool, err, out)
		}
	}
}
