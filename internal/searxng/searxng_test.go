package searxng

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// fakeSearXNG answers like a SearXNG instance with the json format enabled.
type fakeSearXNG struct {
	mu      sync.Mutex
	queries []url.Values
	paths   []string
	headers []http.Header
}

func (f *fakeSearXNG) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.queries = append(f.queries, r.URL.Query())
	f.paths = append(f.paths, r.URL.Path)
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	if r.URL.Query().Get("format") != "json" {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "<html><body>403 Forbidden</body></html>")
		return
	}
	q := r.URL.Query().Get("q")
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"query":             q,
		"number_of_results": 0,
		"results": []map[string]any{
			{"url": "https://example.org/a", "title": "A page", "content": "About " + q, "engine": "duckduckgo",
				"engines": []string{"duckduckgo", "brave"}, "score": 2.5, "category": "general", "positions": []int{1},
				"parsed_url": []string{"https", "example.org", "/a", "", "", ""}, "template": "default.html"},
			{"url": "", "title": "no url"},
		},
		"answers":              []any{},
		"corrections":          []any{},
		"infoboxes":            []any{},
		"suggestions":          []string{q + " tips"},
		"unresponsive_engines": [][]string{{"wikipedia", "timeout"}},
	})
}

func (f *fakeSearXNG) last(t *testing.T) (string, url.Values, http.Header) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		t.Fatal("SearXNG received no request")
	}
	n := len(f.queries) - 1
	return f.paths[n], f.queries[n], f.headers[n]
}

func newClient(t *testing.T, base string, mutate ...func(*config.SearXNG)) *Client {
	t.Helper()
	cfg := config.SearXNG{Enabled: true, BaseURL: base, MaxResults: 10, DefaultLanguage: "en", TimeoutSeconds: 5}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return c
}

