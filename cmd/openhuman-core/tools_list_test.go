package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestToolsList runs `tools list --json` over the embedded modules and a tools
// directory holding one pinned C tool and one module the policy does not pin.
func TestToolsList(t *testing.T) {
	home := t.TempDir()
	tools := filepath.Join(home, "tools")
	os.MkdirAll(tools, 0o755)
	hello, err := os.ReadFile("../../examples/c-hello/hello.wasm")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := os.ReadFile("../../examples/hostile/path_open.wasm")
	os.WriteFile(filepath.Join(tools, "hello.wasm"), hello, 0o644)
	os.WriteFile(filepath.Join(tools, "path_open.wasm"), other, 0o644)
	os.WriteFile(filepath.Join(home, "policy.toml"), []byte(fmt.Sprintf("[[module]]\nfile = \"hello.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n", hexSum(hello))), 0o644)
	t.Setenv("OPENHUMAN_HOME", home)
	t.Setenv("OPENHUMAN_WORKSPACE", filepath.Join(home, "workspace"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(os.TempDir(), "openhuman-cmd-test-cache"))

	var out bytes.Buffer
	err = runList(context.Background(), &out, slog.New(slog.NewTextHandler(io.Discard, nil)), true, 3*time.Minute)
	if exitCodeOf(err) != 1 {
		t.Errorf("exit %d (%v), want 1 because path_open.wasm is refused", exitCodeOf(err), err)
	}
	var rep listReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Schema != ListSchema || rep.ToolsDir != tools {
		t.Errorf("header: %+v", rep)
	}
	byModule := map[string]listEntry{}
	for _, e := range rep.Modules {
		byModule[e.Module] = e
	}
	if e := byModule["memory.wasm"]; e.Origin != "builtin" || e.State != "ready" || !e.ServedByThis || len(e.Grants) != 1 || e.Limits.TimeoutMS == 0 ||
		strings.Join(e.Tools, ",") != "memory.search,memory.recall,tree.read_chunk,tree.browse,tree.top_entities,tree.list_sources" {
		t.Errorf("memory: %+v", e)
	}
	if len(rep.Modules) != 4 {
		t.Errorf("%d modules listed, want memory, searxng_search, hello and path_open", len(rep.Modules))
	}
	if e := byModule["hello.wasm"]; e.Origin != "directory" || e.State != "ready" || e.SHA256 != hexSum(hello) || e.File != filepath.Join(tools, "hello.wasm") || len(e.Tools) != 1 || e.Tools[0] != "c.hello" || e.Limits.TimeoutMS != 2000 {
		t.Errorf("hello: %+v", e)
	}
	if e := byModule["path_open.wasm"]; e.State != "refused" || e.ServedByThis || e.Error == "" {
		t.Errorf("path_open: %+v", e)
	}
	if e := byModule["searxng_search.wasm"]; e.State != "disabled" {
		t.Errorf("searxng_search: %+v", e)
	}
	var text bytes.Buffer
	writeListText(&text, rep)
	if !bytes.Contains(text.Bytes(), []byte("c.hello")) || !bytes.Contains(text.Bytes(), []byte("not served:")) || !bytes.Contains(text.Bytes(), []byte("memory.wasm")) {
		t.Errorf("text:\n%s", text.String())
	}
	if !bytes.Contains(text.Bytes(), []byte("\ntree.list_sources ")) || !bytes.Contains(text.Bytes(), []byte("↳ memory.wasm")) {
		t.Errorf("text does not list each tool of the memory module on its own line:\n%s", text.String())
	}
}
