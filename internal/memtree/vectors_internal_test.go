package memtree

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/embed"
)

// TestVectorSummaryStandsForItsNearestLeaf: a summary among the nearest vectors is
// replaced, at its rank, by its leaf chunk nearest the query, with that leaf's own
// similarity, and a chunk is listed once.
func TestVectorSummaryStandsForItsNearestLeaf(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t)
	src := SourceInput{Kind: KindChat, SourceID: "slack:#ops", Title: "#ops", Provider: "slack"}
	for i := range 12 {
		src.Messages = append(src.Messages, MessageInput{
			Ref: fmt.Sprintf("slack:ops:%d", i), Author: "Dana Ruiz", TimestampMS: int64(1767571200000 + i*86400000),
			Text: strings.Repeat(fmt.Sprintf("Day %d of the migration went as planned. ", i), 40),
		})
	}
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	var sumID, leavesJSON string
	if err := st.w.QueryRowContext(ctx, `SELECT id, leaf_ids_json FROM summaries WHERE json_array_length(leaf_ids_json) >= 3 ORDER BY level LIMIT 1`).Scan(&sumID, &leavesJSON); err != nil {
		t.Fatalf("no summary over three or more chunks: %v", err)
	}
	var leaves []string
	if err := json.Unmarshal([]byte(leavesJSON), &leaves); err != nil {
		t.Fatal(err)
	}
	// Leaf i points at i·10°, the summary and the query at 18°: the nearest vectors
	// are the summary, leaf 2 (20°) and leaf 1 (10°).
	ix := embed.NewIndex(2)
	vec := func(deg float64) []float32 {
		r := deg * math.Pi / 180
		return []float32{float32(math.Cos(r)), float32(math.Sin(r))}
	}
	for i, id := range leaves {
		if err := ix.Add(id, vec(float64(i*10))); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Add(sumID, vec(18)); err != nil {
		t.Fatal(err)
	}
	q := vec(18)
	hits := ix.Search(q, 3)
	if hits[0].ID != sumID {
		t.Fatalf("nearest is %s, want the summary %s", hits[0].ID, sumID)
	}
	got, err := leavesOf(ctx, st.w, ix, q, hits)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != leaves[2] || got[1].ID != leaves[1] {
		t.Fatalf("leavesOf = %+v, want %s then %s (the summary's nearest leaf, then the next chunk once)", got, leaves[2], leaves[1])
	}
	if want, _ := ix.Similarity(q, leaves[2]); got[0].Score != want {
		t.Errorf("expanded hit scores %v, want its leaf's own similarity %v", got[0].Score, want)
	}
}
