package e2e

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bowServer is a loopback OpenAI-compatible embeddings endpoint: POST
// /v1/embeddings answers each input with a bag-of-words vector (words hashed into
// 128 dimensions), so texts sharing words are near each other.
type bowServer struct {
	*httptest.Server
	requests atomic.Int64
	texts    atomic.Int64
}

func newBOWServer(t *testing.T, model string) *bowServer {
	t.Helper()
	s := &bowServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != model {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		s.requests.Add(1)
		s.texts.Add(int64(len(req.Input)))
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		out := struct {
			Object string `json:"object"`
			Model  string `json:"model"`
			Data   []item `json:"data"`
		}{Object: "list", Model: model}
		for i, text := range req.Input {
			v := make([]float64, 128)
			for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
				h := fnv.New32a()
				h.Write([]byte(w))
				v[h.Sum32()%128]++
			}
			var n float64
			for _, x := range v {
				n += x * x
			}
			if n == 0 {
				v[0], n = 1, 1
			}
			for j := range v {
				v[j] /= math.Sqrt(n)
			}
			out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestDenseEmbedderEndToEnd: with an OpenAI-compatible embedder configured, ingest
// embeds every chunk, memory.recall through the MCP server is hybrid, and once the
// endpoint is gone recall falls back to the offline mode and says so; an ingest
// that cannot reach the embedder keeps the text and exits 1 naming the failure.
func TestDenseEmbedderEndToEnd(t *testing.T) {
	const model = "bow-128"
	srv := newBOWServer(t, model)
	e := emptyStoreEnv(t).with("OPENHUMAN_MEMORY_EMBEDDER=openai", "OPENHUMAN_MEMORY_EMBED_ENDPOINT="+srv.URL, "OPENHUMAN_MEMORY_EMBED_MODEL="+model)
	paths, err := writeFixture(filepath.Join(e.home, "input"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := e.command(ctx, append([]string{"ingest"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	what := " chunks and summaries with "
	if pgBackend.url != "" {
		what = " chunks with " // PostgreSQL keeps no summary tree
	}
	if !strings.Contains(string(out), "embedded ") || !strings.Contains(string(out), what+model) || srv.texts.Load() == 0 {
		t.Fatalf("ingest did not embed (server saw %d texts):\n%s", srv.texts.Load(), out)
	}
	embedded := srv.texts.Load()

	// Re-ingesting embeds nothing new.
	out, err = e.command(ctx, append([]string{"ingest"}, paths...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "embedded 0 chunks") || srv.texts.Load() != embedded {
		t.Fatalf("re-ingest: %v, server texts %d → %d\n%s", err, embedded, srv.texts.Load(), out)
	}

	cs := connect(t, e, "E2E Embedder")
	schemas := outputSchemas(t, cs)
	sc := callOK(t, cs, schemas, "memory.recall", `{"query":"phoenix launch date","k":3}`)
	if sc["mode"] != "hybrid" && sc["mode"] != "semantic" {
		t.Fatalf("memory.recall with an embedder: mode %v, want hybrid (%v)", sc["mode"], sc)
	}
	if srv.texts.Load() != embedded+1 {
		t.Errorf("recall sent %d texts to the embedder, want the query alone", srv.texts.Load()-embedded)
	}

	srv.Close()
	sc = callOK(t, cs, schemas, "memory.recall", `{"query":"phoenix launch date","k":3}`)
	note, _ := sc["note"].(string)
	if sc["mode"] != "lexical" || !strings.Contains(note, model) || !strings.Contains(note, "fell back") {
		t.Fatalf("memory.recall with the embedder gone: mode %v note %q, want lexical and a note naming %s", sc["mode"], note, model)
	}
	if hits, _ := sc["chunks"].([]any); len(hits) == 0 {
		t.Error("offline fallback found nothing for a query the fixture answers")
	}

	// A fresh store whose embedder is unreachable: the text is ingested, exit 1.
	e2 := emptyStoreEnv(t).with("OPENHUMAN_MEMORY_EMBEDDER=openai", "OPENHUMAN_MEMORY_EMBED_ENDPOINT="+srv.URL, "OPENHUMAN_MEMORY_EMBED_MODEL="+model)
	cmd := e2.command(ctx, append([]string{"ingest"}, paths...)...)
	out, err = cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("ingest with the embedder unreachable: %v, want exit status 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "embed chunks with "+model) || !strings.Contains(string(out), "the text is ingested and searchable") {
		t.Errorf("ingest with the embedder unreachable does not say what failed and what was kept:\n%s", out)
	}
	cs2 := connect(t, e2.with("OPENHUMAN_MEMORY_EMBEDDER=none"), "E2E Embedder offline")
	sc = callOK(t, cs2, outputSchemas(t, cs2), "memory.search", `{"query":"phoenix","k":3}`)
	if hits, _ := sc["chunks"].([]any); len(hits) == 0 {
		t.Error("the text of an ingest whose embedding failed is not searchable")
	}
}
