package ingest

import (
	"testing"

	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// TestLazyPatternsCompile compiles every pattern declared with lazyre.New in this
// test binary (the ingest packages' own, every format family's, and their
// imports'; an invalid one would otherwise panic only when first used).
func TestLazyPatternsCompile(t *testing.T) {
	if n := lazyre.Count(); n < 26 {
		t.Fatalf("%d lazy patterns registered; the ingest packages declared 26 when this test was written", n)
	}
	lazyre.CompileAll()
}
