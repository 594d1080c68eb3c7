package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/builtin"
	"github.com/openhuman/openhuman-core/sdk"
)

// sdkModule is the module path of this repository, which holds the guest SDK.
const sdkModule = "github.com/openhuman/openhuman-core"

// sdkCopyDir is where `tools new --lang go` writes the SDK the binary was built
// with, as a module of its own that go.mod's replace directive points at.
const sdkCopyDir = "openhuman-sdk"

// newToolNameRE is policy's tool-name syntax (policy.toolNameRE).
var newToolNameRE = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

type newFlags struct {
	lang string
	dir  string
	sdk  string
}

// newToolsNewCmd is `openhuman-core tools new`.
func newToolsNewCmd() *cobra.Command {
	var f newFlags
	cmd := &cobra.Command{
		Use:   "new NAME --lang go|c|rust|as",
		Short: "Write a buildable tool skeleton: manifest, source, build script",
		Long: `new writes a folder NAME/ with a working tool named NAME: tool.toml (the manifest),
the source, and build.sh (the build command). Install (build, pack, pin, copy) and
call it:

  openhuman-core tools install NAME
  openhuman-core tools call NAME '{}'

Go (--lang go, Go 1.24+): main.go and a go.mod whose replace directive resolves
the SDK (` + sdkModule + `/sdk) from a local folder: the Go
module proxy does not serve this module. By default that folder is
NAME/` + sdkCopyDir + `/, a copy of the SDK this binary was built with (it speaks
the host's ABI and needs no network); --sdk DIR points the replace at a checkout
of openhuman-core instead (its go.sum then needs ` + "`go mod tidy`" + ` once, online).

C (--lang c, clang and lld): NAME.c and openhuman.h, no libc.

Rust (--lang rust, cargo and a rustc with the wasm32-unknown-unknown target, e.g.
Debian's rustc, cargo and libstd-rust-dev-wasm32): Cargo.toml, src/lib.rs and the
Rust SDK in NAME/` + sdkCopyDir + `/, a crate with no dependencies (builds offline).

AssemblyScript (--lang as, asc from assemblyscript@` + ascVersion + ` on npm, Node 20+):
NAME.ts, package.json and the AssemblyScript SDK in NAME/` + sdkCopyDir + `/.

When the toolchain is missing, new says what to install.`,
		Example: `  openhuman-core tools new hello --lang go
  openhuman-core tools new hello --lang c
  openhuman-core tools new hello --lang rust
  openhuman-core tools new hello --lang as
  openhuman-core tools new acme.notes --lang go --dir notes --sdk ~/src/openhuman-core`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNew(cmd.OutOrStdout(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.lang, "lang", "", "go, c, rust or as (AssemblyScript) (required)")
	cmd.Flags().StringVar(&f.dir, "dir", "", "folder to create (default NAME)")
	cmd.Flags().StringVar(&f.sdk, "sdk", "", "Go: a checkout of openhuman-core for the replace directive (default: a copy of this binary's SDK in NAME/"+sdkCopyDir+")")
	_ = cmd.MarkFlagRequired("lang")
	return cmd
}

func runNew(out io.Writer, name string, f newFlags) error {
	if !newToolNameRE.MatchString(name) {
		return &exitError{code: 2, err: fmt.Errorf("tool name %q must match %s (lower case, digits, '.', '_', '-')", name, newToolNameRE)}
	}
	if slices.Contains(builtin.Catalogue, name) {
		return &exitError{code: 2, err: fmt.Errorf("tool name %q is a first-party tool name; choose another", name)}
	}
	if !slices.Contains([]string{"go", "c", "rust", "as"}, f.lang) {
		return &exitError{code: 2, err: fmt.Errorf("--lang %q: give go, c, rust or as", f.lang)}
	}
	if f.sdk != "" && f.lang != "go" {
		return &exitError{code: 2, err: errors.New("--sdk is for --lang go")}
	}
	dir := f.dir
	if dir == "" {
		dir = name
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s already exists and is not empty; choose another --dir", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	files := map[string]string{"tool.toml": newManifest(name, f.lang)}
	wasm := name + ".wasm"
	switch f.lang {
	case "go":
		replace := "./" + sdkCopyDir
		if f.sdk != "" {
			abs, err := filepath.Abs(f.sdk)
			if err != nil {
				return fmt.Errorf("--sdk %s: %w", f.sdk, err)
			}
			if _, err := os.Stat(filepath.Join(abs, "sdk", "sdk.go")); err != nil {
				return fmt.Errorf("--sdk %s is not a checkout of openhuman-core (no sdk/sdk.go): %w", f.sdk, err)
			}
			replace = abs
		}
		files["go.mod"] = fmt.Sprintf("module %s\n\ngo 1.24\n\nrequire %s v0.0.0\n\n// The module proxy does not serve %s: the SDK comes from a local folder.\nreplace %s => %s\n",
			goModuleName(name), sdkModule, sdkModule, sdkModule, replace)
		files["main.go"] = strings.ReplaceAll(goSkeleton, "NAME", name)
		files["build.sh"] = fmt.Sprintf("#!/bin/sh\n# Builds %s with standard Go 1.24+ (no TinyGo); -trimpath makes two builds byte-identical.\nset -e\ncd \"$(dirname \"$0\")\"\nGOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags=\"-s -w\" -o %s .\n", wasm, wasm)
	case "c":
		files[name+".c"] = strings.ReplaceAll(cSkeleton, "NAME", name)
		h, err := sdk.Source.ReadFile("openhuman.h")
		if err != nil {
			return fmt.Errorf("the SDK copy in this binary: %w", err)
		}
		files["openhuman.h"] = string(h)
		files["build.sh"] = fmt.Sprintf("#!/bin/sh\n# Builds %s with clang and lld (no libc, no WASI); -mbulk-memory lets clang use memory.copy for struct copies.\nset -e\ncd \"$(dirname \"$0\")\"\nclang --target=wasm32-wasi -nostdlib -O2 -mbulk-memory -Wl,--no-entry -Wl,--export-dynamic -Wl,--strip-all -o %s %s.c\n", wasm, wasm, name)
	case "rust":
		crate := rustCrateName(name)
		files["Cargo.toml"] = strings.NewReplacer("CRATE", crate, "SDKDIR", sdkCopyDir).Replace(rustCargoToml)
		files["src/lib.rs"] = strings.ReplaceAll(rustSkeleton, "NAME", name)
		files["build.sh"] = strings.NewReplacer("NAME", name, "CRATE", strings.ReplaceAll(crate, "-", "_")).Replace(rustBuildScript)
	case "as":
		files[name+".ts"] = strings.NewReplacer("NAME", name, "SDKDIR", sdkCopyDir).Replace(asSkeleton)
		files["package.json"] = strings.NewReplacer("PKG", goModuleName(name), "VERSION", ascVersion).Replace(asPackageJSON)
		files["build.sh"] = strings.NewReplacer("NAME", name, "SDKDIR", sdkCopyDir, "VERSION", ascVersion).Replace(asBuildScript)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for rel, text := range files {
		mode := fs.FileMode(0o644)
		if rel == "build.sh" {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(filepath.Join(dir, rel)), err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), mode); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, rel), err)
		}
	}
	switch {
	case f.lang == "go" && f.sdk == "":
		if err := writeSDKCopy(filepath.Join(dir, sdkCopyDir)); err != nil {
			return err
		}
	case f.lang == "rust":
		if err := copySDKDir("rust", filepath.Join(dir, sdkCopyDir)); err != nil {
			return err
		}
	case f.lang == "as":
		if err := copySDKDir("assemblyscript", filepath.Join(dir, sdkCopyDir)); err != nil {
			return err
		}
	}
	var names []string
	for rel := range files {
		names = append(names, rel)
	}
	slices.Sort(names)
	if f.lang != "c" && f.sdk == "" {
		names = append(names, sdkCopyDir+"/")
	}
	fmt.Fprintf(out, "created %s/ (%s): %s\n\nnext:\n  openhuman-core tools install %s      # builds with %s, packs, pins and copies %s\n  openhuman-core tools call %s '{}'\n",
		dir, langNames[f.lang], strings.Join(names, ", "), dir, filepath.Join(dir, "build.sh"), wasm, name)
	if missing := missingToolchain(f.lang, dir); missing != "" {
		fmt.Fprintf(out, "\nNOTE: %s\n", missing)
	}
	return nil
}

