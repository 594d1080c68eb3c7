package wordvectest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Backend is what the meaning-list scenario needs of a store: ingest, embed
// and read (memtree's and pgstore's Store both are one).
type Backend interface {
	memory.Store
	Ingest(ctx context.Context, in memtree.SourceInput) (memtree.IngestStats, error)
	EmbedMissing(ctx context.Context, emb memtree.Embedder) (int, error)
	SetEmbedder(e memtree.Embedder)
}

// CheckMeaningList (issue 36, item 4): with the embedder configured,
// recall ranks the chunks of the person a question names by the embedder's
// meaning. "What pets does Ana have?" shares no word with Ana's "turtles", which
// offline recall does not rank first; with the loopback embedder that chunk leads,
// citing Ana's message only, never Ben's dog in the same chat nor Ben's own chat
// with Cleo about his dog; the query is sent to the embedder once; and a query the
// embed gate refuses is ranked offline, as without an embedder.
//
// st must be empty; the scenario runs against a Server it starts.
func CheckMeaningList(t *testing.T, st Backend) {
	t.Helper()
	ctx := context.Background()
	day := int64(86_400_000)
	chat := func(id, title string, msgs ...memtree.MessageInput) {
		t.Helper()
		if _, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: id, Title: title, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	base := int64(1_767_261_600_000)
	for i, m := range [][2]string{
		{"I need new tyres before the winter.", "I see."},
		{"Our two turtles love basking under the heat lamp.", "My dog barked at the mailman all afternoon."},
		{"The electricity bill went up a lot.", "Oh no."},
		{"My laptop keyboard stopped working.", "That is annoying."},
		{"The train was late again this morning.", "Typical."},
	} {
		chat(fmt.Sprintf("chat:ana-ben:%d", i), "Ana and Ben",
			memtree.MessageInput{Ref: fmt.Sprintf("a%d", i), Author: "Ana", TimestampMS: base + int64(i)*day, Text: m[0]},
			memtree.MessageInput{Ref: fmt.Sprintf("b%d", i), Author: "Ben", TimestampMS: base + int64(i)*day + 60_000, Text: m[1]})
	}
	chat("chat:ben-cleo", "Ben and Cleo",
		memtree.MessageInput{Ref: "ben-dog", Author: "Ben", TimestampMS: base + 9*day, Text: "Our puppy chewed my slippers again."},
		memtree.MessageInput{Ref: "cleo-1", Author: "Cleo", TimestampMS: base + 9*day + 60_000, Text: "Puppies do that."})

	const q = "What pets does Ana have?"
	recall := func(ctx context.Context) *abi.RecallResult {
		t.Helper()
		res, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: q, K: 3})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	refsOf := func(res *abi.RecallResult) [][]string {
		var out [][]string
		for _, h := range res.Chunks {
			out = append(out, append([]string{h.SourceRef}, h.SourceRefs...))
		}
		return out
	}
	offline := recall(ctx)
	if len(offline.Chunks) > 0 && offline.Chunks[0].SourceID == "chat:ana-ben:1" {
		t.Fatalf("offline recall already ranks the turtles first (%v): the test would not show the embedder", refsOf(offline))
	}

	srv := Start(t)
	emb := embed.NewOllama(srv.URL, "glove-sif", 5*time.Second)
	if _, err := st.EmbedMissing(ctx, emb); err != nil {
		t.Fatal(err)
	}
	st.SetEmbedder(emb)
	before := srv.Texts.Load()
	res := recall(ctx)
	if got := srv.Texts.Load() - before; got != 1 {
		t.Errorf("recall sent %d texts to the embedder, want the query once", got)
	}
	if len(res.Chunks) == 0 || res.Chunks[0].SourceID != "chat:ana-ben:1" {
		t.Fatalf("recall with the embedder = %v, want Ana's turtles (chat:ana-ben:1) first", refsOf(res))
	}
	for _, h := range res.Chunks {
		if h.SourceID == "chat:ben-cleo" {
			t.Errorf("recall found Ben's chat with Cleo (%v) for a question about Ana", refsOf(res))
		}
	}
	for _, r := range append([]string{res.Chunks[0].SourceRef}, res.Chunks[0].SourceRefs...) {
		if r != "a1" {
			t.Errorf("the turtles hit cites %q, want Ana's message a1 only", r)
		}
	}

	// A query the embed gate refuses (a tool module's, not its client's text) is
	// ranked offline: the hits are those without an embedder, and nothing is sent.
	before = srv.Texts.Load()
	gated := recall(index.WithEmbedGate(ctx, func(string) bool { return false }))
	if srv.Texts.Load() != before {
		t.Errorf("a refused query reached the embedder")
	}
	if !reflect.DeepEqual(refsOf(gated), refsOf(offline)) {
		t.Errorf("refused query's hits %v, want the offline hits %v", refsOf(gated), refsOf(offline))
	}
}
