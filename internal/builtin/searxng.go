package builtin

import (
	"encoding/json"
	"strings"

	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// DefaultSearxngResults is the result cap used when neither the call nor the host
// reply names one.
const DefaultSearxngResults = 10

// NormaliseCategories maps SearXNG categories as callers write them to the ones
// sent: each is trimmed and lowercased, blanks are skipped, web and general become
// general, news and images stay, duplicates are dropped keeping the first. Anything
// else is an invalid_params error: "unsupported SearXNG category `videos`; expected
// web, news, or images".
func NormaliseCategories(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, c := range in {
		c = strings.ToLower(strings.TrimSpace(c))
		var norm string
		switch c {
		case "":
			continue
		case "web", "general":
			norm = "general"
		case "news", "images":
			norm = c
		default:
			return nil, sdk.InvalidParams("unsupported SearXNG category `%s`; expected web, news, or images", c)
		}
		if !contains(out, norm) {
			out = append(out, norm)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SearxngSearch is searxng_search: validate the arguments (query, categories,
// language, max_results), ask the host to query SearXNG, then parse and normalise
// the untrusted response body inside the sandbox.
func SearxngSearch(args json.RawMessage, w Web) (*abi.SearxngResult, error) {
	a, err := sdk.ParseArgs(args, "query", "categories", "language", "max_results")
	if err != nil {
		return nil, err
	}
	q, err := a.RequiredString("query")
	if err != nil {
		return nil, err
	}
	cats, err := a.StringArray("categories")
	if err != nil {
		return nil, err
	}
	if cats, err = NormaliseCategories(cats); err != nil {
		return nil, err
	}
	lang, _, err := a.OptionalString("language")
	if err != nil {
		return nil, err
	}
	maxResults, _, err := a.PositiveInt("max_results", sdk.MaxK)
	if err != nil {
		return nil, err
	}
	req := abi.SearxngRequest{Query: q, Language: lang, MaxResults: maxResults}
	if len(cats) > 0 {
		req.Categories = cats
	}
	reply, err := w.Search(req)
	if err != nil {
		return nil, hostErr(abi.FnSearxngSearch, err)
	}
	if reply == nil {
		return nil, sdk.Internal("host function %s returned no reply", abi.FnSearxngSearch)
	}
	if reply.Status != 0 && (reply.Status < 200 || reply.Status > 299) {
		return nil, sdk.Unavailable("SearXNG returned %d: %s", reply.Status, clip(reply.Body, 500))
	}
	limit := reply.MaxResults
	if limit <= 0 {
		limit = maxResults
	}
	if limit <= 0 {
		limit = DefaultSearxngResults
	}
	limit = min(limit, sdk.MaxK)
	results, err := ParseSearxng([]byte(reply.Body), limit)
	if err != nil {
		return nil, err
	}
	return &abi.SearxngResult{Query: q, Results: results}, nil
}

// searxRow holds the fields of one SearXNG result that normalisation reads; each is
// kept raw so a wrongly typed field is treated as blank instead of failing the row.
type searxRow struct {
	URL     json.RawMessage `json:"url"`
	Title   json.RawMessage `json:"title"`
	Content json.RawMessage `json:"content"`
	Snippet json.RawMessage `json:"snippet"`
	Engine  json.RawMessage `json:"engine"`
	Engines json.RawMessage `json:"engines"`
}

// ParseSearxng parses a SearXNG JSON response body (untrusted) and returns at most
// limit normalised results: rows that are not objects or have a blank url are
// skipped; title falls back to the url; snippet is the first non-blank of content
// and snippet; source is engine, else the first non-blank engines[] entry, else
// "searxng". A body that is not JSON, or not an object with a results array, is an
// unavailable error.
func ParseSearxng(body []byte, limit int) ([]abi.WebResult, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		if !json.Valid(body) {
			return nil, sdk.Unavailable("SearXNG returned a response that is not valid JSON: %v (first bytes: %q)", err, clip(string(body), 120))
		}
		return nil, sdk.Unavailable("SearXNG returned JSON that is not an object (first bytes: %q); is base_url pointing at a SearXNG instance?", clip(string(body), 120))
	}
	rawResults, ok := top["results"]
	if !ok || firstByte(rawResults) != '[' {
		return nil, sdk.Unavailable("SearXNG returned JSON without a `results` array; check that base_url points at SearXNG and that `json` is listed in search.formats of its settings.yml")
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(rawResults, &rows); err != nil {
		return nil, sdk.Unavailable("SearXNG returned a `results` value that is not a JSON array: %v", err)
	}
	out := make([]abi.WebResult, 0, min(len(rows), max(limit, 0)))
	for _, raw := range rows {
		if len(out) >= limit {
			break
		}
		if firstByte(raw) != '{' {
			continue
		}
		var r searxRow
		if json.Unmarshal(raw, &r) != nil {
			continue
		}
		u := str(r.URL)
		if u == "" {
			continue
		}
		res := abi.WebResult{URL: u, Title: str(r.Title), Source: str(r.Engine)}
		if res.Title == "" {
			res.Title = u
		}
		if res.Snippet = str(r.Content); res.Snippet == "" {
			res.Snippet = str(r.Snippet)
		}
		if res.Source == "" {
			var engines []json.RawMessage
			if firstByte(r.Engines) == '[' && json.Unmarshal(r.Engines, &engines) == nil {
				for _, e := range engines {
					if s := str(e); s != "" {
						res.Source = s
						break
					}
				}
			}
		}
		if res.Source == "" {
			res.Source = "searxng"
		}
		out = append(out, res)
	}
	return out, nil
}

// str returns the trimmed string in raw, or "" when raw is not a JSON string.
func str(raw json.RawMessage) string {
	if firstByte(raw) != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

func firstByte(raw json.RawMessage) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// clip shortens s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
