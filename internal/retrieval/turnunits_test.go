package retrieval

import (
	"reflect"
	"testing"
)

// TestMergeTurnUnits: turn units interleave with the chunk hits by level and
// score, never above their own hit (they join it instead), and consecutive units
// of one hit merge.
func TestMergeTurnUnits(t *testing.T) {
	primary := []Unit{
		{Hit: 0, Level: 0, Score: 9, Refs: []string{"a1"}},
		{Hit: 1, Level: 1, Score: 8, Refs: []string{"b1"}},
		{Hit: 2, Level: OrLevel, Score: 3, Refs: []string{"c1"}},
	}
	turns := []Unit{
		{Hit: 0, Level: OrLevel, Score: 4, Refs: []string{"a5"}},     // after b1, before c1
		{Hit: 2, Level: 0, Score: 7, Refs: []string{"c4"}},           // above its own hit: joins it
		{Hit: 1, Level: 1, Score: 7.5, Refs: []string{"b3"}},         // right after b1: merged
		{Hit: 2, Level: OrLevel + 1, Score: 1, Refs: []string{"c6"}}, // after c1: merged
	}
	got := MergeTurnUnits(primary, turns)
	var refs [][]string
	var hits []int
	for _, u := range got {
		refs = append(refs, u.Refs)
		hits = append(hits, u.Hit)
	}
	want := [][]string{{"a1"}, {"b1", "b3"}, {"a5"}, {"c1", "c4", "c6"}}
	if !reflect.DeepEqual(refs, want) || !reflect.DeepEqual(hits, []int{0, 1, 0, 2}) {
		t.Fatalf("merged %v (hits %v), want %v (hits [0 1 0 2])", refs, hits, want)
	}
	if primary[1].Refs[0] != "b1" || len(primary[1].Refs) != 1 {
		t.Fatalf("primary units changed: %v", primary[1].Refs)
	}
}

// TestTurnLevel: a turn's level follows the rarer words it says, never above its
// chunk's.
func TestTurnLevel(t *testing.T) {
	for _, c := range []struct{ chunk, said, of, want int }{
		{0, 3, 3, 0}, {0, 2, 3, 1}, {0, 1, 3, OrLevel}, {0, 0, 3, OrLevel + 1},
		{2, 3, 3, 2}, {FillLevel, 1, 3, FillLevel}, {0, 0, 0, 0},
	} {
		if got := TurnLevel(c.chunk, c.said, c.of); got != c.want {
			t.Errorf("TurnLevel(%d, %d, %d) = %d, want %d", c.chunk, c.said, c.of, got, c.want)
		}
	}
}