// writeSDKCopy writes the SDK built into this binary as a module at dir: a go.mod
// for the repository's module path (the SDK needs only the standard library) and
// the sdk/ packages without their tests.
func writeSDKCopy(dir string) error {
	gomod := fmt.Sprintf("// The openhuman-core guest SDK, copied by `openhuman-core tools new` from the\n// binary it was built into (%s).\nmodule %s\n\ngo 1.24\n", "openhuman-core "+Version(), sdkModule)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("writing the SDK copy: %w", err)
	}
	return fs.WalkDir(sdk.Source, ".", func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() && (p == "rust" || p == "assemblyscript") {
			return fs.SkipDir // the other languages' SDKs
		}
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := sdk.Source.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, "sdk", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("writing the SDK copy: %w", err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("writing the SDK copy: %w", err)
		}
		return nil
	})
}

// goModuleName turns a tool name into a local module path.
func goModuleName(name string) string {
	return path.Clean(strings.NewReplacer(".", "-").Replace(name))
}

func newManifest(name, lang string) string {
	in := `{"type":"object","properties":{"name":{"type":"string","maxLength":64,"description":"Who to greet."}},"additionalProperties":false}`
	outSchema := `{"type":"object","properties":{"greeting":{"type":"string"},"sources":{"type":"integer"}},"required":["greeting","sources"],"additionalProperties":false}`
	desc := "Greets the caller and says how many sources (mail threads, chats, documents) the memory tree holds."
	mem := 32
	switch lang {
	case "rust", "as":
		mem = 16 // the Rust and AssemblyScript allocators grow the heap into it
	case "c":
		in = `{"type":"object","properties":{},"additionalProperties":false}`
		outSchema = `{"type":"object","properties":{"sources":{"type":"integer"}},"required":["sources"],"additionalProperties":false}`
		desc = "Says how many sources (mail threads, chats, documents) the memory tree holds."
		mem = 2
	}
	return fmt.Sprintf(`# The manifest of %[1]s (sdk/AUTHORING.md). `+"`tools install`"+` packs it into the module.
abi = "openhuman/1"
capabilities = ["memory.read"]   # the host functions it may call (sdk/memory)

[[tool]]
name = %[2]q
title = %[2]q
description = %[3]q
input_schema = '''%[4]s'''
output_schema = '''%[5]s'''   # the host checks every result against it
annotations = { readOnlyHint = true, openWorldHint = false }

[limits]   # requests; the operator's policy may lower them
timeout_ms = 5000
memory_mib = %[6]d
`, name+".wasm", name, desc, in, outSchema, mem)
}

