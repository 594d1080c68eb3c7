// Command gen builds, packs and pins the first-party tool modules: for each module
// of builtin.Modules (one may serve several tools) it compiles the folder's C
// source (<folder>.c, with stub.h and sdk/openhuman.h) with clang and wasm-ld as the
// C examples are built, validates the folder's tool.toml, packs it into the module's
// openhuman.manifest custom section, gzips the result deterministically into
// tools-wasm/modules/<folder>.wasm.gz and writes tools-wasm/digests.go with the
// sha256 of each packed (decompressed) module.
//
// Usage (from the repository root, or through `go generate ./tools-wasm/...`):
//
//	go run ./tools-wasm/gen          # rebuild and rewrite modules/ and digests.go
//	go run ./tools-wasm/gen -check   # rebuild into a temp dir; fail naming every module
//	                                 # whose digest differs from the committed one
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/builtin"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func main() {
	dir := flag.String("dir", "", "the tools-wasm directory (default: . when it holds gen/, else ./tools-wasm)")
	check := flag.Bool("check", false, "rebuild into a temporary directory and compare with the committed digests instead of writing")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// tool is one first-party module: its folder under tools-wasm/ (also its module
// file stem and its Name in messages), its capability and the tools it serves.
type tool struct {
	Folder, Name, Capability string
	Tools                    []string
}

func tools() []tool {
	var out []tool
	for _, m := range builtin.Modules {
		out = append(out, tool{Folder: m.Folder, Name: m.Folder, Capability: m.Capability, Tools: slices.Clone(m.Tools)})
	}
	return out
}

// built is one packed module.
type built struct {
	tool
	Packed   []byte
	SHA256   string
	Gz       []byte
	RawSize  int
	Duration time.Duration
}

func findDir(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	for _, d := range []string{".", "tools-wasm"} {
		if st, err := os.Stat(filepath.Join(d, "gen")); err == nil && st.IsDir() {
			if _, err := os.Stat(filepath.Join(d, "modules")); err == nil {
				return filepath.Abs(d)
			}
		}
	}
	return "", errors.New("cannot find the tools-wasm directory; run from the repository root or tools-wasm/, or pass -dir")
}

