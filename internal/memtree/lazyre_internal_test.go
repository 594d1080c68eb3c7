package memtree

import "testing"

// Every lazily compiled pattern compiles (lazyRE panics on first use otherwise).
func TestLazyPatternsCompile(t *testing.T) {
	if len(lazyPatterns) < 13 {
		t.Fatalf("%d lazy patterns, want the package's 13", len(lazyPatterns))
	}
	compilePatterns()
	if !reChunkID.MatchString("0123456789abcdef0123456789abcdef") || reChunkID.MatchString("x") {
		t.Error("reChunkID does not match as written")
	}
}
