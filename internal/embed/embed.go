// Package embed turns texts into L2-normalised dense vectors through an external embedding
// service (Ollama or an OpenAI-compatible endpoint) and searches such vectors in memory.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/config"
)

// Embedder turns texts into vectors of one model.
type Embedder interface {
	// Model is the model name, stored with every vector so models are never mixed.
	Model() string
	// Embed returns one L2-normalised vector per text, in order, all of one dimension.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrUnreachable marks errors where no HTTP reply came back (connection refused, DNS, timeout):
// recall falls back to its offline mode on these.
var ErrUnreachable = errors.New("embedder unreachable")

// Defaults used when the config leaves a setting empty.
const (
	DefaultOllamaEndpoint = "http://127.0.0.1:11434"
	DefaultOllamaModel    = "nomic-embed-text"
	DefaultOpenAIEndpoint = "https://api.openai.com"
	DefaultOpenAIModel    = "text-embedding-3-small"
	DefaultTimeout        = 10 * time.Second
	// BatchSize is how many texts go in one request.
	BatchSize = 64
	// MaxReplyBytes caps one reply body (64 texts × 4096 dimensions fit well below it).
	MaxReplyBytes = 32 << 20
)

// New returns the embedder cfg.Embedder names ("none" or "" gives nil, nil). getenv looks up the
// OpenAI API key variable named by cfg.APIKeyEnv (os.Getenv in production).
func New(cfg config.MemoryTree, getenv func(string) string) (Embedder, error) {
	timeout := DefaultTimeout
	if cfg.TimeoutMS > 0 {
		timeout = time.Duration(cfg.TimeoutMS) * time.Millisecond
	}
	kind := strings.ToLower(strings.TrimSpace(cfg.Embedder))
	switch kind {
	case "", config.EmbedderNone:
		return nil, nil
	case config.EmbedderOllama, config.EmbedderOpenAI:
	default:
		return nil, fmt.Errorf("[memory_tree] embedder = %q: unknown; use %q, %q or %q",
			cfg.Embedder, config.EmbedderNone, config.EmbedderOllama, config.EmbedderOpenAI)
	}
	endpoint, model := cfg.Endpoint, cfg.Model
	if kind == config.EmbedderOllama {
		if endpoint == "" {
			endpoint = DefaultOllamaEndpoint
		}
		if model == "" {
			model = DefaultOllamaModel
		}
	} else {
		if endpoint == "" {
			endpoint = DefaultOpenAIEndpoint
		}
		if model == "" {
			model = DefaultOpenAIModel
		}
	}
	if err := checkEndpoint(endpoint); err != nil {
		return nil, err
	}
	if kind == config.EmbedderOllama {
		return NewOllama(endpoint, model, timeout), nil
	}
	key := ""
	if cfg.APIKeyEnv != "" && getenv != nil {
		key = getenv(cfg.APIKeyEnv)
	}
	return NewOpenAI(endpoint, model, key, timeout), nil
}

func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the raw URL
		}
		return fmt.Errorf("[memory_tree] endpoint %q: %w", Redact(endpoint), err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("[memory_tree] endpoint %q: want an http:// or https:// URL with a host, e.g. %s", Redact(endpoint), DefaultOllamaEndpoint)
	}
	return nil
}

// NewOllama returns an embedder for Ollama's POST <endpoint>/api/embed.
func NewOllama(endpoint, model string, timeout time.Duration) Embedder {
	return &client{kind: "ollama", url: joinURL(endpoint, "/api/embed"), model: model, timeout: timeout, http: newHTTP()}
}

// NewOpenAI returns an embedder for an OpenAI-compatible POST <endpoint>/v1/embeddings; apiKey
// ("" for none) is sent as a bearer token.
func NewOpenAI(endpoint, model, apiKey string, timeout time.Duration) Embedder {
	return &client{kind: "openai", url: joinURL(endpoint, "/v1/embeddings"), model: model, key: apiKey, timeout: timeout, http: newHTTP()}
}

