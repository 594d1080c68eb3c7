// Package toolswasm embeds the seven first-party tool modules (memory.search,
// memory.recall, tree.read_chunk, tree.browse, tree.top_entities, tree.list_sources,
// searxng_search), packed with their manifests and pinned by sha256.
//
// Each tool's source is a small folder here (main.go + tool.toml) whose logic lives
// in package firstparty; `go generate ./tools-wasm/...` (the gen command) rebuilds
// modules/*.wasm.gz and digests.go, and `go run ./tools-wasm/gen -check` verifies
// that a rebuild is byte-identical to what is committed.
package toolswasm

//go:generate go run ./gen
