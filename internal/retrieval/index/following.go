package index

import "github.com/openhuman/openhuman-core/sdk/abi"

// The rule of Backend.Following, shared by every backend: which hits ask for
// the chunk after them, and how the chunks found are returned.

// ChatHits returns the ids of the chat hits among hits, in hit order, and the
// set of every hit's id (the chunks Following must not return again).
func ChatHits(hits []abi.ChunkHit) (ids []string, have map[string]bool) {
	have = make(map[string]bool, len(hits))
	for _, h := range hits {
		have[h.ID] = true
		if h.SourceKind == abi.KindChat {
			ids = append(ids, h.ID)
		}
	}
	return ids, have
}

// InHitOrder returns, for each id of ids in order, the chunk after[id] found to
// follow it, at most once each and none of those in have (which it extends).
func InHitOrder(ids []string, after map[string]Hit, have map[string]bool) []Hit {
	var out []Hit
	for _, id := range ids {
		if n, ok := after[id]; ok && !have[n.ID] {
			have[n.ID] = true
			out = append(out, n)
		}
	}
	return out
}
