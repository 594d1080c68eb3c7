package memtree

import (
	"encoding/json"
	"fmt"
)

// This file exports the merge of a Merge source (merge.go) for other backends'
// writers (internal/pgstore), so a chat export merges with the messages stored
// before alike on every backend. It adds no behaviour.

// MergeRow is one message of a Merge source as a backend keeps it to merge
// later exports with: its key (the Ref, or a key made of its content), 63 bits
// of the SHA-256 of its encoding, its time and its encoding.
type MergeRow struct {
	Key  string
	Hash int64
	TS   int64
	Msg  string
}

// MergeRows returns a Merge source's messages as rows to keep (nil for other
// sources).
func (p *Prepared) MergeRows() []MergeRow {
	if len(p.rows) == 0 {
		return nil
	}
	out := make([]MergeRow, len(p.rows))
	for i, r := range p.rows {
		out[i] = MergeRow{Key: r.key, Hash: r.hash, TS: r.ts, Msg: r.msg}
	}
	return out
}

// PrepareUnion prepares p's source together with stored messages it lacks
// (their Msg encodings): the union an export and the messages stored before
// make, chunked as the SQLite writer chunks it.
func PrepareUnion(p *Prepared, stored []string) (*Prepared, error) {
	msgs := make([]MessageInput, 0, len(p.in.Messages)+len(stored))
	msgs = append(msgs, p.in.Messages...)
	for _, js := range stored {
		var sm storedMessage
		if err := json.Unmarshal([]byte(js), &sm); err != nil {
			return nil, fmt.Errorf("decode a stored message: %w (the store is damaged; ingest the source again without its earlier exports)", err)
		}
		msgs = append(msgs, sm.input())
	}
	in := p.in
	in.Messages = msgs
	return prepare(in, false)
}
