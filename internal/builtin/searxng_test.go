package builtin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// httpWeb is a web.searxng capability that does what the host does: one GET to
// <base>/search built with url.Values, the raw body returned to the guest logic.
type httpWeb struct {
	base       string
	defaultMax int
	lastReq    abi.SearxngRequest
}

func (w *httpWeb) Search(req abi.SearxngRequest) (*abi.SearxngReply, error) {
	w.lastReq = req
	v := url.Values{"q": {req.Query}, "format": {"json"}}
	if len(req.Categories) > 0 {
		v.Set("categories", strings.Join(req.Categories, ","))
	}
	if req.Language != "" {
		v.Set("language", req.Language)
	}
	hreq, err := http.NewRequestWithContext(context.Background(), http.MethodGet, w.base+"/search?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, &abi.Error{Code: abi.CodeUnavailable, Message: "SearXNG request failed: " + err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	maxResults := req.MaxResults
	if maxResults == 0 {
		maxResults = w.defaultMax
	}
	return &abi.SearxngReply{Status: resp.StatusCode, MaxResults: maxResults, Language: req.Language, ContentType: resp.Header.Get("Content-Type"), Body: string(body)}, nil
}

// searxngServer answers like SearXNG: the fixture for format=json, 403 otherwise.
func searxngServer(t *testing.T, body []byte, seen *url.Values) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*seen = r.URL.Query()
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSearxngSearch(t *testing.T) {
	fixture, err := os.ReadFile("testdata/searxng.json")
	if err != nil {
		t.Fatal(err)
	}
	var seen url.Values
	srv := searxngServer(t, fixture, &seen)
	w := &httpWeb{base: srv.URL, defaultMax: 10}

	res, err := SearxngSearch(json.RawMessage(`{"query":"  phoenix launch ","categories":["web","news","General"," images ",""],"language":" en "}`), w)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Get("q") != "phoenix launch" || seen.Get("categories") != "general,news,images" || seen.Get("language") != "en" {
		t.Fatalf("SearXNG saw %v", seen)
	}
	want := []abi.WebResult{
		{Title: "Phoenix launch notes", URL: "https://example.org/phoenix", Snippet: "The Phoenix rocket launched.", Source: "duckduckgo"},
		{Title: "https://example.net/blank-title", URL: "https://example.net/blank-title", Snippet: "fallback snippet", Source: "qwant"},
		{Title: "No engine", URL: "https://example.com/no-engine", Snippet: "", Source: "searxng"},
		{Title: "Four", URL: "https://example.com/4", Snippet: "four", Source: "bing"},
		{Title: "Five", URL: "https://example.com/5", Snippet: "five", Source: "bing"},
	}
	if res.Query != "phoenix launch" || !reflect.DeepEqual(res.Results, want) {
		t.Fatalf("result = %+v\nwant %+v", res, want)
	}
	conforms(t, ToolSearxngSearch, res)

	// max_results truncates after normalisation; absent categories and language are not sent.
	res, err = SearxngSearch(json.RawMessage(`{"query":"phoenix","max_results":2}`), w)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[1].URL != "https://example.net/blank-title" {
		t.Fatalf("max_results 2 → %+v", res.Results)
	}
	if seen.Has("categories") || seen.Has("language") || w.lastReq.MaxResults != 2 {
		t.Fatalf("SearXNG saw %v, host request %+v", seen, w.lastReq)
	}
	// The reply's effective cap (the configured default) applies when the call names none.
	w.defaultMax = 1
	if res, err = SearxngSearch(json.RawMessage(`{"query":"phoenix"}`), w); err != nil || len(res.Results) != 1 {
		t.Fatalf("default cap 1 → %+v, %v", res, err)
	}
}

func TestSearxngSearchArguments(t *testing.T) {
	for _, c := range []struct{ args, msg string }{
		{`{}`, "missing required argument `query`"},
		{`{"query":"  "}`, "argument `query` must not be empty"},
		{`{"query":"x","categories":["videos"]}`, "unsupported SearXNG category `videos`; expected web, news, or images"},
		{`{"query":"x","categories":[" VIDEOS "]}`, "unsupported SearXNG category `videos`; expected web, news, or images"},
		{`{"query":"x","categories":"web"}`, "argument `categories` must be an array of strings, got string"},
		{`{"query":"x","language":""}`, "argument `language` must not be empty when provided"},
		{`{"query":"x","language":5}`, "argument `language` must be a string"},
		{`{"query":"x","max_results":51}`, "argument `max_results` must not exceed 50 (got 51)"},
		{`{"query":"x","max_results":0}`, "argument `max_results` must be greater than zero"},
		{`{"query":"x","max_results":"5"}`, "argument `max_results` must be a positive integer"},
		{`{"query":"x","pageno":2}`, "unexpected argument `pageno`"},
	} {
		w := &httpWeb{base: "http://127.0.0.1:1"}
		_, err := SearxngSearch(json.RawMessage(c.args), w)
		wantErr(t, err, abi.CodeInvalidParams, c.msg)
		if w.lastReq.Query != "" {
			t.Fatalf("%s: the host was called despite invalid arguments", c.args)
		}
	}
}

func TestSearxngSearchBadResponses(t *testing.T) {
	for _, c := range []struct {
		body string
		msg  string
	}{
		{`<html>rate limited</html>`, "SearXNG returned a response that is not valid JSON"},
		{`{"results":`, "SearXNG returned a response that is not valid JSON"},
		{`[1,2]`, "SearXNG returned JSON that is not an object"},
		{`{"query":"x"}`, "SearXNG returned JSON without a `results` array"},
		{`{"results":{"url":"x"}}`, "SearXNG returned JSON without a `results` array"},
	} {
		var seen url.Values
		srv := searxngServer(t, []byte(c.body), &seen)
		_, err := SearxngSearch(json.RawMessage(`{"query":"x"}`), &httpWeb{base: srv.URL, defaultMax: 10})
		e, ok := err.(*abi.Error)
		if !ok || e.Code != abi.CodeUnavailable || !strings.HasPrefix(e.Message, c.msg) {
			t.Fatalf("body %q: err = %v, want unavailable starting %q", c.body, err, c.msg)
		}
	}
	// A non-2xx status (the json format disabled → 403) is reported with the body start.
	var seen url.Values
	srv := searxngServer(t, nil, &seen)
	_, err := SearxngSearch(json.RawMessage(`{"query":"x"}`), &httpWeb{base: srv.URL + "/nope", defaultMax: 10})
	wantErr(t, err, abi.CodeUnavailable, "SearXNG returned 403: Forbidden\n")
	// An empty results array is a valid, empty answer.
	srv = searxngServer(t, []byte(`{"results":[]}`), &seen)
	res, err := SearxngSearch(json.RawMessage(`{"query":"x"}`), &httpWeb{base: srv.URL, defaultMax: 10})
	if err != nil || res.Results == nil || len(res.Results) != 0 {
		t.Fatalf("empty results: %+v, %v", res, err)
	}
	conforms(t, ToolSearxngSearch, res)
	// A host error passes through.
	_, err = SearxngSearch(json.RawMessage(`{"query":"x"}`), &httpWeb{base: "http://127.0.0.1:1"})
	if e, ok := err.(*abi.Error); !ok || e.Code != abi.CodeUnavailable || !strings.HasPrefix(e.Message, "SearXNG request failed") {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestNormaliseCategories(t *testing.T) {
	got, err := NormaliseCategories([]string{"web", "news", "general", " images "})
	if err != nil || !reflect.DeepEqual(got, []string{"general", "news", "images"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	got, err = NormaliseCategories([]string{"", "  "})
	if err != nil || len(got) != 0 {
		t.Fatalf("blanks: %v, %v", got, err)
	}
}

// FuzzParseSearxng checks that no response body makes the parser panic, that it
// never returns more than the cap, and that every result has a url, title and source.
func FuzzParseSearxng(f *testing.F) {
	if fixture, err := os.ReadFile("testdata/searxng.json"); err == nil {
		f.Add(fixture, 3)
	}
	for _, seed := range []string{`{"results":[{"url":"u"}]}`, `{"results":[null,{"url":" ","engines":[1]}]}`, `{"results":"x"}`, `[`, ``} {
		f.Add([]byte(seed), 10)
	}
	f.Fuzz(func(t *testing.T, body []byte, limit int) {
		limit = limit%60 + 1
		if limit < 1 {
			limit = 1
		}
		res, err := ParseSearxng(body, limit)
		if err != nil {
			if e, ok := err.(*abi.Error); !ok || e.Code != abi.CodeUnavailable {
				t.Fatalf("error %v is not unavailable", err)
			}
			return
		}
		if len(res) > limit {
			t.Fatalf("%d results over the cap %d", len(res), limit)
		}
		for _, r := range res {
			if r.URL == "" || r.Title == "" || r.Source == "" {
				t.Fatalf("incomplete result %+v", r)
			}
		}
	})
}
