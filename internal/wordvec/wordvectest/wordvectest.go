// Package wordvectest starts a real HTTP server on a loopback port that answers
// like Ollama's POST /api/embed, with each text's vector computed from the
// shipped word vector table (wordvec.Text: the SIF mean of GloVe vectors). Tests
// of the optional embedder run against it: the vectors mean what words mean, so a
// test can ask for a hit that shares no word with the query, and no in-process
// fake stands in for the HTTP client.
package wordvectest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wordvec"
)

// Server is a loopback Ollama-compatible embedding endpoint.
type Server struct {
	*httptest.Server
	// Texts counts the texts it embedded.
	Texts atomic.Int64
}

// Start starts a Server on 127.0.0.1, closed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	out := struct {
		Model      string      `json:"model"`
		Embeddings [][]float32 `json:"embeddings"`
	}{Model: req.Model, Embeddings: make([][]float32, 0, len(req.Input))}
	for _, text := range req.Input {
		v, ok := wordvec.Text(text)
		if !ok {
			// A text of no known word: a fixed unit vector, as a real model gives
			// some vector for any text.
			v[0] = 1
		}
		out.Embeddings = append(out.Embeddings, v[:])
		s.Texts.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
