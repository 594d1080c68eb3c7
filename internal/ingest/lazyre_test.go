package ingest

import (
	"regexp"
	"testing"
)

// TestLazyPatternsCompile compiles every pattern the package declares with
// lazyRE (an invalid one would otherwise panic only when first used) and checks
// that each compiles to its own source.
func TestLazyPatternsCompile(t *testing.T) {
	if len(lazyPatterns) < 26 {
		t.Fatalf("%d lazy patterns registered; the package declared 26 when this test was written", len(lazyPatterns))
	}
	for _, l := range lazyPatterns {
		if _, err := regexp.Compile(l.src); err != nil {
			t.Errorf("pattern %q: %v", l.src, err)
			continue
		}
		if got := l.get().String(); got != l.src {
			t.Errorf("compiled %q, want %q", got, l.src)
		}
	}
	if !reBlankRuns.MatchString("a\n\n\nb") || reBlankRuns.MatchString("a\n\nb") {
		t.Error("reBlankRuns does not match as its pattern says")
	}
}