func run(ctx context.Context, dir string, check bool) error {
	dir, err := findDir(dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "openhuman-toolswasm-")
	if err != nil {
		return fmt.Errorf("creating a build directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	clangPath, err := clang()
	if err != nil {
		return err
	}
	version, err := toolchainVersion(ctx, clangPath)
	if err != nil {
		return err
	}
	var mods []built
	for _, t := range tools() {
		b, err := build(ctx, clangPath, dir, tmp, t)
		if err != nil {
			return err
		}
		slog.Info("built", "module", t.Name, "tools", len(t.Tools), "raw_bytes", b.RawSize, "gz_bytes", len(b.Gz), "sha256", b.SHA256, "took", b.Duration.Round(time.Millisecond))
		mods = append(mods, b)
	}
	src, err := digestsSource(version, mods)
	if err != nil {
		return err
	}
	if check {
		return compare(dir, version, mods)
	}
	if err := os.MkdirAll(filepath.Join(dir, "modules"), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Join(dir, "modules"), err)
	}
	for _, m := range mods {
		p := filepath.Join(dir, "modules", m.Folder+".wasm.gz")
		if err := os.WriteFile(p, m.Gz, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	p := filepath.Join(dir, "digests.go")
	if err := os.WriteFile(p, src, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// Flags are the clang flags of the first-party modules: those of the C examples
// (examples/internal/cbuild: no libc, no entry point, every export_name exported,
// symbols stripped, so the build is reproducible and small) and an initial memory of
// 1 MiB, so that the request and the replies of a usual call fit without growing the
// memory (an instance whose memory doubles is not pooled again, runtime/instance.go).
var Flags = []string{
	"--target=wasm32-wasi", "-nostdlib", "-O2", "-mbulk-memory",
	"-Wl,--no-entry", "-Wl,--export-dynamic", "-Wl,--strip-all", "-Wl,--initial-memory=1048576",
}

// clang returns the path of clang when it is installed and can link wasm (wasm-ld
// from lld), or the reason it cannot.
func clang() (string, error) {
	c, err := exec.LookPath("clang")
	if err != nil {
		return "", fmt.Errorf("clang is not installed (apt-get install -y clang lld): %w", err)
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		return "", fmt.Errorf("wasm-ld is not installed (apt-get install -y lld): %w", err)
	}
	return c, nil
}

// toolchainVersion is the first line of `clang --version`: another clang builds
// different bytes, so a failed check names the one the committed modules came from.
func toolchainVersion(ctx context.Context, clangPath string) (string, error) {
	out, err := exec.CommandContext(ctx, clangPath, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("asking clang for its version: %w", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first), nil
}

func build(ctx context.Context, clangPath, dir, tmp string, t tool) (built, error) {
	start := time.Now()
	out := filepath.Join(tmp, t.Folder+".wasm")
	// Relative paths from the module's folder, so that where the repository lives
	// cannot change the bytes.
	args := append(slices.Clone(Flags), "-I../../sdk", "-o", out, t.Folder+".c")
	cmd := exec.CommandContext(ctx, clangPath, args...)
	cmd.Dir = filepath.Join(dir, t.Folder)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return built{}, fmt.Errorf("building %s (clang %s in %s): %w\n%s", t.Name, strings.Join(args, " "), cmd.Dir, err, stderr.String())
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return built{}, fmt.Errorf("reading the built %s: %w", t.Name, err)
	}
	manifestPath := filepath.Join(dir, t.Folder, "tool.toml")
	manifest, err := os.ReadFile(manifestPath)
	if err != nil {
		return built{}, fmt.Errorf("reading the manifest of %s: %w", t.Name, err)
	}
	// validate compiles the tools' JSON Schemas (policy.ParseManifest) before the
	// digest is computed: the server relies on it and does not compile them again
	// (runtime.BuiltinModule.SchemasChecked).
	if err := validate(t, manifestPath, manifest, wasm); err != nil {
		return built{}, err
	}
	packed, err := wasmbin.SetCustomSection(wasm, policy.ManifestSection, manifest)
	if err != nil {
		return built{}, fmt.Errorf("packing the manifest into %s: %w", t.Name, err)
	}
	gz, err := Gzip(packed)
	if err != nil {
		return built{}, fmt.Errorf("compressing %s: %w", t.Name, err)
	}
	sum := sha256.Sum256(packed)
	return built{tool: t, Packed: packed, SHA256: hex.EncodeToString(sum[:]), Gz: gz, RawSize: len(packed), Duration: time.Since(start)}, nil
}

// validate checks the manifest (exactly the expected tools, in order, and exactly
// the expected capability) and the module's imports and exports against the ABI.
func validate(t tool, manifestPath string, manifest, wasm []byte) error {
	m, err := policy.ParseManifest(manifest, manifestPath)
	if err != nil {
		return err
	}
	if m.ABI != abi.Version {
		return fmt.Errorf("%s: abi is %q; first-party modules use %q", manifestPath, m.ABI, abi.Version)
	}
	var names []string
	for _, x := range m.Tools {
		names = append(names, x.Name)
	}
	if !slices.Equal(names, t.Tools) {
		return fmt.Errorf("%s declares tools %v; it must declare exactly the tools %v, in that order", manifestPath, names, t.Tools)
	}
	if !slices.Equal(m.Capabilities, []string{t.Capability}) {
		return fmt.Errorf("%s requests capabilities %v; %s must request exactly [%q]", manifestPath, m.Capabilities, t.Name, t.Capability)
	}
	mod, err := wasmbin.Parse(wasm)
	if err != nil {
		return fmt.Errorf("parsing the built %s: %w", t.Name, err)
	}
	if err := policy.CheckModule(mod, m, m.Capabilities); err != nil {
		return fmt.Errorf("the built %s fails the static gate for its own manifest: %w", t.Name, err)
	}
	for _, e := range []string{abi.ExportMemory, abi.ExportAlloc, abi.ExportCall} {
		if _, ok := mod.Export(e); !ok {
			return fmt.Errorf("the built %s does not export %s; does it include stub.h?", t.Name, e)
		}
	}
	return nil
}

// Gzip compresses b deterministically: no file name, zero modification time, level 9.
func Gzip(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zw.Header = gzip.Header{OS: 255}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digestsSource(version string, mods []built) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by \"go run ./tools-wasm/gen\"; DO NOT EDIT.\n\npackage toolswasm\n\n")
	b.WriteString("// clangVersion is the clang that built the committed modules: another clang\n// builds different bytes, so `go run ./tools-wasm/gen -check` names it when digests differ.\n")
	fmt.Fprintf(&b, "const clangVersion = %q\n\n", version)
	b.WriteString("// digests pins the sha256 of each packed module (after decompression), by file stem.\nvar digests = map[string]string{\n")
	for _, m := range mods {
		fmt.Fprintf(&b, "\t%q: %q,\n", m.Folder, m.SHA256)
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting digests.go: %w", err)
	}
	return src, nil
}

var digestLine = regexp.MustCompile(`"([a-z0-9_]+)":\s*"([0-9a-f]{64})"`)
var versionLine = regexp.MustCompile(`const clangVersion = "([^"]*)"`)

// compare checks the fresh builds against the committed digests.go and modules/.
func compare(dir, version string, mods []built) error {
	src, err := os.ReadFile(filepath.Join(dir, "digests.go"))
	if err != nil {
		return fmt.Errorf("reading the committed digests: %w", err)
	}
	committed := map[string]string{}
	for _, m := range digestLine.FindAllSubmatch(src, -1) {
		committed[string(m[1])] = string(m[2])
	}
	committedVersion := ""
	if m := versionLine.FindSubmatch(src); m != nil {
		committedVersion = string(m[1])
	}
	var problems []string
	for _, m := range mods {
		want, ok := committed[m.Folder]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (%s): no committed digest", m.Name, m.Folder))
		case want != m.SHA256:
			problems = append(problems, fmt.Sprintf("%s (%s): rebuilt sha256 %s, committed %s", m.Name, m.Folder, m.SHA256, want))
		}
		if gzDigest, err := committedModuleDigest(filepath.Join(dir, "modules", m.Folder+".wasm.gz")); err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s): %v", m.Name, m.Folder, err))
		} else if gzDigest != m.SHA256 {
			problems = append(problems, fmt.Sprintf("%s (%s): committed modules/%s.wasm.gz has sha256 %s, rebuilt %s", m.Name, m.Folder, m.Folder, gzDigest, m.SHA256))
		}
	}
	if len(problems) > 0 {
		hint := "run `go generate ./tools-wasm/...` and commit modules/ and digests.go"
		if committedVersion != version {
			hint = fmt.Sprintf("the committed modules were built with %s but this toolchain is %s; use %s, or rebuild with `go generate ./tools-wasm/...` and commit", committedVersion, version, committedVersion)
		}
		return fmt.Errorf("%d module check(s) failed:\n  %s\n%s", len(problems), strings.Join(problems, "\n  "), hint)
	}
	fmt.Fprintf(os.Stderr, "gen: all %d modules rebuild byte-identically to the committed digests (%s)\n", len(mods), version)
	return nil
}

func committedModuleDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the committed module: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("%s is not gzip: %w", path, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, zr); err != nil {
		return "", fmt.Errorf("decompressing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
