package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/memtree/memtreetest"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// fixture is the read API over a SQLite store holding memtreetest's sources.
func fixture(t *testing.T) (*memory.API, *memtree.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, src := range memtreetest.Sources() {
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	return memory.Default(st), st
}

// TestSearchAndRecallOverABackend: hits carry their cited messages, scores never
// rise down the list, and the encoded result stays within abi.MaxResultBytes.
func TestSearchAndRecallOverABackend(t *testing.T) {
	api, _ := fixture(t)
	ctx := context.Background()
	sr, err := api.Search(ctx, abi.SearchRequest{Query: "brake pads", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := api.Recall(ctx, abi.RecallRequest{Query: "brake pads", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	for name, hits := range map[string][]abi.ChunkHit{"search": sr.Chunks, "recall": rr.Chunks} {
		if len(hits) == 0 {
			t.Fatalf("%s found nothing for brake pads", name)
		}
		for i, h := range hits {
			if i > 0 && h.Score > hits[i-1].Score {
				t.Errorf("%s: hit %d scores %v above the hit before it (%v)", name, i, h.Score, hits[i-1].Score)
			}
			if len(h.Messages) == 0 {
				t.Errorf("%s: hit %s has no cited messages", name, h.ID)
			}
		}
		if !strings.Contains(strings.ToLower(hits[0].Snippet+hits[0].Title), "brake") {
			t.Errorf("%s: first hit %q / %q does not say brake", name, hits[0].Title, hits[0].Snippet)
		}
	}
	if sr.Chunks[0].ID != rr.Chunks[0].ID {
		t.Errorf("recall leads with %s, search with %s: recall's list begins with search's", rr.Chunks[0].ID, sr.Chunks[0].ID)
	}
	if b, _ := json.Marshal(sr); len(b) > abi.MaxResultBytes {
		t.Errorf("search result %d bytes > %d", len(b), abi.MaxResultBytes)
	}
}

// TestBadRequestsAndAnEmptyStore: a k out of range or an empty query is invalid;
// a store with nothing ingested answers with no hits and the hint.
func TestBadRequestsAndAnEmptyStore(t *testing.T) {
	ctx := context.Background()
	api, _ := fixture(t)
	for _, k := range []int{0, abi.MaxK + 1} {
		if _, err := api.Search(ctx, abi.SearchRequest{Query: "brake", K: k}); !errors.Is(err, abi.ErrInvalid) {
			t.Errorf("search k=%d: %v, want abi.ErrInvalid", k, err)
		}
	}
	if _, err := api.Recall(ctx, abi.RecallRequest{Query: "   ", K: 5}); !errors.Is(err, abi.ErrInvalid) || !strings.Contains(err.Error(), "empty query") {
		t.Errorf("recall of blanks: %v, want an empty-query abi.ErrInvalid", err)
	}
	empty, err := memtree.NewReadOnly(filepath.Join(t.TempDir(), "none", "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	res, err := memory.Default(empty).Search(ctx, abi.SearchRequest{Query: "brake", K: 5})
	if err != nil || len(res.Chunks) != 0 || res.Hint != abi.EmptyHint {
		t.Errorf("search of a store with no file = %+v, %v; want no hits and the empty hint", res, err)
	}
}

// bare hides the read call's hit messages: a backend that gives none.
type bare struct{ memory.Store }

func (b bare) BeginRead(ctx context.Context) (index.Backend, error) {
	r, err := b.Store.BeginRead(ctx)
	if r == nil || err != nil {
		return r, err
	}
	return struct{ index.Backend }{r}, nil
}

// TestABackendWithoutHitMessagesIsNamed: a read call that cannot give hits their
// messages is an error naming what is missing, not hits without them.
func TestABackendWithoutHitMessagesIsNamed(t *testing.T) {
	_, st := fixture(t)
	_, err := memory.Default(bare{st}).Search(context.Background(), abi.SearchRequest{Query: "brake", K: 5})
	if err == nil || !strings.Contains(err.Error(), "index.Messages") {
		t.Fatalf("search over a read call without hit messages: %v", err)
	}
}

// TestBrowseSnippetStartsNearTheQuery: a browse page's snippets start near the
// query whichever path the store read the page by (a words-only query reads
// the full-text index; one with punctuation scans), so a long chunk shows where
// it says what was asked.
func TestBrowseSnippetStartsNearTheQuery(t *testing.T) {
	ctx := context.Background()
	st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	text := strings.Repeat("Nothing to see in this sentence about the weather. ", 20) + "The quarterly forecast moved to Friday, said Ana."
	in := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: "doc:notes/long.md", Title: "Long note",
		Messages: []memtree.MessageInput{{Ref: "notes/long.md", TimestampMS: 1767261600000, Text: text}}}
	if _, err := st.Ingest(ctx, in); err != nil {
		t.Fatal(err)
	}
	api := memory.Default(st)
	for _, q := range []string{"quarterly forecast", "forecast moved to friday,"} {
		res, err := api.ListChunks(ctx, abi.ChunksListRequest{Query: q, K: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Chunks) != 1 {
			t.Fatalf("browse %q: %d chunks, want the note", q, len(res.Chunks))
		}
		if s := res.Chunks[0].Snippet; !strings.HasPrefix(s, "…") || !strings.Contains(strings.ToLower(s), strings.TrimSuffix(q, ",")) {
			t.Errorf("browse %q: snippet %q does not start near the query", q, s)
		}
	}
}
