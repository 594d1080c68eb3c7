package pgstore

import (
	"context"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// The reads hits' cited messages are built from (index.Messages; the read API
// builds them): the hits' chunks and the chunks near them. This backend keeps
// no whole messages yet (no Merge).

// MessageChunks reads the chunks with ids and their messages' spans.
func (r reader) MessageChunks(ctx context.Context, ids []string) (map[string]index.MessageChunk, error) {
	return r.hitChunks(ctx, `c.id = ANY($1)`, ids)
}

// NearChunks reads the chunks within n places of each chunk of around in its
// source, in one query.
func (r reader) NearChunks(ctx context.Context, around []index.MessageChunk, n int) ([]index.MessageChunk, error) {
	var srcs, from, to []int64
	for _, c := range around {
		srcs, from, to = append(srcs, c.Source), append(from, int64(c.Seq-n)), append(to, int64(c.Seq+n))
	}
	more, err := r.hitChunks(ctx, `c.key IN (SELECT c2.key FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS w(src, lo, hi)
		JOIN chunks c2 ON c2.source_key = w.src AND c2.seq BETWEEN w.lo AND w.hi)`, srcs, from, to)
	out := make([]index.MessageChunk, 0, len(more))
	for _, m := range more {
		out = append(out, m)
	}
	return out, err
}

// StoredMessages finds none: this backend keeps no whole messages yet.
func (r reader) StoredMessages(ctx context.Context, want []index.SourceRef) (map[index.SourceRef]index.StoredMessage, error) {
	return nil, nil
}

// hitChunks reads the chunks matching cond (over chunks c), by id, under the
// call's scope (a hit's neighbours are of its source, so in scope with it).
func (r reader) hitChunks(ctx context.Context, cond string, vals ...any) (map[string]index.MessageChunk, error) {
	a := args(vals)
	cond += a.scoped(r.scope, "c")
	rows, err := r.s.rd.Query(ctx, `SELECT c.id, c.source_key, c.kind, c.title, c.seq, c.ts, c.ts_end, c.text, c.source_refs_json, c.ref_spans_json
		FROM chunks c WHERE `+cond, a...)
	if err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	defer rows.Close()
	return memtree.ReadMessageChunks(rows)
}
