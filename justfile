# openhuman-core task runner. `just` is optional: every recipe below is one plain
# `go` (or shell) command, printed by `just --dry-run <recipe>` and repeated in the
# comment above it, so you can copy it without installing anything.
# Get just: `apt-get install just` (Debian 13+), `brew install just`, or
# `cargo install just`; see https://just.systems.

set shell := ["bash", "-euo", "pipefail", "-c"]

bin := "bin/openhuman-core"

# List the recipes.
default:
    @just --list

# Build the static binary into bin/:
#   CGO_ENABLED=0 go build -trimpath -o bin/openhuman-core ./cmd/openhuman-core
build:
    CGO_ENABLED=0 go build -trimpath -o {{bin}} ./cmd/openhuman-core

# Rebuild and re-pack the first-party tool modules (tools-wasm/*.wasm.gz):
#   go generate ./tools-wasm/...
wasm:
    go generate ./tools-wasm/...

# Run every test:
#   go test ./...
test:
    go test ./...

# Run the benchmarks (figures, not pass/fail), one package at a time to keep the
# 2-core machine quiet:
#   go test -run '^$' -bench . -benchmem ./...
bench:
    go test -run '^$' -bench . -benchmem ./...

# The README's smoke test piped into the built binary; prints exactly two JSON lines:
#   printf '%s\n' '<initialize>' '<initialized>' '<tools/list>' | go run ./cmd/openhuman-core mcp
smoke: build
    printf '%s\n' \
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}' \
      '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
      '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
      | {{bin}} mcp

# Audit every first-party module and every example module (exit status 0 = would load):
#   go run ./cmd/openhuman-core tools audit --builtin all
#   go run ./cmd/openhuman-core tools audit examples/c-hello/hello.wasm
audit: build
    {{bin}} tools audit --builtin all
    for f in examples/c-hello/*.wasm; do {{bin}} tools audit "$f" || true; done

# Formatting and vet (fails when gofmt would change a file):
#   test -z "$(gofmt -l .)" && go vet ./...
lint:
    @out="$(gofmt -l .)"; if [ -n "$out" ]; then echo "gofmt would change:"; echo "$out"; exit 1; fi
    go vet ./...

# Author flow for the Go example tool (build, pack, audit); see sdk/AUTHORING.md:
#   GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o bin/timeline.wasm ./examples/timeline
#   go run ./cmd/openhuman-core tools pack bin/timeline.wasm --manifest examples/timeline/tool.toml
#   go run ./cmd/openhuman-core tools audit bin/timeline.wasm
example: build
    GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o bin/timeline.wasm ./examples/timeline
    {{bin}} tools pack bin/timeline.wasm --manifest examples/timeline/tool.toml
    {{bin}} tools audit bin/timeline.wasm || true

# Rebuild the C example with Debian's clang (apt-get install -y clang lld):
#   clang --target=wasm32-wasi -nostdlib -O2 -Isdk -Wl,--no-entry -Wl,--export-dynamic -o examples/c-hello/hello.raw.wasm examples/c-hello/hello.c
c-example:
    clang --target=wasm32-wasi -nostdlib -O2 -Isdk -Wl,--no-entry -Wl,--export-dynamic -Wl,--strip-all -o examples/c-hello/hello.raw.wasm examples/c-hello/hello.c
