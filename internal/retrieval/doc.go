// Package retrieval is the ranking side of the memory tree: the stages that turn a
// query into memory.search's and memory.recall's ordered hits. The store
// (internal/memtree) keeps the data; this package keeps what is decided about it —
// the tunables (params.go, with their reasons in RATIONALE.md), how hits are fused
// and what a hit's score means.
package retrieval
