// Package searxng is the host side of the web.searxng capability: it sends one GET
// to the configured SearXNG instance's /search route, built by the host from
// validated parameters, and hands the raw body to the first-party logic on the
// host (internal/builtin ParseSearxng), which parses it.
package searxng

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// MaxBodyBytes caps the response body the client reads from SearXNG.
const MaxBodyBytes = 1 << 20

// MaxResultsLimit is the largest max_results a request may ask for.
const MaxResultsLimit = 50

// errorBodyBytes is how much of a non-2xx body goes into the error message.
const errorBodyBytes = 500

// userAgent identifies the client to SearXNG (its bot limiter rejects header-less clients).
const userAgent = "openhuman-core (+https://github.com/openhuman/openhuman-core) searxng-client/1"

// Client sends searches to one SearXNG instance. It is safe for concurrent use.
type Client struct {
	endpoint        *url.URL // scheme://host:port/<base path>/search, no query
	defaultLanguage string
	maxResults      int
	timeout         time.Duration
	http            *http.Client
}

// New validates cfg and returns a client for cfg.BaseURL. The endpoint is the base
// URL trimmed, without a trailing "/", with "/search" appended unless it already ends so.
func New(cfg config.SearXNG) (*Client, error) {
	base := strings.TrimSpace(cfg.BaseURL)
	if err := config.CheckBaseURL(base); err != nil {
		return nil, fmt.Errorf("searxng: %w; set searxng.base_url or OPENHUMAN_SEARXNG_BASE_URL to e.g. http://localhost:8080", err)
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/search") {
		base += "/search"
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("searxng: invalid base_url %q: %w", cfg.BaseURL, err)
	}
	maxResults := cfg.MaxResults
	if maxResults < 1 || maxResults > MaxResultsLimit {
		return nil, fmt.Errorf("searxng: max_results must be 1..%d, got %d", MaxResultsLimit, maxResults)
	}
	if cfg.TimeoutSeconds < 1 {
		return nil, fmt.Errorf("searxng: timeout_seconds must be at least 1, got %d", cfg.TimeoutSeconds)
	}
	timeout := time.Duration(cfg.TimeoutSeconds) * time.Second
	c := &Client{
		endpoint:        u,
		defaultLanguage: strings.TrimSpace(cfg.DefaultLanguage),
		maxResults:      maxResults,
		timeout:         timeout,
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil // the request goes to the configured origin, never through an environment proxy
	c.http = &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c, nil
}

// Endpoint is the URL searches are sent to, without a query.
func (c *Client) Endpoint() string { return c.endpoint.Redacted() } // never a password

// BuildURL returns the GET URL for req after validating it, and the effective
// language and max_results.
func (c *Client) BuildURL(req abi.SearxngRequest) (u string, language string, maxResults int, err error) {
	q := strings.TrimSpace(req.Query)
	if q == "" {
		return "", "", 0, errors.New("SearXNG search query cannot be empty")
	}
	if !utf8.ValidString(q) {
		return "", "", 0, errors.New("SearXNG search query is not valid UTF-8")
	}
	var cats []string
	seen := map[string]bool{}
	for _, cat := range req.Categories {
		cat = strings.ToLower(strings.TrimSpace(cat))
		if cat == "" {
			continue
		}
		switch cat {
		case "general", "news", "images":
		default:
			return "", "", 0, fmt.Errorf("unsupported SearXNG category %q; expected general, news or images", cat)
		}
		if !seen[cat] {
			seen[cat] = true
			cats = append(cats, cat)
		}
	}
	language = strings.TrimSpace(req.Language)
	if language == "" {
		language = c.defaultLanguage
	}
	if len(language) > 35 || strings.ContainsFunc(language, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", "", 0, fmt.Errorf("SearXNG language %q is not a language tag such as en or zh-CN", language)
	}
	maxResults = req.MaxResults
	switch {
	case maxResults == 0:
		maxResults = c.maxResults
	case maxResults < 1 || maxResults > MaxResultsLimit:
		return "", "", 0, fmt.Errorf("SearXNG max_results must be 1..%d, got %d", MaxResultsLimit, maxResults)
	}
	vals := url.Values{}
	vals.Set("q", q)
	vals.Set("format", "json")
	if len(cats) > 0 {
		vals.Set("categories", strings.Join(cats, ","))
	}
	if language != "" {
		vals.Set("language", language)
	}
	full := *c.endpoint
	full.RawQuery = vals.Encode()
	full.Fragment = ""
	return full.String(), language, maxResults, nil
}

// Search sends one GET to SearXNG and returns the raw JSON body with the effective
// language and max_results. Every failure is an error a person can act on.
func (c *Client) Search(ctx context.Context, req abi.SearxngRequest) (*abi.SearxngReply, error) {
	target, language, maxResults, err := c.BuildURL(req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("build SearXNG request for %s: %w", c.Endpoint(), err)
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", userAgent)

	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc := resp.Header.Get("Location")
		if loc == "" {
			loc = "no Location header"
		}
		return nil, fmt.Errorf("SearXNG answered %d (redirect to %s); redirects are not followed: check base_url (%s)",
			resp.StatusCode, loc, c.Endpoint())
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
		msg := fmt.Sprintf("SearXNG returned %s: %s", statusText(resp.StatusCode), strings.TrimSpace(strings.ToValidUTF8(string(head), "\uFFFD")))
		switch resp.StatusCode {
		case http.StatusForbidden:
			msg += " (the json format is probably disabled: add json to search.formats in SearXNG's settings.yml)"
		case http.StatusTooManyRequests:
			msg += " (SearXNG's bot limiter rejected the request: allow this client in limiter.toml or disable server.limiter in settings.yml, or retry later)"
		}
		return nil, errors.New(msg)
	}
	if resp.ContentLength > MaxBodyBytes {
		return nil, fmt.Errorf("SearXNG response from %s is %d bytes, over the %d-byte limit; lower max_results or check base_url", c.Endpoint(), resp.ContentLength, MaxBodyBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, fmt.Errorf("read response body: %w", err))
	}
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("SearXNG response from %s exceeds the %d-byte limit; lower max_results or check base_url", c.Endpoint(), MaxBodyBytes)
	}
	return &abi.SearxngReply{
		Status:      resp.StatusCode,
		MaxResults:  maxResults,
		Language:    language,
		ContentType: resp.Header.Get("Content-Type"),
		Body:        strings.ToValidUTF8(string(body), "\uFFFD"),
	}, nil
}

// transportError turns a failed round trip into a message that names the instance.
func (c *Client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("SearXNG request to %s was cancelled: %w", c.Endpoint(), ctx.Err())
	}
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout()
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is named below; drop the query from the message
	}
	if timeout {
		return fmt.Errorf("SearXNG at %s is unreachable: no answer within %s (searxng.timeout_seconds): %w", c.Endpoint(), c.timeout, err)
	}
	return fmt.Errorf("SearXNG at %s is unreachable: %w; is it running, and is searxng.base_url right?", c.Endpoint(), err)
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprintf("%d", code)
}
