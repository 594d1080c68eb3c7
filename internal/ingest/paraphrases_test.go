package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pivot/pivottest"
)

// The paraphrase table follows the installed dictionaries: built once, left alone
// while the files are the same, rebuilt when they change, removed when they go.
func TestParaphrasesFollowTheDictionaries(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	t.Setenv("OPENHUMAN_CACHE_DIR", cache)
	st := openStore(t)
	dir := t.TempDir()
	enDe := pivottest.WriteDictd(t, dir, "freedict-eng-deu", []string{
		"guideline\nRichtlinie <fem>\n", "policy\nRichtlinie <fem>\n",
	})
	deEn := pivottest.WriteDictd(t, dir, "freedict-deu-eng", []string{"richtlinie\nguideline, policy\n"})
	bases := []string{enDe, deEn, filepath.Join(dir, "freedict-eng-fra")} // the last is not installed

	res, err := Paraphrases(ctx, st, bases)
	if err != nil {
		t.Fatal(err)
	}
	if res.Words != 2 || res.Unchanged || len(res.Dictionaries) != 2 {
		t.Fatalf("first build = %+v; want 2 words from 2 dictionaries", res)
	}
	src, err := st.ParaphraseSource(ctx)
	if err != nil || src == "" {
		t.Fatalf("ParaphraseSource = %q, %v", src, err)
	}

	if res, err = Paraphrases(ctx, st, bases); err != nil || !res.Unchanged || res.Words != 0 {
		t.Fatalf("second run = %+v, %v; want unchanged", res, err)
	}

	// A second store of the machine reads the table built for the first: nothing is
	// built again, and it holds the same words.
	st2 := openStore(t)
	if res, err = Paraphrases(ctx, st2, bases); err != nil || !res.Cached || res.Words != 0 {
		t.Fatalf("a fresh store = %+v, %v; want the cached table", res, err)
	}
	status, err := memtree.Status(ctx, st2.Path())
	if err != nil || status.Paraphrases != 2 {
		t.Fatalf("the fresh store's status = %d paraphrase words, %v; want 2 from the cached file", status.Paraphrases, err)
	}
	file, err := st2.ParaphraseFile(ctx)
	if err != nil || filepath.Dir(file) != cache {
		t.Fatalf("ParaphraseFile = %q, %v; want a file in %s", file, err, cache)
	}
	// A cleared cache: the next ingest builds the table again.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if res, err = Paraphrases(ctx, st2, bases); err != nil || res.Unchanged || res.Cached || res.Words != 2 {
		t.Fatalf("after the cache was cleared = %+v, %v; want a rebuild of 2 words", res, err)
	}

	pivottest.WriteDictd(t, dir, "freedict-eng-deu", []string{
		"guideline\nRichtlinie <fem>\n", "policy\nRichtlinie <fem>\n", "directive\nRichtlinie <fem>\n",
	})
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(enDe+".index", later, later); err != nil {
		t.Fatal(err)
	}
	if res, err = Paraphrases(ctx, st, bases); err != nil || res.Unchanged || res.Words != 3 {
		t.Fatalf("after the dictionary changed = %+v, %v; want a rebuild with 3 words", res, err)
	}

	for _, b := range []string{enDe, deEn} {
		os.Remove(b + ".index")
	}
	if res, err = Paraphrases(ctx, st, bases); err != nil || !res.Removed {
		t.Fatalf("with no dictionary left = %+v, %v; want the table removed", res, err)
	}
	if src, err := st.ParaphraseSource(ctx); err != nil || src != "" {
		t.Fatalf("ParaphraseSource after removal = %q, %v", src, err)
	}
	if res, err = Paraphrases(ctx, st, bases); err != nil || !res.Unchanged {
		t.Fatalf("again with no dictionary = %+v, %v; want unchanged", res, err)
	}

	// An unwritable cache directory (a file stands where it should be): the store
	// keeps its own copy.
	blocked := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENHUMAN_CACHE_DIR", blocked)
	enDe = pivottest.WriteDictd(t, dir, "freedict-eng-deu", []string{"guideline\nRichtlinie <fem>\n", "policy\nRichtlinie <fem>\n"})
	deEn = pivottest.WriteDictd(t, dir, "freedict-deu-eng", []string{"richtlinie\nguideline, policy\n"})
	st3 := openStore(t)
	if res, err = Paraphrases(ctx, st3, []string{enDe, deEn}); err != nil || res.Words != 2 {
		t.Fatalf("with an unwritable cache = %+v, %v; want the store's own table of 2 words", res, err)
	}
	if f, err := st3.ParaphraseFile(ctx); err != nil || f != "" {
		t.Fatalf("with an unwritable cache the store reads file %q (%v); want its own table", f, err)
	}
	if status, err := memtree.Status(ctx, st3.Path()); err != nil || status.Paraphrases != 2 {
		t.Fatalf("the store's own table holds %d words (%v), want 2", status.Paraphrases, err)
	}

	bad := pivottest.WriteDictd(t, dir, "freedict-eng-ita", []string{"cert\nZertifikat\n"})
	if err := os.WriteFile(bad+".dict.dz", []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Paraphrases(ctx, st, []string{bad}); err == nil {
		t.Fatal("a corrupt dictionary built a table")
	}
	if src, err := st.ParaphraseSource(ctx); err != nil || src != "" {
		t.Fatalf("a failed build changed the table's source to %q (%v)", src, err)
	}
}
