package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/config"
)

// fakeVec is a deterministic, unnormalised vector for text: dim components derived from its bytes.
func fakeVec(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(len(text)%7+1) + float32(i)
		if i < len(text) {
			v[i] += float32(text[i])
		}
	}
	return v
}

type recorded struct {
	method, path, auth, contentType string
	body                            request
}

// server speaks one API exactly; reply may override the reply for a batch.
type server struct {
	t     *testing.T
	kind  string // "ollama" or "openai"
	dim   func(batch int) int
	reply func(w http.ResponseWriter, batch int, req request) bool // true when it replied itself
	mu    sync.Mutex
	reqs  []recorded
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	batch := len(s.reqs)
	rec := recorded{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type")}
	s.mu.Unlock()
	raw, _ := io.ReadAll(r.Body)
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec.body); err != nil {
		http.Error(w, "bad request json: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
	want := map[string]string{"ollama": "/api/embed", "openai": "/v1/embeddings"}[s.kind]
	if r.Method != http.MethodPost || r.URL.Path != want {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if s.reply != nil && s.reply(w, batch, rec.body) {
		return
	}
	dim := 8
	if s.dim != nil {
		dim = s.dim(batch)
	}
	w.Header().Set("Content-Type", "application/json")
	if s.kind == "ollama" {
		out := ollamaReply{Model: rec.body.Model}
		for _, t := range rec.body.Input {
			out.Embeddings = append(out.Embeddings, fakeVec(t, dim))
		}
		json.NewEncoder(w).Encode(out)
		return
	}
	// OpenAI: reply in reverse order to check that the client orders by index.
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i := len(rec.body.Input) - 1; i >= 0; i-- {
		data = append(data, item{"embedding", i, fakeVec(rec.body.Input[i], dim)})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": rec.body.Model,
		"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
}

func start(t *testing.T, s *server) *httptest.Server {
	s.t = t
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text number %d about the %s", i, strings.Repeat("x", i%5))
	}
	return out
}

func checkVectors(t *testing.T, in []string, got [][]float32, dim int) {
	t.Helper()
	if len(got) != len(in) {
		t.Fatalf("got %d vectors for %d texts", len(got), len(in))
	}
	for i, v := range got {
		if len(v) != dim {
			t.Fatalf("vector %d has %d dims, want %d", i, len(v), dim)
		}
		want := fakeVec(in[i], dim)
		if err := Normalize(want); err != nil {
			t.Fatal(err)
		}
		var norm float64
		for j := range v {
			norm += float64(v[j]) * float64(v[j])
			if math.Abs(float64(v[j]-want[j])) > 1e-6 {
				t.Fatalf("vector %d component %d = %v, want %v (order or normalisation wrong)", i, j, v[j], want[j])
			}
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Fatalf("vector %d has squared norm %v, want 1", i, norm)
		}
	}
}

func TestHappyPathBothAPIs(t *testing.T) {
	for _, kind := range []string{"ollama", "openai"} {
		t.Run(kind, func(t *testing.T) {
			s := &server{kind: kind}
			ts := start(t, s)
			var e Embedder
			if kind == "ollama" {
				e = NewOllama(ts.URL+"/", "nomic-embed-text", time.Second)
			} else {
				e = NewOpenAI(ts.URL, "text-embedding-3-small", "sk-test", time.Second)
			}
			in := texts(5)
			got, err := e.Embed(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkVectors(t, in, got, 8)
			if len(s.reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(s.reqs))
			}
			r := s.reqs[0]
			if r.method != "POST" || r.contentType != "application/json" {
				t.Errorf("request %s with content type %q", r.method, r.contentType)
			}
			if r.body.Model != e.Model() || strings.Join(r.body.Input, "|") != strings.Join(in, "|") {
				t.Errorf("request body %+v, want model %s and the texts", r.body, e.Model())
			}
			wantAuth := map[string]string{"ollama": "", "openai": "Bearer sk-test"}[kind]
			if r.auth != wantAuth {
				t.Errorf("Authorization %q, want %q", r.auth, wantAuth)
			}
		})
	}
}

func TestOpenAINoKeyNoAuthHeader(t *testing.T) {
	s := &server{kind: "openai"}
	ts := start(t, s)
	if _, err := NewOpenAI(ts.URL, "m", "", time.Second).Embed(context.Background(), texts(1)); err != nil {
		t.Fatal(err)
	}
	if s.reqs[0].auth != "" {
		t.Errorf("Authorization %q sent without a key", s.reqs[0].auth)
	}
}

func TestBatching(t *testing.T) {
	for _, kind := range []string{"ollama", "openai"} {
		s := &server{kind: kind}
		ts := start(t, s)
		e := NewOllama(ts.URL, "m", time.Second)
		if kind == "openai" {
			e = NewOpenAI(ts.URL, "m", "", time.Second)
		}
		in := texts(130)
		got, err := e.Embed(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		checkVectors(t, in, got, 8)
		if len(s.reqs) != 3 {
			t.Fatalf("%s: %d requests for 130 texts, want 3", kind, len(s.reqs))
		}
		for i, want := range []int{64, 64, 2} {
			if n := len(s.reqs[i].body.Input); n != want {
				t.Errorf("%s: batch %d has %d texts, want %d", kind, i, n, want)
			}
		}
		if got, err := e.Embed(context.Background(), nil); err != nil || len(got) != 0 || len(s.reqs) != 3 {
			t.Errorf("%s: empty input: %v %v, %d requests (want none)", kind, got, err, len(s.reqs)-3)
		}
	}
}

func embedErr(t *testing.T, kind string, reply func(w http.ResponseWriter, batch int, req request) bool, dim func(int) int, n int) error {
	t.Helper()
	s := &server{kind: kind, reply: reply, dim: dim}
	ts := start(t, s)
	e := NewOllama(ts.URL, "m", 2*time.Second)
	if kind == "openai" {
		e = NewOpenAI(ts.URL, "m", "", 2*time.Second)
	}
	got, err := e.Embed(context.Background(), texts(n))
	if err == nil {
		t.Fatalf("%s: no error, got %d vectors", kind, len(got))
	}
	if got != nil {
		t.Errorf("%s: vectors returned together with error %v", kind, err)
	}
	return err
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestHTTPErrorStatus(t *testing.T) {
	for _, kind := range []string{"ollama", "openai"} {
		err := embedErr(t, kind, func(w http.ResponseWriter, _ int, _ request) bool {
			http.Error(w, `{"error":"model \"m\" not found, try pulling it first"}`+strings.Repeat("z", 500), http.StatusInternalServerError)
			return true
		}, nil, 3)
		wantErr(t, err, "embedder http://127.0.0.1:", "500 Internal Server Error", `model \"m\" not found`)
		if strings.Count(err.Error(), "z") > 200 {
			t.Errorf("error body not cut to 200 bytes: %d bytes", len(err.Error()))
		}
		if errors.Is(err, ErrUnreachable) {
			t.Errorf("a 500 reply is not 'unreachable': %v", err)
		}
	}
}

func TestWrongPath404(t *testing.T) {
	s := &server{kind: "openai"}
	ts := start(t, s)
	_, err := NewOllama(ts.URL, "m", time.Second).Embed(context.Background(), texts(1)) // ollama path on an openai server
	if err == nil {
		t.Fatal("no error for 404")
	}
	wantErr(t, err, "/api/embed", "404 Not Found", "not found")
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, e := range []Embedder{NewOllama("http://"+addr, "m", time.Second), NewOpenAI("http://"+addr, "m", "k", time.Second)} {
		_, err := e.Embed(context.Background(), texts(2))
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("closed port: err = %v, want ErrUnreachable", err)
		}
		wantErr(t, err, "embedder unreachable", addr)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := &server{kind: "ollama", reply: func(w http.ResponseWriter, _ int, _ request) bool {
		<-release
		return true
	}}
	ts := start(t, s)
	_, err := NewOllama(ts.URL, "m", 50*time.Millisecond).Embed(context.Background(), texts(1))
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	wantErr(t, err, "no reply within 50ms", "timeout_ms")
}

func TestContextCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := &server{kind: "openai", reply: func(w http.ResponseWriter, _ int, _ request) bool {
		<-release
		return true
	}}
	ts := start(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			s.mu.Lock()
			n := len(s.reqs)
			s.mu.Unlock()
			if n > 0 {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := NewOpenAI(ts.URL, "m", "", time.Minute).Embed(ctx, texts(1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestMalformedReplies(t *testing.T) {
	cases := []struct {
		kind, body string
		want       []string
	}{
		{"ollama", `{"embeddings": [[1,2`, []string{"not Ollama embed JSON"}},
		{"ollama", `{"model":"m"}`, []string{`no "embeddings"`}},
		{"ollama", `<html>hello</html>`, []string{"not Ollama embed JSON", "<html>hello</html>"}},
		{"openai", `{"data": "nope"}`, []string{"not OpenAI embeddings JSON"}},
		{"openai", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]},{"index":1,"embedding":[1]}]}`, []string{"index 0", "repeated"}},
		{"openai", `{"data":[{"index":5,"embedding":[1]},{"index":1,"embedding":[1]},{"index":2,"embedding":[1]}]}`, []string{"index 5"}},
		{"ollama", `{"embeddings":[[1,2],[0,0],[1,1]]}`, []string{"vector 1", "zero vector"}},
		{"ollama", `{"embeddings":[[1,2],[1,2],[]]}`, []string{"vector 2", "0 dimensions"}},
	}
	for _, c := range cases {
		body := c.body
		err := embedErr(t, c.kind, func(w http.ResponseWriter, _ int, _ request) bool {
			io.WriteString(w, body)
			return true
		}, nil, 3)
		wantErr(t, err, c.want...)
	}
}

func TestNaNInReply(t *testing.T) {
	// JSON has no NaN literal; a server that writes one sends invalid JSON, and huge numbers overflow.
	err := embedErr(t, "ollama", func(w http.ResponseWriter, _ int, _ request) bool {
		io.WriteString(w, `{"embeddings":[[1,NaN]]}`)
		return true
	}, nil, 1)
	wantErr(t, err, "not Ollama embed JSON")
	err = embedErr(t, "ollama", func(w http.ResponseWriter, _ int, _ request) bool {
		io.WriteString(w, `{"embeddings":[[1,1e39]]}`)
		return true
	}, nil, 1)
	wantErr(t, err, "not Ollama embed JSON")
	if err := Normalize([]float32{1, float32(math.NaN())}); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("Normalize(NaN) = %v", err)
	}
	if err := Normalize([]float32{float32(math.Inf(1))}); err == nil {
		t.Error("Normalize(+Inf) accepted")
	}
}

func TestWrongCount(t *testing.T) {
	for _, kind := range []string{"ollama", "openai"} {
		err := embedErr(t, kind, func(w http.ResponseWriter, _ int, req request) bool {
			if kind == "ollama" {
				json.NewEncoder(w).Encode(ollamaReply{Embeddings: [][]float32{{1, 2}}})
			} else {
				io.WriteString(w, `{"data":[{"index":0,"embedding":[1,2]}]}`)
			}
			return true
		}, nil, 3)
		wantErr(t, err, "sent 3 texts, got 1 vectors")
	}
}

func TestDimensionMismatchAcrossBatches(t *testing.T) {
	for _, kind := range []string{"ollama", "openai"} {
		err := embedErr(t, kind, nil, func(batch int) int { return 8 + batch }, 70)
		wantErr(t, err, "vector 64", "9 dimensions", "earlier ones 8")
	}
}

func TestReplyTooLarge(t *testing.T) {
	ts := start(t, &server{kind: "ollama", reply: func(w http.ResponseWriter, _ int, _ request) bool {
		io.WriteString(w, `{"embeddings":[[`)
		chunk := strings.Repeat("0.123456789,", 1<<16)
		for written := 0; written <= MaxReplyBytes; written += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return true
			}
		}
		io.WriteString(w, `1]]}`)
		return true
	}})
	_, err := NewOllama(ts.URL, "m", time.Minute).Embed(context.Background(), texts(1))
	if err == nil {
		t.Fatal("a reply over the cap was accepted")
	}
	wantErr(t, err, "reply larger than 32 MiB")
}

func TestNoRedirects(t *testing.T) {
	var hit bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = true }))
	defer other.Close()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/embeddings", http.StatusTemporaryRedirect)
	}))
	defer ts.Close()
	_, err := NewOpenAI(ts.URL, "m", "secret", time.Second).Embed(context.Background(), texts(1))
	if err == nil || hit {
		t.Fatalf("redirect followed (hit=%v, err=%v)", hit, err)
	}
	wantErr(t, err, "307")
}

func TestNewFromConfig(t *testing.T) {
	env := func(k string) string {
		if k == "MY_KEY" {
			return "sk-from-env"
		}
		return ""
	}
	if e, err := New(config.MemoryTree{Embedder: "none"}, env); e != nil || err != nil {
		t.Errorf("none: %v, %v", e, err)
	}
	if e, err := New(config.MemoryTree{}, env); e != nil || err != nil {
		t.Errorf("empty: %v, %v", e, err)
	}
	if _, err := New(config.MemoryTree{Embedder: "bert"}, env); err == nil || !strings.Contains(err.Error(), `"bert"`) {
		t.Errorf("unknown embedder: %v", err)
	}
	if _, err := New(config.MemoryTree{Embedder: "ollama", Endpoint: "localhost:11434"}, env); err == nil || !strings.Contains(err.Error(), "http://") {
		t.Errorf("endpoint without scheme: %v", err)
	}
	e, err := New(config.MemoryTree{Embedder: "ollama"}, env)
	if err != nil || e.Model() != DefaultOllamaModel || e.(*client).url != DefaultOllamaEndpoint+"/api/embed" || e.(*client).timeout != DefaultTimeout {
		t.Errorf("ollama defaults: %+v, %v", e, err)
	}

	s := &server{kind: "openai"}
	ts := start(t, s)
	e, err = New(config.MemoryTree{Embedder: "OpenAI", Endpoint: ts.URL, Model: "mini", TimeoutMS: 1500, APIKeyEnv: "MY_KEY"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if e.Model() != "mini" || e.(*client).timeout != 1500*time.Millisecond {
		t.Errorf("openai from config: %+v", e)
	}
	if _, err := e.Embed(context.Background(), texts(2)); err != nil {
		t.Fatal(err)
	}
	if s.reqs[0].auth != "Bearer sk-from-env" || s.reqs[0].body.Model != "mini" {
		t.Errorf("request %+v, want key from MY_KEY and model mini", s.reqs[0])
	}
}

func TestTimeoutMidBody(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ts := start(t, &server{kind: "ollama", reply: func(w http.ResponseWriter, _ int, _ request) bool {
		io.WriteString(w, `{"embeddings":[[1,`)
		w.(http.Flusher).Flush()
		<-release
		return true
	}})
	_, err := NewOllama(ts.URL, "m", 100*time.Millisecond).Embed(context.Background(), texts(1))
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	wantErr(t, err, "reading reply", "no reply within 100ms")
}
