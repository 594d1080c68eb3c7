package mcpserver

import "testing"

func TestLabelFor(t *testing.T) {
	cases := map[string]string{
		"Claude Desktop":      "mcp:claude-desktop",
		"Cursor":              "mcp:cursor",
		"Windsurf":            "mcp:windsurf",
		"  Zed: Nightly  ":    "mcp:zed-nightly",
		"VS-Code__Insiders":   "mcp:vs-code-insiders",
		"会议记录":                "mcp",
		"":                    "mcp",
		"   ":                 "mcp",
		"--!!--":              "mcp",
		"Zed 会议 2":            "mcp:zed-2",
		"ÉCLAIR client":       "mcp:clair-client",
		"a/b\\c..d":           "mcp:a-b-c-d",
		"\tTab\nNewline\x00x": "mcp:tab-newline-x",
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
