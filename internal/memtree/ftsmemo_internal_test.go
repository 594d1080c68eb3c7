package memtree

import (
	"testing"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func TestFTSMemoPrefixAndCopies(t *testing.T) {
	m := newFTSMemo()
	f := filter{}.with("c.ts >= ?", 5)
	key := memoKey(`"a" AND "b"`, f)
	if key == memoKey(`"a" AND "b"`, filter{}.with("c.ts >= ?", 6)) {
		t.Fatal("keys of different restriction arguments are equal")
	}
	hits := []index.Hit{{ChunkHit: abi.ChunkHit{ID: "1", SourceRefs: []string{"r1", "r2"}}}, {ChunkHit: abi.ChunkHit{ID: "2"}}, {ChunkHit: abi.ChunkHit{ID: "3"}}}
	m.put(key, 3, hits)
	hits[0].SourceRefs[0] = "changed" // the caller's edit must not reach the memo
	if _, ok := m.get(key, 4); ok {
		t.Fatal("a list of 3 served a request for 4")
	}
	got, ok := m.get(key, 2)
	if !ok || len(got) != 2 || got[0].ID != "1" || got[1].ID != "2" {
		t.Fatalf("get(2) = %v, %v; want the first two hits", got, ok)
	}
	if got[0].SourceRefs[0] != "r1" {
		t.Fatalf("memo shares the caller's slices: %v", got[0].SourceRefs)
	}
	got[0].SourceRefs[1] = "edited"
	again, _ := m.get(key, 1)
	if again[0].SourceRefs[1] != "r2" {
		t.Fatalf("memo shares slices it handed out: %v", again[0].SourceRefs)
	}
	m.put(key, 1, hits[:1]) // a shorter list never replaces a longer one
	if _, ok := m.get(key, 3); !ok {
		t.Fatal("a shorter put replaced the longer list")
	}
}
