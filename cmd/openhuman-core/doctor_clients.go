package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/mcpserver"
)

// clientStartTimeout bounds how long doctor waits for a client's configured
// command to answer initialize (a cold start compiles nothing before it).
const clientStartTimeout = 30 * time.Second

// desktopEnv is the environment a desktop app starts a server with: not the
// shell's (no PATH additions from .profile, no exported OPENHUMAN_*), only the
// session basics and the entry's own "env".
func desktopEnv(extra map[string]string) []string {
	env := []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
	for _, k := range []string{"HOME", "USER", "LOGNAME", "TMPDIR", "APPDATA", "LOCALAPPDATA", "USERPROFILE", "SystemRoot"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// startsAsClient starts command with args and env the way a desktop client does
// and checks that it answers an MCP initialize as openhuman-core.
func startsAsClient(ctx context.Context, command string, args []string, env map[string]string) error {
	if !filepath.IsAbs(command) {
		return fmt.Errorf("%q is a bare name: desktop apps do not read the shell's PATH", command)
	}
	fi, err := os.Stat(command)
	if err != nil {
		return fmt.Errorf("%s does not exist", command)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", command)
	}
	ctx, cancel := context.WithTimeout(ctx, clientStartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = desktopEnv(env)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"openhuman-doctor","version":"0"}}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s did not run: %v: %s", command, strings.Join(args, " "), err, lastLine(stderr.String()))
	}
	var resp struct {
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	line, _, _ := strings.Cut(stdout.String(), "\n")
	if json.Unmarshal([]byte(line), &resp) != nil || resp.Result.ServerInfo.Name != mcpserver.ServerName {
		return fmt.Errorf("%s %s did not answer initialize as %s: %q %s", command, strings.Join(args, " "), mcpserver.ServerName, clipString(line, 120), lastLine(stderr.String()))
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return clipString(lines[len(lines)-1], 200)
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// clientSnippet is what to paste into one client's configuration to start bin.
func clientSnippet(client, bin string) (where, snippet string) {
	b, _ := json.Marshal(bin)
	q := string(b)
	mcpServers := `{ "mcpServers": { "openhuman": { "command": ` + q + `, "args": ["mcp"] } } }`
	switch client {
	case "Claude Desktop / claude.ai":
		return "claude_desktop_config.json (macOS ~/Library/Application Support/Claude/, Linux ~/.config/Claude/)", mcpServers
	case "Cursor":
		return "~/.cursor/mcp.json", mcpServers
	case "OpenAI Codex":
		return "~/.codex/config.toml", "[mcp_servers.openhuman]\ncommand = " + q + "\nargs = [\"mcp\"]"
	case "GitHub Copilot CLI":
		return "~/.copilot/mcp-config.json", `{ "mcpServers": { "openhuman": { "type": "local", "command": ` + q + `, "args": ["mcp"], "tools": ["*"] } } }`
	case "Zed":
		return "~/.config/zed/settings.json", `{ "context_servers": { "openhuman": { "command": ` + q + `, "args": ["mcp"], "env": {} } } }`
	case "VS Code (GitHub Copilot Chat)":
		return ".vscode/mcp.json", `{ "servers": { "openhuman": { "type": "stdio", "command": ` + q + `, "args": ["mcp"] } } }`
	case "Claude Code":
		return "a shell", "claude mcp add openhuman -- " + shellQuote(bin) + " mcp"
	case "Windsurf":
		return "~/.codeium/windsurf/mcp_config.json", mcpServers
	case "Cline":
		return "cline_mcp_settings.json (Cline → MCP Servers → Configure)", mcpServers
	case "Continue":
		return "~/.continue/config.yaml", "mcpServers:\n  - name: openhuman\n    command: " + q + "\n    args: [mcp]"
	case "Goose":
		return "~/.config/goose/config.yaml", "extensions:\n  openhuman:\n    name: openhuman\n    type: stdio\n    cmd: " + q + "\n    args: [mcp]\n    enabled: true"
	case "LM Studio":
		return "~/.lmstudio/mcp.json", mcpServers
	case "Gemini CLI":
		return "~/.gemini/settings.json", mcpServers
	case "LibreChat":
		return "librechat.yaml", "mcpServers:\n  openhuman:\n    command: " + q + "\n    args: [mcp]"
	}
	return "", ""
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeSnippets prints, for every client of the README's table, where its
// configuration lives and what to paste there to start this binary.
func writeSnippets(w io.Writer) {
	bin, err := os.Executable()
	if err == nil {
		if p, err := filepath.EvalSymlinks(bin); err == nil {
			bin = p
		}
	}
	if err != nil {
		bin = "/absolute/path/to/openhuman-core"
	}
	fmt.Fprintf(w, "\nTo connect a client, paste (this binary is %s):\n", bin)
	for _, c := range mcpserver.Clients {
		where, snippet := clientSnippet(c.Name, bin)
		if snippet == "" {
			continue
		}
		names := "spec names"
		if c.Portable {
			names = "portable names"
		}
		fmt.Fprintf(w, "\n%s — %s (served %s):\n", c.Name, where, names)
		for _, l := range strings.Split(snippet, "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	mcpURL, tokenPath := serveEndpoint()
	fmt.Fprintf(w, "\nOver HTTP, to `openhuman-core serve` at %s (a static bearer token, no OAuth; the token is in %s):\n", mcpURL, tokenPath)
	for _, s := range httpSnippets(mcpURL, tokenPath) {
		fmt.Fprintf(w, "\n%s:\n    %s\n", s[0], s[1])
	}
}

// serveEndpoint is serve's /mcp URL and the token file, from the configuration
// (the defaults when it does not load).
func serveEndpoint() (mcpURL, tokenPath string) {
	cfg, _, err := config.Load(flags.configFile, nil)
	if err != nil {
		home, herr := homeFallback()
		if herr != nil {
			return "http://127.0.0.1:7788/mcp", "<workspace>/core.token"
		}
		cfg = config.Defaults(home)
	}
	host := cfg.Server.Host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.Server.Port)) + "/mcp", cfg.TokenPath()
}

// clientSnippets is writeSnippets' content for --json: client -> snippet.
func clientSnippets() map[string]string {
	bin, err := os.Executable()
	if err != nil {
		bin = "/absolute/path/to/openhuman-core"
	}
	out := map[string]string{}
	for _, c := range mcpserver.Clients {
		if _, s := clientSnippet(c.Name, bin); s != "" {
			out[c.Name] = s
		}
	}
	mcpURL, tokenPath := serveEndpoint()
	for _, s := range httpSnippets(mcpURL, tokenPath) {
		out["http: "+s[0]] = s[1]
	}
	return out
}
