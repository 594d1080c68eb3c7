package memtree_test

import (
	"os"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/lexicon"
)

func TestDebugLexicon(t *testing.T) {
	ws := os.Getenv("MEMTREE_DEBUG_LEX")
	if ws == "" {
		return
	}
	for _, w := range strings.Fields(ws) {
		t.Logf("%s: %v", w, lexicon.Expand(w))
	}
}
