package mcpserver

import "testing"

func TestLabelFor(t *testing.T) {
	cases := map[string]string{
		"Claude Desktop":                    "mcp:claude-desktop",
		"Cursor":                            "mcp:cursor",
		"Windsurf":                          "mcp:windsurf",
		"  Zed: Nightly  ":                  "mcp:zed-nightly",
		"VS-Code__Insiders":                 "mcp:vs-code-insiders",
		"会议记录":                              "mcp",
		"":                                  "mcp",
		"   ":                               "mcp",
		"--!!--":                            "mcp",
		"Zed 会议 2":                          "mcp:zed-2",
		"ÉCLAIR client":                     "mcp:clair-client",
		"a/b\\c..d":                         "mcp:a-b-c-d",
		"\tTab\nNewline\x00x":               "mcp:tab-newline-x",
		"claude-ai (via mcp-remote 0.15.1)": "mcp:claude-ai",
		"claude-ai (VIA mcp-remote 0.1.37)": "mcp:claude-ai",
		"Cursor (beta)":                     "mcp:cursor-beta",
		"(via mcp-remote 1)":                "mcp:via-mcp-remote-1",
	}
	for in, want := range cases {
		if got := LabelFor(in); got != want {
			t.Errorf("LabelFor(%q) = %q, want %q", in, got, want)
		}
	}
	if got := sessionLabel(nil); got != BareLabel {
		t.Errorf("sessionLabel(nil) = %q", got)
	}
}

func TestSplitBridge(t *testing.T) {
	for in, want := range map[string][2]string{
		"claude-ai (via mcp-remote 0.15.1)":   {"claude-ai", "mcp-remote 0.15.1"},
		"codex-mcp-client (via supergateway)": {"codex-mcp-client", "supergateway"},
		"claude-ai":                           {"claude-ai", ""},
		"Cursor (beta)":                       {"Cursor (beta)", ""},
		"x (via )":                            {"x (via )", ""},
	} {
		c, b := SplitBridge(in)
		if c != want[0] || b != want[1] {
			t.Errorf("SplitBridge(%q) = %q, %q; want %q, %q", in, c, b, want[0], want[1])
		}
	}
}
