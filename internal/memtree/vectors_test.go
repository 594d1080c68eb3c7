package memtree_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// bagVector is a deterministic toy embedding: hashed words, with "automobile" and
// "car" sharing a dimension so the vector side knows one synonym bm25 does not.
func bagVector(text string, dim int) []float32 {
	v := make([]float32, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
		if w == "automobile" {
			w = "car"
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dim)]++
	}
	return v
}

// ollamaServer answers POST /api/embed like Ollama.
func ollamaServer(t *testing.T, dim int, calls *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		out := struct {
			Model      string      `json:"model"`
			Embeddings [][]float32 `json:"embeddings"`
		}{Model: req.Model}
		for _, s := range req.Input {
			out.Embeddings = append(out.Embeddings, bagVector(s, dim))
		}
		json.NewEncoder(w).Encode(out)
	}))
}

func TestRecallWithEmbedderAndFallback(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	var calls atomic.Int32
	srv := ollamaServer(t, 64, &calls)
	defer srv.Close()
	emb := embed.NewOllama(srv.URL, "toy-bag", 5*time.Second)
	n, err := st.EmbedMissing(ctx, emb)
	if err != nil {
		t.Fatal(err)
	}
	// 4 chunks, and the summary over the chat channel's two chunks (a summary of one
	// chunk is not embedded).
	if n != 5 {
		t.Errorf("embedded %d nodes, want 5", n)
	}
	if n, _ := st.EmbedMissing(ctx, emb); n != 0 {
		t.Errorf("second EmbedMissing embedded %d, want 0", n)
	}
	stats, _ := st.Stats(ctx)
	if stats.Vectors != 5 {
		t.Errorf("vectors = %d", stats.Vectors)
	}
	st.SetEmbedder(emb)
	st.SetExpander(nil) // show the vector side alone finds the synonym
	res, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: "automobile noise", K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != abi.ModeHybrid && res.Mode != abi.ModeSemantic {
		t.Errorf("mode = %q, want hybrid or semantic", res.Mode)
	}
	if len(res.Chunks) == 0 || res.Chunks[0].SourceKind != "email" || res.Chunks[0].Score <= 0 {
		t.Fatalf("recall hits = %+v", res.Chunks)
	}
	// A different dimension of the same model is a different vector set: never mixed.
	srv2 := ollamaServer(t, 32, &calls)
	emb2 := embed.NewOllama(srv2.URL, "toy-bag", 5*time.Second)
	st.SetEmbedder(emb2)
	res, err = memory.Default(st).Recall(ctx, abi.RecallRequest{Query: "automobile noise", K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != abi.ModeLexical || !strings.Contains(res.Note, "no vectors") {
		t.Errorf("other dimension: mode %q note %q", res.Mode, res.Note)
	}
	srv2.Close()
	// The endpoint goes away: recall falls back and says so.
	srv.Close()
	st.SetEmbedder(emb)
	res, err = memory.Default(st).Recall(ctx, abi.RecallRequest{Query: "brake noise", K: 3})
	if err != nil {
		t.Fatalf("recall with a dead embedder must fall back, got %v", err)
	}
	if res.Mode != abi.ModeLexical || !strings.Contains(res.Note, "fell back") || len(res.Chunks) == 0 {
		t.Errorf("fallback: mode %q note %q hits %d", res.Mode, res.Note, len(res.Chunks))
	}
	// Re-ingest that removes a chunk removes its vector.
	src := fixtureSources()[2]
	src.Messages[0].Text = "Changed."
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	stats, _ = st.Stats(ctx)
	if stats.Vectors != 4 {
		t.Errorf("vectors after replace = %d, want 4", stats.Vectors)
	}
}
