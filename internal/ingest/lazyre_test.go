package ingest

import (
	"testing"

	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// TestLazyPatternsCompile compiles every pattern declared with lazyre.New in this
// test binary (the package's own and its imports'; an invalid one would
// otherwise panic only when first used) and checks one of the package's.
func TestLazyPatternsCompile(t *testing.T) {
	if n := lazyre.Count(); n < 26 {
		t.Fatalf("%d lazy patterns registered; this package declared 26 when this test was written", n)
	}
	lazyre.CompileAll()
	if !reBlankRuns.MatchString("a\n\n\nb") || reBlankRuns.MatchString("a\n\nb") {
		t.Error("reBlankRuns does not match as its pattern says")
	}
	if reBlankRuns.Get().String() != reBlankRuns.Source() {
		t.Error("reBlankRuns compiled to another source")
	}
}
