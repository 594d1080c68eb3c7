// Package layers holds the test of the house's layering (layers_test.go): which
// package may link which, read from `go list -deps`. It has no code of its own.
//
// The layers, bottom up:
//
//   - internal/analysis: the one text analyzer every backend indexes with.
//   - internal/retrieval/index: the backend contract (queries, filters, reads).
//   - internal/memtree: the SQLite backend (schema, writer, forget, status, plain
//     reads, the contract over FTS5); it imports analysis and index, never the
//     engine or the read API.
//   - internal/retrieval: the ranking engine over index.Backend; it imports no
//     backend and not the read API.
//   - internal/memory: the read API the tools call, over the engine and any
//     backend's read calls; it links no store.
//   - runtime, internal/mcpserver, internal/rpcserver, internal/toolwatch: the
//     sandbox and the servers; they consume the read API through runtime.Reader
//     and link no store and no SQLite driver.
//   - internal/ingest/readkit: what every ingest format reader is built on (the
//     reader contract, the report, the zip-aware file system, text decoding);
//     internal/ingest/mail, internal/ingest/chat and internal/ingest/notes, the
//     format families, import it and never each other; internal/ingest runs
//     them all (Run, the walk, detection, the write pipeline).
//   - cmd/openhuman-core wires a backend into the read API and the read API into
//     the runtime.
package layers
