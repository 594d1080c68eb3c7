package memtree

import (
	"testing"

	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// Every lazily compiled pattern compiles (lazyre.New panics on first use otherwise).
func TestLazyPatternsCompile(t *testing.T) {
	if n := lazyre.Count(); n < 13 {
		t.Fatalf("%d lazy patterns, want at least the store's and ranking's 13", n)
	}
	lazyre.CompileAll()
	if !reChunkID.MatchString("0123456789abcdef0123456789abcdef") || reChunkID.MatchString("x") {
		t.Error("reChunkID does not match as written")
	}
}
