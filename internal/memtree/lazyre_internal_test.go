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
	if !reWordsOnly.MatchString("café 42") || reWordsOnly.MatchString("a-b") {
		t.Error("reWordsOnly does not match as written")
	}
}
