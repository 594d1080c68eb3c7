package memtree

import "github.com/openhuman/openhuman-core/sdk/abi"

// This file exports how a hit's cited message is read back from the chunk that
// holds it, for other backends (internal/pgstore), so hit messages read alike on
// every backend. It adds no behaviour.

// HitChunk is a stored chunk as hit messages are read from it.
type HitChunk struct {
	Kind, Title string
	TS, TSEnd   int64 // the times of its first and last message
	Text        string
	Refs        []string
	Spans       [][2]int // aligned with Refs
}

// MessageFromChunk is the hit message of ref as chunk c holds it (author and
// time as far as the chunk's rendering keeps them); only Ref when c does not
// hold ref.
func MessageFromChunk(c HitChunk, ref string) abi.HitMessage {
	m := fromChunk(&hitChunk{kind: c.Kind, title: c.Title, ts: c.TS, tsEnd: c.TSEnd, text: c.Text, refs: c.Refs, spans: c.Spans}, ref)
	m.Author = clipRunes(m.Author, hitAuthorMaxChars)
	return m
}

// CitedRefs returns a hit's cited refs in order (SourceRef, then SourceRefs,
// each once), at most abi.MaxHitMessages.
func CitedRefs(h abi.ChunkHit) []string {
	refs := citedRefs(h)
	if len(refs) > abi.MaxHitMessages {
		refs = refs[:abi.MaxHitMessages]
	}
	return refs
}
