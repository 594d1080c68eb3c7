package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// doctor starts each configured client entry as a desktop app would: a bare
// command name fails (no shell PATH), a missing path fails, this binary's
// absolute path passes; then it prints a snippet per client with that path.
func TestDoctorStartsClientsAsTheyDo(t *testing.T) {
	e := newCLIEnv(t)
	write := func(rel, body string) {
		p := filepath.Join(e.home, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".config/Claude/claude_desktop_config.json", `{"mcpServers":{"openhuman":{"command":"openhuman-core","args":["mcp"]}}}`)
	write(".cursor/mcp.json", `{"mcpServers":{"openhuman":{"command":"/nowhere/openhuman-core","args":["mcp"]}}}`)
	write(".config/zed/settings.json", `{"context_servers":{"openhuman":{"command":"`+e.bin+`","args":["mcp"],"env":{"OPENHUMAN_SEARXNG_ENABLED":"false"}}}}`)
	write(".codex/config.toml", "[mcp_servers.openhuman]\ncommand = \""+e.bin+"\"\nargs = [\"mcp\"]\n")

	out, _, code := e.run("", "doctor")
	if code != 1 {
		t.Errorf("exit %d, want 1 (two client entries cannot start)", code)
	}
	for _, re := range []string{
		`(?m)^FAIL +claude-desktop .*"openhuman-core" is a bare name: desktop apps do not read the shell's PATH`,
		`(?m)^ +fix: use the absolute path: "mcpServers": \{ "openhuman": \{ "command": "` + regexp.QuoteMeta(e.bin) + `"`,
		`(?m)^FAIL +cursor .*/nowhere/openhuman-core does not exist`,
		`(?m)^ok +zed .*answers initialize`,
		`(?m)^ok +codex .*answers initialize`,
		`(?m)^Claude Desktop / claude\.ai — claude_desktop_config\.json.*\(served portable names\):$`,
		`(?m)^OpenAI Codex — ~/\.codex/config\.toml`,
		`(?m)^ +command = "` + regexp.QuoteMeta(e.bin) + `"$`,
		`(?m)^ +claude mcp add openhuman -- ` + regexp.QuoteMeta(e.bin) + ` mcp$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("doctor output lacks %s:\n%s", re, out)
		}
	}
	if strings.Count(out, "\n    {") < 5 {
		t.Errorf("too few JSON snippets:\n%s", out)
	}
}

// doctor recognises entries that reach serve's /mcp over HTTP — by URL with a
// headers map, or through mcp-remote with --header — and checks them against a
// running serve: reachable, token accepted; a wrong or missing token, or a URL
// nothing answers, is a failure with the fix. It prints the HTTP snippets.
func TestDoctorChecksHTTPEntries(t *testing.T) {
	e := newCLIEnv(t)
	const token = "doctor-token-0123456789abcdef0123456789abcdef"
	base := e.serveProcess(t, token)
	write := func(rel, body string) {
		p := filepath.Join(e.home, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".cursor/mcp.json", `{"mcpServers":{"openhuman":{"url":"`+base+`/mcp","headers":{"Authorization":"Bearer `+token+`"}}}}`)
	write(".config/Claude/claude_desktop_config.json", `{"mcpServers":{"openhuman":{"command":"npx","args":["-y","mcp-remote","`+base+`/mcp","--header","Authorization:${AUTH_HEADER}"],"env":{"AUTH_HEADER":"Bearer `+token+`"}}}}`)
	write(".codeium/windsurf/mcp_config.json", `{"mcpServers":{"openhuman":{"serverUrl":"`+base+`/mcp","headers":{"Authorization":"Bearer wrong"}}}}`)
	write(".config/Code/User/mcp.json", `{"servers":{"openhuman":{"type":"http","url":"`+base+`/mcp"}}}`)
	write(".claude.json", `{"mcpServers":{"openhuman":{"command":"npx","args":["mcp-remote","http://127.0.0.1:1/mcp","--header","Authorization: Bearer x"]}}}`)

	out, _, code := e.run("", "doctor")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, re := range []string{
		`(?m)^ok +cursor .*by URL\): answers initialize with the token`,
		`(?m)^ok +claude-desktop .*through mcp-remote\): answers initialize with the token`,
		`(?m)^FAIL +windsurf .*the token is not accepted \(401\)`,
		`(?m)^FAIL +vs-code .*sends no Authorization header`,
		`(?m)^FAIL +claude-code .*not reachable`,
		`(?m)^ +fix: start it with ` + "`openhuman-core serve`",
		`(?m)"mcp-remote", "http://127\.0\.0\.1:7788/mcp", "--header", "Authorization:\$\{AUTH_HEADER\}"`,
		`(?m)claude mcp add --transport http openhuman http://127\.0\.0\.1:7788/mcp --header "Authorization: Bearer \$\(cat `,
		`(?m)"headers": \{ "Authorization": "Bearer <token from `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("doctor output lacks %s:\n%s", re, out)
		}
	}
}
