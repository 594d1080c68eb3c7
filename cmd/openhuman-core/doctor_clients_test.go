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
