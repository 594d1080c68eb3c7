package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/notes"
)

// A document whose parse outlives the per-file time budget is named as
// skipped with the reason, and ingest goes on to the next file (issue 39).
// The budget is cut to a microsecond so that parsing a 2 MB note runs out of
// it; a note parsed within it is ingested.
func TestDocumentParseBudget(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("+++\ntitle = \"Long\"\ntags = [\n")
	for b.Len() < 2<<20 {
		b.WriteString("\"tag\",\n")
	}
	b.WriteString("+++\nbody\n")
	os.WriteFile(filepath.Join(dir, "long.md"), []byte(b.String()), 0o644)
	old := notes.DocParseBudget
	notes.DocParseBudget = time.Microsecond
	_, sum := runOn(t, Options{}, dir)
	notes.DocParseBudget = old
	if sum.SkippedBy[notes.ReasonParseBudget(time.Microsecond)] != 1 {
		t.Errorf("skipped: %v; want long.md skipped for the time budget", sum.SkippedBy)
	}
	os.WriteFile(filepath.Join(dir, "short.md"), []byte("# Short\n\nA note.\n"), 0o644)
	os.Remove(filepath.Join(dir, "long.md"))
	c, sum := runOn(t, Options{}, dir)
	if len(c.srcs) != 1 || len(sum.SkippedBy) != 0 {
		t.Errorf("within the budget: %d sources, skipped %v", len(c.srcs), sum.SkippedBy)
	}
	// The parses left over the budget end and give back their slots.
	deadline := time.Now().Add(30 * time.Second)
	for len(notes.OverBudget) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d parses still hold a slot", len(notes.OverBudget))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
