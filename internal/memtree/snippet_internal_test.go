package memtree

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// TestWindowSnippetIsFTS5Snippet proves the engine's snippet of a matched chunk
// (retrieval.WindowSnippet) equal to what FTS5's snippet(chunks_fts, 0, ”, ”,
// '…', 40) made of it when the store cut snippets, on texts long and short, with
// sentences, repeated and non-ASCII words, phrases, and all/any queries.
func TestWindowSnippetIsFTS5Snippet(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t)
	vocab := []string{"budget", "review", "physio", "session", "Friday", "the", "a", "of", "notes", "plan",
		"Straße", "café", "naïve", "running", "runs", "x1", "e-mail", "日本", "2026", "lunch", "main", "street"}
	seps := []string{" ", " ", " ", ", ", ". ", ": ", "\n", "  ", " — ", ".\n\n", "; "}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 120; i++ {
		var b strings.Builder
		n := 1 + rng.Intn(160)
		if i%5 == 0 {
			b.WriteString("  ")
		}
		for j := 0; j < n; j++ {
			b.WriteString(vocab[rng.Intn(len(vocab))])
			b.WriteString(seps[rng.Intn(len(seps))])
		}
		src := SourceInput{Kind: KindDocument, SourceID: fmt.Sprintf("doc:%d", i), Title: fmt.Sprintf("note %d", i),
			Messages: []MessageInput{{Ref: fmt.Sprintf("doc:%d", i), TimestampMS: 1767261600000 + int64(i)*60000, Text: b.String()}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	db, err := st.readers(ctx)
	if err != nil || db == nil {
		t.Fatalf("readers: %v", err)
	}
	queries := []index.Query{
		index.Words(index.All, "physio"),
		index.Words(index.Any, "budget", "review"),
		index.Words(index.All, "session", "friday"),
		index.Words(index.Any, "straße", "cafe", "runs"),
		{Op: index.Any, Phrases: []index.Phrase{{"main", "street"}, {"lunch"}}},
		index.Words(index.Any, "notes", "plan", "2026", "日本"),
		index.Words(index.All, "note"), // the title only: no instance in the text
	}
	compared := 0
	for _, q := range queries {
		expr, err := ftsExpr(q)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, `SELECT c.text, snippet(chunks_fts, 0, '', '', '…', 40)
			FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ?`, expr)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var text, snip string
			if err := rows.Scan(&text, &snip); err != nil {
				t.Fatal(err)
			}
			want := strings.Join(strings.Fields(snip), " ")
			if got := retrieval.WindowSnippet(text, q); got != want {
				t.Errorf("%s over %.80q:\n got %q\nwant %q", expr, text, got, want)
			}
			compared++
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if compared < 200 {
		t.Fatalf("compared %d snippets; the fixture should give more than 200", compared)
	}
}
