package main

import (
	"strings"
	"testing"
)

// TestListTextEscapesControls (finding 8): module-supplied names and errors in
// `tools list` are printed with their control characters escaped.
func TestListTextEscapesControls(t *testing.T) {
	rep := listReport{Schema: ListSchema, ToolsDir: "/t", Policy: "/p", Modules: []listEntry{{
		Tools: []string{"ok\x1b[2Jfake"}, Origin: "directory", Module: "evil\x1b[H.wasm", SHA256: "ab",
		Grants: []string{}, State: "refused", Error: "refused evil: tool \x1b[1Aname\nsecond line",
	}}}
	var b strings.Builder
	writeListText(&b, rep)
	out := b.String()
	if strings.Contains(out, "\x1b") {
		t.Errorf("tools list prints an escape sequence raw:\n%q", out)
	}
	for _, want := range []string{`ok\u001b[2Jfake`, `evil\u001b[H.wasm`, `tool \u001b[1Aname`, "\n    second line"} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
}
