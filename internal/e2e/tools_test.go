package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/toolname"
)

// connect starts `openhuman-core mcp` with the go-sdk client's CommandTransport.
func connect(t *testing.T, e *env, clientName string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := e.command(ctx, "mcp")
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		cancel()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return cs
}

type toolSchemas map[string]*jsonschema.Resolved

func outputSchemas(t *testing.T, cs *mcp.ClientSession) toolSchemas {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := toolSchemas{}
	for _, tl := range lt.Tools {
		b, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s outputSchema does not parse: %v", tl.Name, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s outputSchema does not resolve: %v", tl.Name, err)
		}
		out[toolname.Portable(tl.Name)] = rs // a session may list either spelling
	}
	return out
}

// callOK calls a tool that must succeed and returns its structuredContent after
// checking it against the tool's outputSchema and the text block.
func callOK(t *testing.T, cs *mcp.ClientSession, schemas toolSchemas, tool, args string) map[string]any {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	if res.IsError {
		t.Fatalf("%s %s: isError %v", tool, args, res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("%s: structuredContent is not an object: %s", tool, b)
	}
	if err := schemas[toolname.Portable(tool)].Validate(sc); err != nil {
		t.Errorf("%s: structuredContent does not validate against outputSchema: %v\n%s", tool, err, b)
	}
	// The JSON as text, then a resource_link per hit (search, recall, browse).
	for _, c := range res.Content[min(1, len(res.Content)):] {
		if l, ok := c.(*mcp.ResourceLink); !ok || !strings.HasPrefix(l.URI, "memory://chunk/") {
			t.Fatalf("%s: content block %T %+v after the text, want only resource links to chunks", tool, c, c)
		}
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content block", tool)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil || !reflect.DeepEqual(fromText, sc) {
		t.Errorf("%s: text block is not the same JSON as structuredContent (%v)", tool, err)
	}
	if strings.Contains(text, "\n") {
		t.Errorf("%s: text block is not compact", tool)
	}
	return sc
}

func callErr(t *testing.T, cs *mcp.ClientSession, tool, args string) string {
	t.Helper()
	var a any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		t.Fatalf("%s %s: JSON-RPC error %v, want an isError result", tool, args, err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s %s: not an error result: %+v", tool, args, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestToolsAgainstIngestedStore(t *testing.T) {
	e := storeEnv(t)
	cs := connect(t, e, "E2E Tools")
	schemas := outputSchemas(t, cs)
	if len(schemas) != 6 {
		t.Fatalf("%d tools, want 6", len(schemas))
	}

	sc := callOK(t, cs, schemas, "memory.search", `{"query":"phoenix launch","k":5}`)
	hits := sc["chunks"].([]any)
	if len(hits) == 0 || len(hits) > 5 {
		t.Fatalf("memory.search returned %d hits, want 1..5", len(hits))
	}
	first := hits[0].(map[string]any)
	for _, k := range []string{"id", "source_kind", "source_id", "timestamp_ms", "snippet"} {
		if _, ok := first[k]; !ok {
			t.Errorf("search hit lacks %s: %v", k, first)
		}
	}
	if !strings.Contains(strings.ToLower(fmt.Sprint(first["snippet"])), "phoenix") {
		t.Errorf("top hit snippet does not mention phoenix: %v", first["snippet"])
	}

	sc = callOK(t, cs, schemas, "memory.recall", `{"query":"the product debut was postponed","k":5}`)
	if sc["mode"] == nil || len(sc["chunks"].([]any)) > 5 {
		t.Errorf("memory.recall: %v", sc)
	}

	sc = callOK(t, cs, schemas, "tree.read_chunk", fmt.Sprintf(`{"chunk_id":%q}`, first["id"]))
	chunk := sc["chunk"].(map[string]any)
	if chunk["id"] != first["id"] || len(fmt.Sprint(chunk["text"])) < len(fmt.Sprint(first["snippet"]))/2 {
		t.Errorf("tree.read_chunk: %v", chunk)
	}

	sc = callOK(t, cs, schemas, "tree.browse", `{"k":3,"source_kinds":["document","email","chat"]}`)
	if n := len(sc["chunks"].([]any)); n == 0 || n > 3 || sc["total"].(float64) < float64(n) {
		t.Errorf("tree.browse: %d chunks, total %v", n, sc["total"])
	}
	sc = callOK(t, cs, schemas, "tree.top_entities", `{"k":5}`)
	if n := len(sc["entities"].([]any)); n == 0 || n > 5 {
		t.Errorf("tree.top_entities: %d entities", n)
	}
	sc = callOK(t, cs, schemas, "tree.list_sources", `{}`)
	if len(sc["sources"].([]any)) == 0 {
		t.Error("tree.list_sources: no sources")
	}

	invalid := []struct{ tool, args, want string }{
		{"memory.search", `{"query":"x","k":0}`, "argument `k` must be greater than zero"},
		{"memory.search", `{"query":"x","k":51}`, "argument `k` must not exceed 50 (got 51)"},
		{"memory.search", `{"query":"x","limit":5}`, "unexpected argument `limit`"},
		{"memory.search", `{"query":5}`, "argument `query` must be a string"},
		{"memory.search", `{"query":"   "}`, "argument `query` must not be empty"},
		{"memory.search", `{}`, "missing required argument `query`"},
		{"memory.recall", `{"query":"x","k":"ten"}`, "argument `k` must be a positive integer"},
		{"tree.read_chunk", `{"chunk_id":"x","unused":1}`, "unexpected argument `unused`"},
		{"tree.browse", `{"since_ms":"yesterday"}`, "argument `since_ms` must be milliseconds since 1970-01-01 UTC or a date: RFC 3339 (\"2015-07-01T09:30:00Z\"), \"YYYY-MM-DD\" or \"YYYY-MM\" (got \"yesterday\")"},
		{"tree.browse", `{"source_kinds":"email"}`, "argument `source_kinds` must be an array of strings, got string"},
		{"tree.top_entities", `{"kind":"  "}`, "argument `kind` must not be empty when provided"},
		{"tree.list_sources", `{"limit":3}`, "unexpected argument `limit`"},
	}
	for _, c := range invalid {
		if got := callErr(t, cs, c.tool, c.args); got != c.want {
			t.Errorf("%s %s:\n got %q\nwant %q", c.tool, c.args, got, c.want)
		}
	}
	if got := callErr(t, cs, "tree.read_chunk", `{"chunk_id":"00000000000000000000000000000000"}`); !strings.Contains(got, "00000000000000000000000000000000") {
		t.Errorf("unknown chunk: %q", got)
	}

	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.nope", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool: %v, want JSON-RPC error -32602", err)
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Errorf("ping after errors: %v", err)
	}
}

func TestEmptyStoreGivesHint(t *testing.T) {
	e := emptyStoreEnv(t) // no store at all: a newcomer's first run
	cs := connect(t, e, "newcomer")
	schemas := outputSchemas(t, cs)
	for tool, args := range map[string]string{"memory.search": `{"query":"anything"}`, "tree.list_sources": `{}`, "tree.browse": `{}`} {
		sc := callOK(t, cs, schemas, tool, args)
		if h, _ := sc["hint"].(string); !strings.Contains(h, "openhuman-core ingest") {
			t.Errorf("%s on a missing store: hint %q", tool, h)
		}
	}
}
