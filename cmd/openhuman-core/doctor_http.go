package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/mcpserver"
)

// A client may reach openhuman-core over HTTP instead of starting `mcp`: serve's
// /mcp named by URL with an Authorization header (Cursor, VS Code, Claude Code,
// Windsurf), or through the mcp-remote bridge (Claude Desktop and other
// stdio-only clients: npx mcp-remote URL --header "Authorization: Bearer …").
// doctor recognises both and checks them as the client would: the URL answers,
// and the token the entry sends is accepted.

// httpProbeTimeout bounds doctor's initialize request to an HTTP entry.
const httpProbeTimeout = 10 * time.Second

// serverEntry is one MCP server in a client's configuration, in any of the
// shapes the clients README documents use.
type serverEntry struct {
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Type      string            `json:"type"`
	URL       string            `json:"url"`
	ServerURL string            `json:"serverUrl"` // Windsurf
	Headers   map[string]string `json:"headers"`
}

// httpEntry is where an entry reaches a server over HTTP and with which
// headers; bridge names mcp-remote when the entry runs it. ok is false for an
// entry that starts a local command other than mcp-remote.
type httpEntry struct {
	URL       string
	Headers   map[string]string
	Bridge    string
	AllowHTTP bool
}

var envRef = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${VAR} (and VS Code's ${env:VAR}) with the entry's env,
// then the environment, as mcp-remote and the editors do.
func expandEnv(s string, env map[string]string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		if v, ok := env[name]; ok {
			return v
		}
		return os.Getenv(name)
	})
}

