package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sources and chunks as MCP resources over stdio: resources/list pages the
// sources, a source reads back its chunks with their links, a chunk its text,
// an unknown one is -32002, and every read is audited under the tool it ran.
func TestResourcesOverStdio(t *testing.T) {
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	cs := e.mcpSession(t, "resource-reader")
	ctx := context.Background()
	if cs.InitializeResult().Capabilities.Resources == nil {
		t.Fatal("capabilities.resources not declared")
	}
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) < 3 {
		t.Fatalf("resources/list: %d resources", len(list.Resources))
	}
	var mail *mcp.Resource
	for _, r := range list.Resources {
		if !strings.HasPrefix(r.URI, "memory://source/") || r.Name == "" || r.MIMEType != "text/plain" {
			t.Errorf("resource %+v", r)
		}
		if strings.Contains(r.Description, "email") {
			mail = r
		}
	}
	if mail == nil {
		t.Fatalf("no mail thread among %+v", list.Resources)
	}
	src, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mail.URI})
	if err != nil {
		t.Fatal(err)
	}
	text := src.Contents[0].Text
	if !strings.Contains(text, "memory://chunk/") || !strings.Contains(text, "chunks: ") {
		t.Fatalf("source %s read as:\n%s", mail.URI, text)
	}
	chunkURI := text[strings.Index(text, "memory://chunk/"):]
	chunkURI = chunkURI[:strings.IndexAny(chunkURI, "\n )")]
	chunk, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: chunkURI})
	if err != nil {
		t.Fatal(err)
	}
	if c := chunk.Contents[0]; c.URI != chunkURI || !strings.Contains(c.Text, "time: ") || !strings.Contains(c.Text, "source: email") || !strings.Contains(c.Text, "people: ") {
		t.Errorf("chunk %s read as:\n%s", chunkURI, c.Text)
	}
	for _, uri := range []string{"memory://chunk/" + strings.Repeat("0", 32), "memory://source/slack:%23nowhere", "file:///etc/passwd", "memory://chunk/%zz"} {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != -32002 {
			t.Errorf("read %s: %v, want -32002 resource not found", uri, err)
		}
	}

	// Each hit of a search carries a resource_link to its chunk.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": "brake quote", "k": 3}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	links := 0
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok && strings.HasPrefix(l.URI, "memory://chunk/") {
			links++
		}
	}
	if links == 0 {
		t.Errorf("no resource_link in %+v", res.Content)
	}

	// Every read went through a tool and is audited under the session's label.
	cs.Close()
	data, err := os.ReadFile(filepath.Join(e.ohome, "workspace", "audit", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var en struct{ Session, Tool string }
		if json.Unmarshal([]byte(l), &en) == nil && en.Session == "mcp:resource-reader" {
			per[en.Tool]++
		}
	}
	if per["tree.list_sources"] != 1 || per["tree.browse"] < 2 || per["tree.read_chunk"] < 2 {
		t.Errorf("audit lines per tool = %v", per)
	}
}

// A client on a protocol before resource links (2025-03-26) is not sent them.
func TestNoResourceLinksForOlderProtocols(t *testing.T) {
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"brake quote","k":3}}}
`
	out, errOut, code := e.run(in, "mcp")
	if code != 0 {
		t.Fatalf("mcp: exit %d %s", code, errOut)
	}
	if !strings.Contains(out, `"id":2,"result"`) || strings.Contains(out, "resource_link") {
		t.Errorf("2025-03-26 session:\n%s", out)
	}
}
