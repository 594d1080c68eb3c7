package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openhuman/openhuman-core/internal/guestbuild"
	"github.com/openhuman/openhuman-core/sdk"
)

// ascVersion is the AssemblyScript compiler a new AssemblyScript tool pins.
const ascVersion = guestbuild.ASCVersion

// langNames are the languages of `tools new`, as its output names them.
var langNames = map[string]string{"go": "Go", "c": "C", "rust": "Rust", "as": "AssemblyScript"}

// rustCrateName turns a tool name into a Cargo package name ('.' is not allowed).
func rustCrateName(name string) string {
	return strings.ReplaceAll(name, ".", "-")
}

// copySDKDir writes the SDK folder sub of sdk.Source (rust or assemblyscript) to dst.
func copySDKDir(sub, dst string) error {
	return fs.WalkDir(sdk.Source, sub, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := sdk.Source.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(p, sub+"/")))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return fmt.Errorf("writing the SDK copy: %w", err)
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return fmt.Errorf("writing the SDK copy: %w", err)
		}
		return nil
	})
}

// missingToolchain says what to install when the toolchain lang's build.sh
// needs is not found; "" when it is.
func missingToolchain(lang, dir string) string {
	switch lang {
	case "c":
		if _, err := cbuildClang(); err != nil {
			return err.Error() + "; install it before `tools install`"
		}
	case "rust":
		if _, _, err := guestbuild.Rustc(); err != nil {
			return strings.TrimPrefix(err.Error(), guestbuild.ErrMissing.Error()+": ") + "; install it before `tools install`"
		}
	case "as":
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "asc")); err == nil {
			return ""
		}
		if _, err := guestbuild.Asc(""); err != nil {
			return strings.TrimPrefix(err.Error(), guestbuild.ErrMissing.Error()+": ") + "; before `tools install`, install it or run `npm install` in " + dir
		}
	}
	return ""
}

// cbuildClang finds clang and wasm-ld as the C build.sh needs them.
func cbuildClang() (string, error) {
	for _, tool := range []string{"clang", "wasm-ld"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is not installed (Debian: apt-get install clang lld)", tool)
		}
	}
	return "clang", nil
}

// rustCargoToml is Cargo.toml of a new Rust tool: a cdylib, built small.
const rustCargoToml = `# An openhuman-core tool module: build it with build.sh (or ` + "`openhuman-core tools install`" + `).
[package]
name = "CRATE"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib"]
path = "src/lib.rs"

[dependencies]
openhuman = { path = "SDKDIR" }   # the Rust SDK, no dependencies: builds offline

[profile.release]   # a module of a few tens of kilobytes
opt-level = "z"
lto = true
codegen-units = 1
panic = "abort"     # a panic traps: the call fails as internal
strip = "debuginfo" # keeps the producers section (tools audit shows Rust and rustc) and function names
`

// rustSkeleton is src/lib.rs of a new Rust tool.
const rustSkeleton = `//! NAME: an openhuman-core tool. It greets the caller and says how many sources
//! the memory tree holds.
use openhuman::json::Value;
use openhuman::{memory, Request, Result};

fn handle(r: &Request) -> Result<Value> {
    let args = r.args(&["name"])?; // unknown keys are refused with the shared message
    let name = args.optional_str("name")?.unwrap_or("there");
    let sources = memory::list_sources(&memory::SourcesQuery { k: 1, ..Default::default() })?;
    let greeting = ["Hello, ", name, "!"].concat();
    Ok(Value::object([("greeting", greeting.into()), ("sources", sources.total.into())]))
}

openhuman::export!(handle);
`

// rustBuildScript is build.sh of a new Rust tool.
const rustBuildScript = `#!/bin/sh
# Builds NAME.wasm for wasm32-unknown-unknown (not wasm32-wasi: the module's only
# imports are the host functions it calls), offline: the SDK has no dependencies.
set -e
cd "$(dirname "$0")"
# A rustc with the wasm32-unknown-unknown standard library: $RUSTC, the one on
# PATH, or Debian's (a rustup toolchain may lack the target).
found=
for rustc in "${RUSTC:-}" "$(command -v rustc || true)" /usr/bin/rustc; do
  [ -n "$rustc" ] && [ -x "$rustc" ] || continue
  lib=$("$rustc" --print target-libdir --target wasm32-unknown-unknown 2>/dev/null) || continue
  if ls "$lib"/libstd-*.rlib >/dev/null 2>&1; then found=$rustc; break; fi
done
if [ -z "$found" ]; then
  echo "build.sh: no rustc with the wasm32-unknown-unknown target; install one (Debian: apt-get install rustc cargo libstd-rust-dev-wasm32; rustup: rustup target add wasm32-unknown-unknown)" >&2
  exit 1
fi
RUSTC="$found" "$(dirname "$found")/cargo" build --offline --release --quiet --target wasm32-unknown-unknown
cp target/wasm32-unknown-unknown/release/CRATE.wasm NAME.wasm
`

// asSkeleton is NAME.ts of a new AssemblyScript tool.
const asSkeleton = `// NAME: an openhuman-core tool. It greets the caller and says how many sources
// the memory tree holds.
import { Request, Result, Value, memory, serve } from "./SDKDIR/assembly/index";
export { oh_alloc } from "./SDKDIR/assembly/index";

function handle(r: Request): Result<Value> {
  const args = r.args(["name"]); // unknown keys are refused with the shared message
  if (args.failed) return Result.err<Value>(args.error!);
  const name = args.val.optionalStr("name", "there");
  if (name.failed) return Result.err<Value>(name.error!);
  const q = new memory.SourcesQuery();
  q.k = 1;
  const sources = memory.listSources(q);
  if (sources.failed) return Result.err<Value>(sources.error!);
  return Result.ok<Value>(Value.object().setStr("greeting", "Hello, " + name.val + "!").setNum("sources", sources.val.total));
}

export function oh_call(ptr: usize, len: i32): i64 {
  return serve(ptr, len, handle);
}
`

// asPackageJSON lets `npm install` in a new AssemblyScript tool's folder fetch asc.
const asPackageJSON = `{
  "name": "PKG",
  "private": true,
  "description": "An openhuman-core tool module: build it with build.sh",
  "devDependencies": {
    "assemblyscript": "VERSION"
  }
}
`

// asBuildScript is build.sh of a new AssemblyScript tool.
const asBuildScript = `#!/bin/sh
# Builds NAME.wasm with asc (AssemblyScript VERSION): the incremental runtime (a
# GC, so an instance serves many calls), and aborts routed to the host log.
set -e
cd "$(dirname "$0")"
asc=${ASC:-$(command -v asc || true)}
if [ -z "$asc" ] && [ -x node_modules/.bin/asc ]; then asc=node_modules/.bin/asc; fi
if [ -z "$asc" ]; then
  echo "build.sh: asc is not installed; run npm install here, or npm install -g assemblyscript@VERSION (Node 20 or later)" >&2
  exit 1
fi
"$asc" NAME.ts -o NAME.wasm -O3z --runtime incremental --use abort=SDKDIR/assembly/abi/abort
`
