package e2e

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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeSearXNG answers like SearXNG; the query text picks a behaviour.
type fakeSearXNG struct {
	mu   sync.Mutex
	seen []url.Values
}

func (f *fakeSearXNG) last() url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		return nil
	}
	return f.seen[len(f.seen)-1]
}

func (f *fakeSearXNG) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.seen = append(f.seen, q)
	f.mu.Unlock()
	if r.URL.Path != "/search" {
		http.NotFound(w, r)
		return
	}
	if q.Get("format") != "json" {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	switch q.Get("q") {
	case "mode 403":
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	case "mode 429":
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		return
	case "mode 500":
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "searx.exceptions.SearxEngineAPIException: engine crashed")
		return
	case "mode 302":
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		return
	case "mode badjson":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `<html>this is not json</html>`)
		return
	case "mode huge":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[`+strings.Repeat(`{"url":"https://x.example","title":"padding padding"},`, 5<<20/50)+`{}]}`)
		return
	case "mode slow":
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		return
	}
	rows := []map[string]any{
		{"url": "https://a.example/1", "title": "  ", "content": "first content", "engine": "duckduckgo", "engines": []string{"duckduckgo"}, "score": 3.1, "category": "general"},
		{"url": "https://b.example/2", "title": "Second", "content": "  ", "snippet": "second snippet", "engine": "", "engines": []string{"", "brave"}},
		{"url": "  ", "title": "no url, dropped"},
		{"title": "missing url, dropped"},
		{"url": "https://c.example/3", "title": "Third", "content": "third"},
		{"url": "https://d.example/4", "title": "Fourth", "content": "fourth", "engine": "bing"},
		{"url": "https://e.example/5", "title": "Fifth", "content": "fifth", "engine": "bing"},
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"query": q.Get("q"), "number_of_results": 0, "results": rows,
		"answers": []any{}, "corrections": []any{}, "infoboxes": []any{},
		"suggestions": []string{"more"}, "unresponsive_engines": [][]string{{"wikipedia", "timeout"}},
	})
}

func searxEnv(t *testing.T, base string) *env {
	return newEnv(t).with(
		"OPENHUMAN_SEARXNG_ENABLED=yes",
		"OPENHUMAN_SEARXNG_BASE_URL="+base,
		"OPENHUMAN_SEARXNG_MAX_RESULTS=3",
		"OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE=zh-CN",
		"OPENHUMAN_SEARXNG_TIMEOUT_SECONDS=1",
	)
}

func searx(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "searxng_search", Arguments: args})
	if err != nil {
		t.Fatalf("searxng_search %v: JSON-RPC error %v", args, err)
	}
	return res
}

func TestSearXNGThroughTheStack(t *testing.T) {
	fake := &fakeSearXNG{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cs := connect(t, searxEnv(t, srv.URL+"/"), "searx-client")
	schemas := outputSchemas(t, cs)
	if schemas["searxng_search"] == nil {
		t.Fatal("searxng_search not listed although enabled")
	}

	// Parameters as sent, with a hostile query.
	hostile := "a&b=c #frag /../../etc/passwd .. ?x=%41"
	sc := callOK(t, cs, schemas, "searxng_search", fmt.Sprintf(`{"query":%q,"categories":["web","news","general"]}`, "  "+hostile+"  "))
	got := fake.last()
	if got.Get("q") != hostile || got.Get("format") != "json" || got.Get("categories") != "general,news" || got.Get("language") != "zh-CN" {
		t.Errorf("SearXNG received %v", got)
	}
	if len(got) != 4 {
		t.Errorf("unexpected parameters reached SearXNG: %v", got)
	}
	if sc["query"] != hostile {
		t.Errorf("result query = %q", sc["query"])
	}

	// Normalisation; max_results defaults to the configured 3.
	results := sc["results"].([]any)
	if len(results) != 3 {
		t.Fatalf("%d results, want the configured max_results 3: %v", len(results), results)
	}
	want := []map[string]any{
		{"title": "https://a.example/1", "url": "https://a.example/1", "snippet": "first content", "source": "duckduckgo"},
		{"title": "Second", "url": "https://b.example/2", "snippet": "second snippet", "source": "brave"},
		{"title": "Third", "url": "https://c.example/3", "snippet": "third", "source": "searxng"},
	}
	for i, w := range want {
		r := results[i].(map[string]any)
		for k, v := range w {
			if r[k] != v {
				t.Errorf("result %d %s = %v, want %v", i, k, r[k], v)
			}
		}
	}
	sc = callOK(t, cs, schemas, "searxng_search", `{"query":"more please","max_results":5,"language":"de"}`)
	if n := len(sc["results"].([]any)); n != 5 {
		t.Errorf("max_results 5: got %d results", n)
	}
	if fake.last().Get("language") != "de" {
		t.Errorf("language sent %q, want de", fake.last().Get("language"))
	}

	// Invalid arguments are the tool's exact messages.
	for args, want := range map[string]string{
		`{"query":"x","categories":["videos"]}`: "unsupported SearXNG category `videos`; expected web, news, or images",
		`{"query":"x","max_results":51}`:        "argument `max_results` must not exceed 50 (got 51)",
		`{"query":"  "}`:                        "argument `query` must not be empty",
		`{"query":"x","url":"http://evil"}`:     "unexpected argument `url`",
	} {
		if got := callErr(t, cs, "searxng_search", args); got != want {
			t.Errorf("%s:\n got %q\nwant %q", args, got, want)
		}
	}

	// Failures: each a clear isError, and the server still answers afterwards.
	failures := []struct{ query, want string }{
		{"mode 403", "add json to search.formats"},
		{"mode 429", "429"},
		{"mode 500", "engine crashed"},
		{"mode 302", "redirect to http://127.0.0.1:1/elsewhere"},
		{"mode badjson", "not valid JSON"},
		{"mode huge", "1048576-byte limit"},
		{"mode slow", "no answer within 1s"},
	}
	for _, f := range failures {
		res := searx(t, cs, map[string]any{"query": f.query})
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || !strings.Contains(text, f.want) {
			t.Errorf("%s: isError=%v %q, want it to contain %q", f.query, res.IsError, text, f.want)
		}
		t.Logf("%-13s → %s", f.query, text)
		if err := cs.Ping(context.Background(), nil); err != nil {
			t.Fatalf("%s: server stopped answering: %v", f.query, err)
		}
	}
	if res := searx(t, cs, map[string]any{"query": "after failures"}); res.IsError {
		t.Errorf("a normal search after the failures failed: %v", res.Content)
	}
}

func TestSearXNGUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cs := connect(t, searxEnv(t, "http://"+dead), "searx-dead")
	res := searx(t, cs, map[string]any{"query": "anything"})
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "SearXNG at http://"+dead+"/search is unreachable") {
		t.Errorf("connection refused: %q", text)
	}
	t.Logf("connection refused → %s", text)
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Errorf("server stopped answering: %v", err)
	}
}
