package memtree

import (
	"sort"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// This file exports what Prepare built for other backends' writers (the
// PostgreSQL backend, internal/pgstore): the same chunks, ids and entities, so a
// source chunks alike on every backend. It adds no behaviour.

// PreparedChunk is one chunk of a prepared source, as the SQLite writer stores it
// (Entities sorted by id).
type PreparedChunk struct {
	ID          string
	Seq         int
	Text        string
	Refs        []string // message refs, in order (the first is the chunk's source_ref)
	Spans       [][2]int // byte range of each ref's text in Text, aligned with Refs
	TS          int64    // first message time
	TSStart     int64
	TSEnd       int64
	Tokens      int // approximate tokens (runes / 4)
	Attachments []abi.Attachment
	Entities    []PreparedEntity
}

// PreparedEntity is an entity a chunk references.
type PreparedEntity struct {
	ID, Kind, Surface string
}

// Input is the validated source Prepare chunked (messages in time order).
func (p *Prepared) Input() SourceInput { return p.in }

// Chunks returns the prepared source's chunks in order.
func (p *Prepared) Chunks() []PreparedChunk {
	out := make([]PreparedChunk, len(p.chunks))
	for i, c := range p.chunks {
		pc := PreparedChunk{ID: c.ID, Seq: c.Seq, Text: c.Text, Refs: c.Refs, Spans: c.Spans,
			TS: c.TS, TSStart: c.TSStart, TSEnd: c.TSEnd, Tokens: p.enc[i].tokens, Attachments: c.Attachments}
		for id, e := range c.Entities {
			pc.Entities = append(pc.Entities, PreparedEntity{ID: id, Kind: e.Kind, Surface: e.Surface})
		}
		sort.Slice(pc.Entities, func(a, b int) bool { return pc.Entities[a].ID < pc.Entities[b].ID })
		out[i] = pc
	}
	return out
}