// goSkeleton is main.go of a new Go tool (NAME is replaced by the tool's name).
const goSkeleton = `//go:build wasip1

// Command NAME is an openhuman-core tool: it greets the caller and says how
// many sources the memory tree holds.
package main

import (
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
	"github.com/openhuman/openhuman-core/sdk/memory"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		args, err := r.Args("name") // unknown keys are refused with the shared message
		if err != nil {
			return nil, err
		}
		name, ok, err := args.OptionalString("name")
		if err != nil {
			return nil, err
		}
		if !ok {
			name = "there"
		}
		res, err := memory.ListSources(abi.SourcesListRequest{K: 1})
		if err != nil {
			return nil, err
		}
		return map[string]any{"greeting": "Hello, " + name + "!", "sources": res.Total}, nil
	})
}

func main() {}
`

// cSkeleton is NAME.c of a new C tool.
const cSkeleton = `// NAME: says how many sources the memory tree holds (openhuman/1 ABI, no libc).
#include "openhuman.h"

OH_BUMP_ALLOCATOR(64 * 1024)

static oh_u8 out[64];

OH_EXPORT("oh_call") oh_u64 oh_call(oh_u8 *req, oh_u32 len) {
	(void)req, (void)len; // no arguments
	static const char ask[] = "{\"k\":1}", key[] = "\"total\":", head[] = "{\"result\":{\"sources\":";
	oh_u64 reply = oh_sources_list((const oh_u8 *)ask, sizeof ask - 1);
	const oh_u8 *p = OH_PTR(reply);
	oh_u32 n = OH_LEN(reply), i = 0, k = 0, o = 0;
	for (; i < n && key[k]; i++) k = p[i] == (oh_u8)key[k] ? k + 1 : (p[i] == (oh_u8)key[0]);
	if (key[k]) { // no total: pass the host's error on
		static const char err[] = "{\"error\":{\"code\":\"unavailable\",\"message\":\"the memory tree did not answer\"}}";
		return OH_PACK(err, sizeof err - 1);
	}
	for (k = 0; head[k]; k++) out[o++] = (oh_u8)head[k];
	while (i < n && p[i] >= '0' && p[i] <= '9' && o < sizeof out - 2) out[o++] = p[i++];
	out[o++] = '}', out[o++] = '}';
	return OH_PACK(out, o);
}
`
