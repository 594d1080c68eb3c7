// Package toolswasm embeds the first-party tool modules, packed with their
// manifests and pinned by sha256: memory (capability memory.read), one module
// serving the six memory tools memory.search, memory.recall, tree.read_chunk,
// tree.browse, tree.top_entities and tree.list_sources; and searxng_search
// (capability web.searxng).
//
// Each module's source is a small folder here (<folder>.c + tool.toml, with stub.h):
// C built like examples/c-hello (Debian clang and lld, no libc, a few kilobytes),
// which only dispatches on the tool and passes the call to its capability's host
// function. The tools' logic — argument checks, result shaping, parsing SearXNG's
// answer — is package internal/builtin, which the host runs for them
// (runtime/toolcall.go) and which also lists the modules and their tools
// (builtin.Modules). `go generate ./tools-wasm/...` (the gen command) rebuilds
// modules/*.wasm.gz and digests.go, and `go run ./tools-wasm/gen -check` verifies
// that a rebuild is byte-identical to what is committed.
package toolswasm

//go:generate go run ./gen
