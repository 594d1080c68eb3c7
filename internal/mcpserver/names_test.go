package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// A tool whose portable name another tool already has, or whose portable name is
// longer than 64 characters, is not served (to any session) and the log says why.
func TestPortableCollisionsAreNotServed(t *testing.T) {
	long := "x." + strings.Repeat("y", 63)
	f := newFake("memory_search", long)
	s, _, _, logs := newServer(t, f)
	for _, client := range []string{"claude-ai", "smoke"} {
		cs := connectClient(t, s, client, nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if len(names) != 6 || slices.Contains(names, long) || slices.Contains(names, "x_"+strings.Repeat("y", 63)) {
			t.Errorf("%s is listed %v", client, names)
		}
	}
	if !strings.Contains(logs.String(), `tool=memory_search err="its portable name \"memory_search\" is also that of \"memory.search\"`) || !strings.Contains(logs.String(), "64") {
		t.Errorf("the log does not say why:\n%s", logs.String())
	}
}

func TestClientTable(t *testing.T) {
	for name, want := range map[string]bool{
		"claude-ai": true, "Claude AI": true, "cursor-vscode": true, "codex-mcp-client": true, "Zed": true,
		"claude-ai (via mcp-remote 0.15.1)": true, "Cline": true, "continue-client": true, "@librechat/api-client": true,
		"some-agent-nobody-listed": true, "": true, "goose": true,
		"smoke": false, "claude-code": false, "Visual Studio Code": false, "gemini-cli-mcp-client": false, "mcp-inspector": false,
		"claude-code (via mcp-remote 0.1.37)": false,
	} {
		if got := PortableNamesFor("auto", name); got != want {
			t.Errorf("auto, %q: portable = %v, want %v", name, got, want)
		}
	}
	if PortableNamesFor("spec", "claude-ai") || !PortableNamesFor("portable", "smoke") {
		t.Error("spec/portable settings do not override the table")
	}
	for _, c := range Clients {
		if c.Why == "" || len(c.Match) == 0 {
			t.Errorf("%s has no evidence or match", c.Name)
		}
	}
}
