package retrieval

import (
	"math/rand/v2"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

func TestMonotone(t *testing.T) {
	// The recall example: the best raw score third.
	hs := []abi.ChunkHit{{ID: "a", Score: 6.37}, {ID: "b", Score: 5.97}, {ID: "c", Score: 10.54}}
	Monotone(hs)
	if hs[0].Score != 6.37 || hs[1].Score != 5.97 || hs[2].Score != 5.97 {
		t.Fatalf("scores %v, %v, %v; want 6.37, 5.97, 5.97", hs[0].Score, hs[1].Score, hs[2].Score)
	}
	// The second example: 14.8, 13.8, 5.6, 4.1, 7.3.
	hs = []abi.ChunkHit{{Score: 14.8}, {Score: 13.8}, {Score: 5.6}, {Score: 4.1}, {Score: 7.3}}
	Monotone(hs)
	if hs[3].Score != 4.1 || hs[4].Score != 4.1 || hs[2].Score != 5.6 {
		t.Fatalf("scores %v; want 14.8, 13.8, 5.6, 4.1, 4.1", hs)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		hs := make([]abi.ChunkHit, rng.IntN(20))
		for i := range hs {
			hs[i].Score = rng.Float64()*20 - 2
		}
		Monotone(hs)
		for i := range hs {
			if hs[i].Score < 0 || (i > 0 && hs[i].Score > hs[i-1].Score) {
				t.Fatalf("hit %d scores %v after %v", i, hs[i].Score, hs[max(i-1, 0)].Score)
			}
		}
	}
}