func (s serverEntry) http() (httpEntry, bool) {
	if u := s.URL + s.ServerURL; u != "" && s.Command == "" {
		h := map[string]string{}
		for k, v := range s.Headers {
			h[k] = expandEnv(v, s.Env)
		}
		return httpEntry{URL: u, Headers: h}, true
	}
	bridged := false
	for _, a := range s.Args {
		if a == "mcp-remote" || strings.HasPrefix(a, "mcp-remote@") || strings.HasSuffix(a, "/mcp-remote") {
			bridged = true
		}
	}
	if !bridged && filepath.Base(s.Command) != "mcp-remote" {
		return httpEntry{}, false
	}
	e := httpEntry{Headers: map[string]string{}, Bridge: "mcp-remote"}
	for i := 0; i < len(s.Args); i++ {
		a := s.Args[i]
		switch {
		case a == "--header" && i+1 < len(s.Args):
			i++
			k, v, _ := strings.Cut(expandEnv(s.Args[i], s.Env), ":")
			e.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		case a == "--allow-http":
			e.AllowHTTP = true
		case e.URL == "" && (strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://")):
			e.URL = a
		}
	}
	return e, e.URL != ""
}

// ours reports whether the entry could be this server's /mcp: its path is /mcp,
// or the entry's name says openhuman. doctor probes no other server.
func (e httpEntry) ours(key string) bool {
	u, err := url.Parse(e.URL)
	if err != nil {
		return false
	}
	return strings.TrimSuffix(u.Path, "/") == "/mcp" || strings.Contains(strings.ToLower(key), "openhuman")
}

// checkHTTPEntry sends initialize to the entry's URL with its headers and
// reports what a client would meet: not reachable, token refused, not this
// server, or answering.
func checkHTTPEntry(ctx context.Context, c clientConfig, key string, e httpEntry, tokenPath string) (string, string, string) {
	how := "by URL"
	if e.Bridge != "" {
		how = "through " + e.Bridge
	}
	where := fmt.Sprintf("%s: %q (%s, %s)", c.Path, key, e.URL, how)
	header := `"Authorization: Bearer <token>" (the token in ` + tokenPath + `)`
	u, err := url.Parse(e.URL)
	if err != nil || u.Host == "" {
		return checkFail, where + ": not a URL", "set the URL to http://127.0.0.1:7788/mcp (serve's address)"
	}
	if e.Bridge != "" && u.Scheme == "http" && !e.AllowHTTP && !loopbackHost(u.Hostname()) {
		return checkFail, where + ": mcp-remote refuses a plain-http URL that is not localhost", "add \"--allow-http\" to the args, or serve it over https"
	}
	auth := ""
	for k, v := range e.Headers {
		if strings.EqualFold(k, "Authorization") {
			auth = v
		}
	}
	if auth == "" {
		fix := "add the header " + header
		if e.Bridge != "" {
			fix = `add "--header", "Authorization: Bearer <token>" to the args (the token in ` + tokenPath + `); without it mcp-remote looks for OAuth, which this server does not have`
		}
		return checkFail, where + ": sends no Authorization header; serve takes a static bearer token", fix
	}
	ctx, cancel := context.WithTimeout(ctx, httpProbeTimeout)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"openhuman-doctor","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, strings.NewReader(body))
	if err != nil {
		return checkFail, where + ": " + err.Error(), "correct the URL"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return checkFail, where + ": not reachable: " + err.Error(), "start it with `openhuman-core serve` (and keep it running), or correct the URL"
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		defer endSession(e.URL, e.Headers, sid)
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return checkFail, where + ": the token is not accepted (401)", "send the token serve uses: " + header
	case resp.StatusCode == http.StatusForbidden:
		return checkFail, where + ": refused (403): " + clipString(string(bytes.TrimSpace(data)), 200), "use 127.0.0.1 or localhost, or add the name to [server] allowed_hosts in config.toml"
	case resp.StatusCode != http.StatusOK:
		return checkFail, fmt.Sprintf("%s: answered %s", where, resp.Status), "check that the URL is serve's /mcp"
	}
	var msg struct {
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(firstMessage(resp.Header.Get("Content-Type"), data), &msg); err != nil || msg.Result.ServerInfo.Name != mcpserver.ServerName {
		return checkWarn, where + ": answers, but not as " + mcpserver.ServerName, "check that the URL is openhuman-core serve's /mcp"
	}
	return checkOK, where + ": answers initialize with the token", ""
}

// firstMessage is the JSON-RPC message of an answer: the body, or the first
// data line of an SSE stream.
func firstMessage(contentType string, body []byte) []byte {
	if !strings.HasPrefix(contentType, "text/event-stream") {
		return body
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(d) != "" {
			return []byte(strings.TrimSpace(d))
		}
	}
	return nil
}

// endSession deletes the session doctor's probe opened.
func endSession(u string, headers map[string]string, sid string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// httpSnippets are the HTTP configurations of the clients that reach serve's
// /mcp (url is serve's, tokenPath where the token is kept): the token goes in an
// Authorization header; there is no OAuth.
func httpSnippets(mcpURL, tokenPath string) [][2]string {
	tok := "<token from " + tokenPath + ">"
	return [][2]string{
		{"Claude Desktop (or any stdio-only client) through mcp-remote — claude_desktop_config.json",
			`{ "mcpServers": { "openhuman": { "command": "npx", "args": ["-y", "mcp-remote", "` + mcpURL + `", "--header", "Authorization:${AUTH_HEADER}"], "env": { "AUTH_HEADER": "Bearer ` + tok + `" } } } }`},
		{"Claude Code — a shell",
			`claude mcp add --transport http openhuman ` + mcpURL + ` --header "Authorization: Bearer $(cat ` + shellQuote(tokenPath) + `)"`},
		{"VS Code — .vscode/mcp.json",
			`{ "servers": { "openhuman": { "type": "http", "url": "` + mcpURL + `", "headers": { "Authorization": "Bearer ` + tok + `" } } } }`},
		{"Cursor — ~/.cursor/mcp.json",
			`{ "mcpServers": { "openhuman": { "url": "` + mcpURL + `", "headers": { "Authorization": "Bearer ` + tok + `" } } } }`},
	}
}