// Redact is endpoint with any password in it replaced by "xxxxx", for
// messages and logs (issue 39: a password in [memory_tree] endpoint was
// printed by doctor and ingest).
func Redact(endpoint string) string { return config.RedactURL(endpoint) }

// shown is the endpoint as messages name it.
func (c *client) shown() string { return Redact(c.url) }

func joinURL(endpoint, path string) string {
	return strings.TrimRight(endpoint, "/") + path
}

func newHTTP() *http.Client {
	return &http.Client{
		// Embedding endpoints do not redirect; following one could leak the API key elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type client struct {
	kind    string // "ollama" or "openai"
	url     string
	model   string
	key     string
	timeout time.Duration
	http    *http.Client
}

func (c *client) Model() string { return c.model }

// Embed sends the texts in batches of BatchSize and returns normalised vectors.
func (c *client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	dim := 0
	for start := 0; start < len(texts); start += BatchSize {
		end := min(start+BatchSize, len(texts))
		vecs, err := c.batch(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		if len(vecs) != end-start {
			return nil, fmt.Errorf("embedder %s: sent %d texts, got %d vectors back", c.shown(), end-start, len(vecs))
		}
		for i, v := range vecs {
			if dim == 0 {
				dim = len(v)
			}
			if len(v) == 0 || len(v) != dim {
				return nil, fmt.Errorf("embedder %s (model %s): vector %d has %d dimensions, earlier ones %d; models must not be mixed",
					c.shown(), c.model, start+i, len(v), dim)
			}
			if err := Normalize(v); err != nil {
				return nil, fmt.Errorf("embedder %s (model %s): vector %d: %w", c.shown(), c.model, start+i, err)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type ollamaReply struct {
	Model      string      `json:"model"`
	Embeddings [][]float32 `json:"embeddings"`
}

type openAIReply struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
}

func (c *client) batch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: c.model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("embedder %s: encode request: %w", c.shown(), err)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.url, bytes.NewReader(body)) // the real URL; messages show c.shown()
	if err != nil {
		return nil, fmt.Errorf("embedder %s: %w", c.shown(), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, rctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading reply: %w", c.transportError(ctx, rctx, err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("embedder %s: %s: %s", c.shown(), resp.Status, preview(raw))
	}
	if len(raw) > MaxReplyBytes {
		return nil, fmt.Errorf("embedder %s: reply larger than %d MiB; lower the batch or check the endpoint", c.shown(), MaxReplyBytes>>20)
	}
	if c.kind == "ollama" {
		var r ollamaReply
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("embedder %s: reply is not Ollama embed JSON: %w: %s", c.shown(), err, preview(raw))
		}
		if r.Embeddings == nil {
			return nil, fmt.Errorf("embedder %s: reply has no \"embeddings\": %s", c.shown(), preview(raw))
		}
		return r.Embeddings, nil
	}
	var r openAIReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("embedder %s: reply is not OpenAI embeddings JSON: %w: %s", c.shown(), err, preview(raw))
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("embedder %s: sent %d texts, got %d vectors back", c.shown(), len(texts), len(r.Data))
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("embedder %s: reply index %d out of range or repeated (batch of %d)", c.shown(), d.Index, len(texts))
		}
		if d.Embedding == nil {
			d.Embedding = []float32{}
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// transportError explains a request that got no reply.
func (c *client) transportError(ctx, rctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("embedder %s: %w", c.shown(), ctx.Err())
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s: no reply within %s (raise [memory_tree] timeout_ms or check the service)", ErrUnreachable, c.shown(), c.timeout)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %s: timed out: %w", ErrUnreachable, c.shown(), err)
	}
	return fmt.Errorf("%w: %s: %w (is the %s service running?)", ErrUnreachable, c.shown(), err, c.kind)
}

// preview is the first 200 bytes of a reply, for error messages.
func preview(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

// Normalize scales v in place to unit L2 length. A vector with NaN or infinite components, or of
// zero length, is an error and is left unchanged.
func Normalize(v []float32) error {
	var sum float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("component %d is %v", i, x)
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return errors.New("zero vector cannot be normalised")
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return nil
}
