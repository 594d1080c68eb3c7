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

# Rebuild and re-pack the first-party tool modules (tools-wasm/modules/*.wasm.gz:
# memory, serving the six memory tools, and searxng_search):
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

# Audit every first-party module embedded in the binary (exit status 0 = all would load):
#   go run ./cmd/openhuman-core tools audit --builtin all
audit: build
    {{bin}} tools audit --builtin all

# Audit one module file under the configured policy (0 would load, 1 refused, 2 not wasm):
#   go run ./cmd/openhuman-core tools audit FILE.wasm [--json]
audit-file file: build
    {{bin}} tools audit {{file}}

# Formatting and vet (fails when gofmt would change a file):
#   test -z "$(gofmt -l .)" && go vet ./...
lint:
    @out="$(gofmt -l .)"; if [ -n "$out" ]; then echo "gofmt would change:"; echo "$out"; exit 1; fi
    go vet ./...

# Author flow for the Go example tool (build, pack, audit); see sdk/AUTHORING.md:
#   GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o bin/timeline.wasm ./examples/timeline
#   go run ./cmd/openhuman-core tools pack bin/timeline.wasm --manifest examples/timeline/tool.toml -o bin/timeline.wasm
#   go run ./cmd/openhuman-core tools audit bin/timeline.wasm
example: build
    GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o bin/timeline.wasm ./examples/timeline
    {{bin}} tools pack bin/timeline.wasm --manifest examples/timeline/tool.toml -o bin/timeline.wasm
    {{bin}} tools audit bin/timeline.wasm || true

# Rebuild the committed C modules (examples/c-hello, examples/hostile) with Debian's
# clang (apt-get install -y clang lld) and check they match their sources:
#   go test ./examples -run TestCModulesMatchSources -update
c-examples:
    go test ./examples -run TestCModulesMatchSources -update -count=1
