package memtree_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/wordvec/wordvectest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestRecallWithWordVectorEmbedder (issue 36, item 4): the optional embedder,
// here a loopback server answering like Ollama's /api/embed with vectors from the
// shipped word vector table, lets recall find a note that shares no word with the
// question ("reptiles" → "turtles"), which offline recall (bm25, WordNet, the
// store's associations) does not rank first.
func TestRecallWithWordVectorEmbedder(t *testing.T) {
	ctx := context.Background()
	st, _ := openEmpty(t)
	notes := []string{
		"Our two turtles love basking under the heat lamp.",
		"The quarterly budget spreadsheet needs another column.",
		"I repainted the kitchen cabinets a pale blue.",
		"Traffic on the bridge was terrible this morning.",
		"The invoice from the plumber arrived today.",
		"I booked flights for the conference in May.",
		"We planted tomatoes and basil in the garden.",
		"The electricity bill went up a lot.",
	}
	for i, text := range notes {
		src := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: fmt.Sprintf("note-%d.md", i), Title: fmt.Sprintf("Note %d", i),
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("note-%d.md", i), TimestampMS: 1_767_261_600_000 + int64(i)*86_400_000, Text: text}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	const q = "What reptiles do they keep?"
	res, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: q, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) > 0 && res.Chunks[0].SourceID == "note-0.md" {
		t.Fatalf("offline recall already ranks the turtles first (%+v): the test would not show the embedder", res.Chunks[0])
	}

	srv := wordvectest.Start(t)
	emb := embed.NewOllama(srv.URL, "glove-sif", 5*time.Second)
	n, err := st.EmbedMissing(ctx, emb)
	if err != nil {
		t.Fatal(err)
	}
	if n < len(notes) {
		t.Fatalf("embedded %d nodes, want at least %d", n, len(notes))
	}
	st.SetEmbedder(emb)
	res, err = memory.Default(st).Recall(ctx, abi.RecallRequest{Query: q, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != abi.ModeHybrid && res.Mode != abi.ModeSemantic {
		t.Errorf("mode = %q (note %q), want hybrid or semantic", res.Mode, res.Note)
	}
	if len(res.Chunks) == 0 || res.Chunks[0].SourceID != "note-0.md" {
		var got []string
		for _, h := range res.Chunks {
			got = append(got, h.SourceID)
		}
		t.Fatalf("recall with the word vector embedder = %v, want note-0.md (the turtles) first", got)
	}
	if srv.Texts.Load() < int64(len(notes))+1 {
		t.Errorf("the server embedded %d texts, want the notes and the query", srv.Texts.Load())
	}
}

// TestRecallEmbedderMeaningList: the embedder feeds recall's person-scoped
// meaning list (wordvectest.CheckMeaningList; pgstore runs it on PostgreSQL).
func TestRecallEmbedderMeaningList(t *testing.T) {
	st, _ := openEmpty(t)
	wordvectest.CheckMeaningList(t, st)
}

// TestDamagedVectorIsNamed: a stored vector of the wrong length (a damaged or
// hand-edited store) makes recall's vector list fail naming the chunk and what
// to do, never rank with garbage.
func TestDamagedVectorIsNamed(t *testing.T) {
	ctx := context.Background()
	st, path := openEmpty(t)
	src := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: "turtles.md", Title: "Turtles",
		Messages: []memtree.MessageInput{{Ref: "turtles.md", TimestampMS: 1_767_261_600_000, Text: "Our two turtles love basking under the heat lamp."}}}
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	srv := wordvectest.Start(t)
	emb := embed.NewOllama(srv.URL, "glove-sif", 5*time.Second)
	if _, err := st.EmbedMissing(ctx, emb); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE vectors SET vec = substr(vec, 1, 12)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'`); err != nil {
		t.Fatal(err)
	}
	st.SetEmbedder(emb)
	b, err := st.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.(index.Vectors).VectorList(ctx, "reptiles", 5)
	if err == nil || !strings.Contains(err.Error(), "has 12 bytes") || !strings.Contains(err.Error(), "the store is damaged; re-run ingest") {
		t.Fatalf("a 12-byte vector: err %v", err)
	}
}
