package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// neighbourChunks is how many chunks either side of a hit (same source) are read
// for a cited message the hit's own chunk does not hold, as on SQLite.
const neighbourChunks = 2

// storedChunk is a chunk as hit messages are read from it.
type storedChunk struct {
	source int64
	seq    int
	c      memtree.HitChunk
}

// HitMessages fills each hit's Messages from its cited refs, read from the
// chunk holding each (the hit's own or a neighbour's), and returns the bound
// applied to their texts, as the SQLite backend does for sources it keeps no
// whole messages of (this backend keeps none yet: no Merge).
func (r reader) HitMessages(ctx context.Context, hits []abi.ChunkHit) (int, error) {
	if len(hits) == 0 {
		return 0, nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	own, err := r.hitChunks(ctx, `c.id = ANY($1)`, ids)
	// (hitChunks adds the call's scope; a hit's neighbours are of its source.)
	if err != nil {
		return 0, err
	}
	var srcs, from, to []int64
	for _, h := range hits {
		c, ok := own[h.ID]
		if !ok {
			continue
		}
		for _, ref := range memtree.CitedRefs(h) {
			if !slices.Contains(c.c.Refs, ref) {
				srcs, from, to = append(srcs, c.source), append(from, int64(c.seq-neighbourChunks)), append(to, int64(c.seq+neighbourChunks))
				break
			}
		}
	}
	near := map[int64][]storedChunk{}
	if len(srcs) > 0 {
		more, err := r.hitChunks(ctx, `c.key IN (SELECT c2.key FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS w(src, lo, hi)
			JOIN chunks c2 ON c2.source_key = w.src AND c2.seq BETWEEN w.lo AND w.hi)`, srcs, from, to)
		if err != nil {
			return 0, err
		}
		for _, m := range more {
			near[m.source] = append(near[m.source], m)
		}
	}
	total := 0
	for i := range hits {
		h := &hits[i]
		h.Messages = nil
		c, ok := own[h.ID]
		if !ok {
			continue
		}
		for _, ref := range memtree.CitedRefs(*h) {
			holder := &c
			if !slices.Contains(c.c.Refs, ref) {
				holder = nil
				for j := range near[c.source] {
					if slices.Contains(near[c.source][j].c.Refs, ref) {
						holder = &near[c.source][j]
						break
					}
				}
			}
			if holder == nil {
				h.Messages = append(h.Messages, abi.HitMessage{Ref: ref})
				continue
			}
			h.Messages = append(h.Messages, memtree.MessageFromChunk(holder.c, ref))
		}
		total += len(h.Messages)
	}
	if total == 0 {
		return 0, nil
	}
	bound := max(abi.HitMessageMinChars, min(abi.HitMessageMaxChars, abi.HitMessageBudgetChars/total))
	fit.BoundTexts(hits, bound)
	return bound, nil
}

// hitChunks reads the chunks matching cond (over chunks c), by id.
func (r reader) hitChunks(ctx context.Context, cond string, vals ...any) (map[string]storedChunk, error) {
	a := args(vals)
	cond += a.scoped(r.scope, "c")
	rows, err := r.s.rd.Query(ctx, `SELECT c.id, c.source_key, c.seq, c.kind, c.title, c.ts, c.ts_end, c.text, c.source_refs_json, c.ref_spans_json
		FROM chunks c WHERE `+cond, a...)
	if err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	defer rows.Close()
	out := map[string]storedChunk{}
	for rows.Next() {
		var id, refs, spans string
		var seq int32
		var c storedChunk
		if err := rows.Scan(&id, &c.source, &seq, &c.c.Kind, &c.c.Title, &c.c.TS, &c.c.TSEnd, &c.c.Text, &refs, &spans); err != nil {
			return nil, fmt.Errorf("read cited messages: %w", err)
		}
		c.seq = int(seq)
		if json.Unmarshal([]byte(refs), &c.c.Refs) != nil || json.Unmarshal([]byte(spans), &c.c.Spans) != nil || len(c.c.Spans) != len(c.c.Refs) {
			c.c.Refs, c.c.Spans = nil, nil
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	return out, nil
}
