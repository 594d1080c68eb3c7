package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/pivot/pivottest"
)

// TestIngestBuildsParaphrasesForRecall: with translating dictionaries configured,
// the first ingest builds the paraphrase table and says so, a second leaves it
// alone, a fresh store of the same machine reads the same table (built once per
// machine) without building it, and memory.recall through the MCP server finds a document by a word only
// the dictionaries link to it.
func TestIngestBuildsParaphrasesForRecall(t *testing.T) {
	dictDir := t.TempDir()
	// "quellmaus" is no English word: only the pivot through German "Bremsscheibe"
	// links it to "rotor" (quellmaus ↔ rotor: the table's two words).
	enDe := pivottest.WriteDictd(t, dictDir, "freedict-eng-deu", []string{
		"quellmaus\nBremsscheibe <fem>\n", "rotors\nBremsscheiben <pl>, Rotoren <pl>\n",
	})
	deEn := pivottest.WriteDictd(t, dictDir, "freedict-deu-eng", []string{"bremsscheibe\nquellmaus, rotor\n", "bremsscheiben\nrotors\n"})
	e := emptyStoreEnv(t).with("OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=" + enDe + "," + deEn)

	docs := filepath.Join(e.home, "input")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"garage.md": "# Garage\n\nThe front rotors were replaced on Friday; the invoice is in the glovebox.\n"}
	for i := range 30 { // so that "rotors" is rare enough to count as an expansion
		files[fmt.Sprintf("garden-%02d.md", i)] = fmt.Sprintf("# Garden %d\n\nThe tomatoes need water and the hedge needs trimming.\n", i)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := e.command(ctx, "ingest", docs).CombinedOutput()
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	if want := "paraphrases of 2 words pivoted through freedict-eng-deu and freedict-deu-eng"; !strings.Contains(string(out), want) {
		t.Fatalf("first ingest does not say %q:\n%s", want, out)
	}
	out, err = e.command(ctx, "ingest", docs).CombinedOutput()
	if err != nil || strings.Contains(string(out), "paraphrases") {
		t.Fatalf("second ingest rebuilt the table or failed (%v):\n%s", err, out)
	}

	// A second store of the machine (another workspace, the same cache directory)
	// reads the table built for the first: its first ingest builds nothing.
	e2 := emptyStoreEnv(t).with("OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=" + enDe + "," + deEn)
	out, err = e2.command(ctx, "ingest", docs).CombinedOutput()
	if err != nil || strings.Contains(string(out), "paraphrases") {
		t.Fatalf("a fresh store's first ingest rebuilt the table or failed (%v):\n%s", err, out)
	}
	cs2 := connect(t, e2, "E2E Paraphrases, second store")
	sc2 := callOK(t, cs2, outputSchemas(t, cs2), "memory.recall", `{"query":"quellmaus","k":3}`)
	if hits, _ := sc2["chunks"].([]any); len(hits) == 0 {
		t.Fatalf("the second store's memory.recall found nothing through the cached paraphrase table: %v", sc2)
	}

	cs := connect(t, e, "E2E Paraphrases")
	schemas := outputSchemas(t, cs)
	sc := callOK(t, cs, schemas, "memory.recall", `{"query":"quellmaus","k":3}`)
	hits, _ := sc["chunks"].([]any)
	if len(hits) == 0 {
		t.Fatalf("memory.recall found nothing through the paraphrase: %v", sc)
	}
	first, _ := hits[0].(map[string]any)
	if ref, _ := first["source_ref"].(string); ref != "garage.md" {
		t.Fatalf("memory.recall's first hit is %v, want garage.md", first)
	}

	// A broken dictionary: the text stays ingested, ingest exits 1 naming the file…
	if err := os.WriteFile(enDe+".dict.dz", []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(enDe+".dict.dz", later, later)
	out, err = e.command(ctx, "ingest", docs).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "freedict-eng-deu.dict.dz") || !strings.Contains(string(out), "WordNet alone") {
		t.Fatalf("ingest with a corrupt dictionary: %v, want exit 1 naming the file:\n%s", err, out)
	}
	// …and the table built before is kept.
	sc = callOK(t, cs, schemas, "memory.recall", `{"query":"quellmaus","k":3}`)
	if hits, _ := sc["chunks"].([]any); len(hits) == 0 {
		t.Fatalf("after a failed rebuild memory.recall lost the paraphrase: %v", sc)
	}
}
