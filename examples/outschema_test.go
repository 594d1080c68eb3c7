package examples

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/mcpserver"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

// TestThirdPartyResultBreaksOutputSchema: examples/c-hello re-packed with an
// output_schema its result breaks ("sources" declared a string; the module
// returns a number), served by a real runtime to the official go-sdk client.
// The client gets an isError result naming the tool, the JSON path and what the
// author must fix — not the SDK's "-32602 Structured content does not match the
// tool's output schema", which reads like a bad argument — and the audit log
// records it.
func TestThirdPartyResultBreaksOutputSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.Mkdir(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(filepath.Join("c-hello", "hello.toml"))
	if err != nil {
		t.Fatal(err)
	}
	const good, bad = `"sources":{"type":"integer"}`, `"sources":{"type":"string"}`
	if !strings.Contains(string(man), good) {
		t.Fatalf("c-hello/hello.toml no longer declares %s", good)
	}
	man = []byte(strings.Replace(string(man), good, bad, 1))
	wasm, err := os.ReadFile(filepath.Join("c-hello", "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := wasmbin.SetCustomSection(wasm, policy.ManifestSection, man)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "hello.wasm"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte("[[module]]\nfile = \"hello.wasm\"\nsha256 = \""+sum(mod)+"\"\ngrant = [\"memory.read\"]\n"), "policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	host, err := hostileHost(ctx, t, dir, tools, p, filepath.Join(dir, "cache"), "")
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	al := audit.New(audit.Options{Dir: filepath.Join(dir, "audit"), Logger: quiet})
	srv, err := mcpserver.New(mcpserver.Options{Dispatcher: host, Audit: al, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, c2sR, s2cW); s2cW.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-inspector", Version: "1"}, nil) // a client served the spec's names
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "c.hello", Arguments: map[string]any{"name": "Ada"}})
	cs.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("Serve did not return after the client closed")
	}
	if err != nil {
		t.Fatalf("the client rejected the call instead of reading an error result: %v", err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("result is not an error result: %+v", res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{"c.hello", "at $.sources", `want "string"`, "the author of hello.wasm must make the result match the output_schema"} {
		if !strings.Contains(text, want) {
			t.Errorf("error text lacks %q: %s", want, text)
		}
	}
	if err := al.Close(); err != nil {
		t.Fatal(err)
	}
	logged, err := os.ReadFile(filepath.Join(dir, "audit", audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), `"tool":"c.hello"`) || !strings.Contains(string(logged), "at $.sources") {
		t.Errorf("the audit log does not record the violation:\n%s", logged)
	}
}
