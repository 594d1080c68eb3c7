package readkit

import "testing"

// TestBlankRunsPattern checks one of the package's lazy patterns; every pattern
// of the ingest packages is compiled by the ingest package's
// TestLazyPatternsCompile, whose test binary links them all.
func TestBlankRunsPattern(t *testing.T) {
	if !reBlankRuns.MatchString("a\n\n\nb") || reBlankRuns.MatchString("a\n\nb") {
		t.Error("reBlankRuns does not match as its pattern says")
	}
	if reBlankRuns.Get().String() != reBlankRuns.Source() {
		t.Error("reBlankRuns compiled to another source")
	}
}
