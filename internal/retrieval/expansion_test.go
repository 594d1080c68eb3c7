package retrieval_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pivot"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// A query word neither the store nor WordNet knows reaches the chunks that say its
// stored paraphrase; readers opened read-only see the table, and replacing it with
// an empty one takes the expansion away again.
func TestRecallExpandsWithStoredParaphrases(t *testing.T) {
	ctx := context.Background()
	st, path := openFixture(t)
	// Filler, so that "rotors" is rare enough to count as an expansion (in at most
	// 5 % of the chunks).
	for i := range 40 {
		src := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: fmt.Sprintf("doc:filler/%d.md", i),
			Title: "Garden note", Provider: "markdown", Messages: []memtree.MessageInput{{
				Ref: fmt.Sprintf("filler/%d.md", i), TimestampMS: ms("2026-01-01T00:00:00Z"),
				Text: fmt.Sprintf("Garden note %d: the tomatoes need water and the hedge needs trimming.", i)}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	if src, err := st.ParaphraseSource(ctx); err != nil || src != "" {
		t.Fatalf("ParaphraseSource of a new store = %q, %v; want empty", src, err)
	}
	const query = "zorbleflux"
	recallRefs := func() []string {
		t.Helper()
		r, err := memtree.OpenReadOnly(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		res, err := memory.Default(r).Recall(ctx, abi.RecallRequest{Query: query, K: 5})
		if err != nil {
			t.Fatalf("Recall %q: %v", query, err)
		}
		return refsOf(res.Chunks)
	}
	if refs := recallRefs(); slices.Contains(refs, "brakes-2@garage.example") {
		t.Fatalf("Recall %q found the rotors message before any paraphrase was stored: %v", query, refs)
	}

	table := []pivot.Entry{{Word: query, Paraphrases: []pivot.Paraphrase{{Term: "rotors", Weight: 1}}}}
	if err := st.SetParaphrases(ctx, "test-eng-deu:1:2", table); err != nil {
		t.Fatal(err)
	}
	if src, err := st.ParaphraseSource(ctx); err != nil || src != "test-eng-deu:1:2" {
		t.Fatalf("ParaphraseSource = %q, %v; want the recorded source", src, err)
	}
	if refs := recallRefs(); len(refs) == 0 || !slices.Contains(refs, "brakes-2@garage.example") {
		t.Fatalf("Recall %q = %v; want the message saying its paraphrase \"rotors\"", query, refs)
	}

	if err := st.SetParaphrases(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	if refs := recallRefs(); slices.Contains(refs, "brakes-2@garage.example") {
		t.Fatalf("Recall %q still found the rotors message after the table was removed: %v", query, refs)
	}

	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.SetParaphrases(ctx, "x", table); err == nil {
		t.Fatal("SetParaphrases on a read-only store succeeded")
	}
}