func TestSearchSendsParameters(t *testing.T) {
	fake := &fakeSearXNG{}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	cases := []struct {
		name       string
		base       string
		req        abi.SearxngRequest
		wantPath   string
		wantQ      string
		wantCats   string
		wantLang   string
		wantMax    int
		wantNoCats bool
	}{
		{name: "defaults", base: srv.URL, req: abi.SearxngRequest{Query: "  phoenix launch  "},
			wantPath: "/search", wantQ: "phoenix launch", wantLang: "en", wantMax: 10, wantNoCats: true},
		{name: "hostile query", base: srv.URL + "/", req: abi.SearxngRequest{Query: "a&b=c #frag /../etc/passwd ..?x=1%20"},
			wantPath: "/search", wantQ: "a&b=c #frag /../etc/passwd ..?x=1%20", wantLang: "en", wantMax: 10, wantNoCats: true},
		{name: "base path kept", base: srv.URL + "/searx/", req: abi.SearxngRequest{Query: "q", Categories: []string{"general", "news", "general", " images "}, Language: "zh-CN", MaxResults: 3},
			wantPath: "/searx/search", wantQ: "q", wantCats: "general,news,images", wantLang: "zh-CN", wantMax: 3},
		{name: "base already ends in search", base: srv.URL + "/search", req: abi.SearxngRequest{Query: "q", MaxResults: 50},
			wantPath: "/search", wantQ: "q", wantLang: "en", wantMax: 50, wantNoCats: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.base)
			reply, err := c.Search(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			path, q, h := fake.last(t)
			if path != tc.wantPath {
				t.Errorf("path = %q, want %q", path, tc.wantPath)
			}
			if got := q.Get("q"); got != tc.wantQ {
				t.Errorf("q = %q, want %q", got, tc.wantQ)
			}
			if got := q.Get("format"); got != "json" {
				t.Errorf("format = %q, want json", got)
			}
			if _, ok := q["categories"]; tc.wantNoCats && ok {
				t.Errorf("categories sent although none were asked for: %q", q.Get("categories"))
			}
			if !tc.wantNoCats && q.Get("categories") != tc.wantCats {
				t.Errorf("categories = %q, want %q", q.Get("categories"), tc.wantCats)
			}
			if got := q.Get("language"); got != tc.wantLang {
				t.Errorf("language = %q, want %q", got, tc.wantLang)
			}
			if len(q) > 4 {
				t.Errorf("unexpected parameters sent: %v", q)
			}
			if h.Get("Accept") != "application/json" || !strings.Contains(h.Get("User-Agent"), "openhuman-core") {
				t.Errorf("headers: Accept=%q User-Agent=%q", h.Get("Accept"), h.Get("User-Agent"))
			}
			if reply.Status != 200 || reply.MaxResults != tc.wantMax || reply.Language != tc.wantLang {
				t.Errorf("reply status=%d max=%d lang=%q, want 200 %d %q", reply.Status, reply.MaxResults, reply.Language, tc.wantMax, tc.wantLang)
			}
			var body struct {
				Query   string `json:"query"`
				Results []struct {
					URL string `json:"url"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(reply.Body), &body); err != nil {
				t.Fatalf("reply body is not the JSON SearXNG sent: %v", err)
			}
			if body.Query != tc.wantQ || len(body.Results) != 2 {
				t.Errorf("body query=%q results=%d", body.Query, len(body.Results))
			}
			if !strings.HasPrefix(reply.ContentType, "application/json") {
				t.Errorf("content type %q", reply.ContentType)
			}
		})
	}
}

func TestNoDefaultLanguage(t *testing.T) {
	fake := &fakeSearXNG{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c := newClient(t, srv.URL, func(s *config.SearXNG) { s.DefaultLanguage = "" })
	reply, err := c.Search(context.Background(), abi.SearxngRequest{Query: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, q, _ := fake.last(t); q.Has("language") {
		t.Errorf("language sent without a default: %q", q.Get("language"))
	}
	if reply.Language != "" {
		t.Errorf("reply language %q, want empty", reply.Language)
	}
}

func TestRejectsBadRequests(t *testing.T) {
	fake := &fakeSearXNG{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c := newClient(t, srv.URL)
	cases := []struct {
		req  abi.SearxngRequest
		want string
	}{
		{abi.SearxngRequest{Query: "   "}, "query cannot be empty"},
		{abi.SearxngRequest{Query: "x", Categories: []string{"videos"}}, `unsupported SearXNG category "videos"`},
		{abi.SearxngRequest{Query: "x", MaxResults: 51}, "max_results must be 1..50, got 51"},
		{abi.SearxngRequest{Query: "x", MaxResults: -1}, "max_results must be 1..50, got -1"},
		{abi.SearxngRequest{Query: "x", Language: "en\nHost: evil"}, "not a language tag"},
	}
	for _, tc := range cases {
		_, err := c.Search(context.Background(), tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Search(%+v) error = %v, want it to contain %q", tc.req, err, tc.want)
		}
	}
	fake.mu.Lock()
	n := len(fake.queries)
	fake.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests reached SearXNG for invalid input", n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, base := range []string{"", "ftp://x", "http://", "http://u:p@host", "http://host/?q=1"} {
		if _, err := New(config.SearXNG{BaseURL: base, MaxResults: 10, TimeoutSeconds: 1}); err == nil {
			t.Errorf("New(base_url=%q) accepted", base)
		}
	}
	if _, err := New(config.SearXNG{BaseURL: "http://h", MaxResults: 0, TimeoutSeconds: 1}); err == nil {
		t.Error("New(max_results=0) accepted")
	}
}

func TestFailures(t *testing.T) {
	bigBody := strings.Repeat("x", 5<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/forbidden/search", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Forbidden", http.StatusForbidden)
	})
	mux.HandleFunc("/limited/search", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
	})
	mux.HandleFunc("/broken/search", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "Traceback: KeyError 'engines'"+strings.Repeat(" pad", 400))
	})
	mux.HandleFunc("/moved/search", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
	})
	mux.HandleFunc("/huge/search", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(bigBody)))
		fmt.Fprint(w, bigBody)
	})
	mux.HandleFunc("/hugechunked/search", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i < 5<<10; i++ {
			fmt.Fprint(w, bigBody[:1024])
			if f, ok := w.(http.Flusher); ok && i == 0 {
				f.Flush()
			}
		}
	})
	block := make(chan struct{})
	mux.HandleFunc("/slow/search", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(block)

	// A port with nothing listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()

	cases := []struct {
		name string
		base string
		want []string
	}{
		{"connection refused", "http://" + deadAddr, []string{"SearXNG at http://" + deadAddr + "/search is unreachable", "refused"}},
		{"timeout", srv.URL + "/slow", []string{"is unreachable: no answer within 1s"}},
		{"403", srv.URL + "/forbidden", []string{"SearXNG returned 403 Forbidden: Forbidden", "add json to search.formats"}},
		{"429", srv.URL + "/limited", []string{"SearXNG returned 429 Too Many Requests: Too Many Requests", "limiter"}},
		{"500", srv.URL + "/broken", []string{"SearXNG returned 500 Internal Server Error: Traceback: KeyError 'engines'"}},
		{"302", srv.URL + "/moved", []string{"SearXNG answered 302 (redirect to http://169.254.169.254/latest/meta-data)", "check base_url"}},
		{"5 MB body", srv.URL + "/huge", []string{"over the 1048576-byte limit"}},
		{"5 MB chunked body", srv.URL + "/hugechunked", []string{"exceeds the 1048576-byte limit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.base, func(s *config.SearXNG) { s.TimeoutSeconds = 1 })
			reply, err := c.Search(context.Background(), abi.SearxngRequest{Query: "phoenix"})
			if err == nil {
				t.Fatalf("no error; reply status %d, %d body bytes", reply.Status, len(reply.Body))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.name == "500" && len(err.Error()) > 700 {
				t.Errorf("500 error message not capped: %d bytes", len(err.Error()))
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	done := make(chan error, 1)
	go func() { _, err := c.Search(ctx, abi.SearxngRequest{Query: "x"}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("error = %v, want a cancellation", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Search did not return after its context was cancelled")
	}
}
