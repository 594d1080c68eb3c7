package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

// fixtureStore writes a small store with an e-mail thread, a chat channel and a
// document, and returns it opened read-only.
func fixtureStore(t testing.TB) *memtree.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chunks.db")
	w, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := int64(1767600000000)
	inputs := []memtree.SourceInput{
		{Kind: memtree.KindEmail, SourceID: "email:budget-1@corp.example", Title: "Q3 budget review", Provider: "eml", Messages: []memtree.MessageInput{
			{Ref: "budget-1@corp.example", Author: "Alice Moreau", AuthorAddr: "alice@corp.example", To: []string{"me@corp.example"}, Subject: "Q3 budget review", TimestampMS: base, Text: "The quarterly budget review is on Thursday. Please bring the hiring plan and the Phoenix launch costs."},
			{Ref: "budget-2@corp.example", Author: "Bob Lindqvist", AuthorAddr: "bob@corp.example", Subject: "Re: Q3 budget review", TimestampMS: base + 3600e3, Text: "I will bring the invoice totals from Halvorsen Logistics and the travel costs for Lisbon."},
		}},
		{Kind: memtree.KindChat, SourceID: "slack:#phoenix", Title: "#phoenix", Provider: "slack", Messages: []memtree.MessageInput{
			{Ref: "slack:phoenix:1", Author: "Carol", AuthorAddr: "@carol", TimestampMS: base + 7200e3, Text: "Phoenix launch moved to Monday; the outage post-mortem is done. #launch"},
			{Ref: "slack:phoenix:2", Author: "Dan", AuthorAddr: "@dan", TimestampMS: base + 7300e3, Text: "Budget for the launch party approved by @alice."},
		}},
		{Kind: memtree.KindDocument, SourceID: "doc:notes/car.md", Title: "Car repair", Provider: "markdown", Messages: []memtree.MessageInput{
			{Ref: "notes/car.md", TimestampMS: base + 9000e3, Text: "# Car repair\n\nThe brake pads were replaced at the garage. The bill was 420 euros.\n\nInsurance claim filed for the dent."},
		}},
	}
	for _, in := range inputs {
		if _, err := w.Ingest(ctx, in); err != nil {
			t.Fatalf("ingest %s: %v", in.SourceID, err)
		}
	}
	w.Close()
	r, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

type fakeSearxng struct{ body string }

func (f fakeSearxng) Search(ctx context.Context, req abi.SearxngRequest) (*abi.SearxngReply, error) {
	return &abi.SearxngReply{Status: 200, MaxResults: max(req.MaxResults, 10), ContentType: "application/json", Body: f.body}, nil
}

func firstPartyBuiltins(t testing.TB) []BuiltinModule {
	t.Helper()
	mods, err := toolswasm.Modules()
	if err != nil {
		t.Fatalf("first-party modules: %v", err)
	}
	out := make([]BuiltinModule, 0, len(mods))
	for _, m := range mods {
		out = append(out, BuiltinModule{Name: m.Name + ".wasm", SHA256: m.SHA256, Wasm: m.Wasm})
	}
	return out
}

func ids(hits []abi.ChunkHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func TestFirstPartyToolsMatchReadAPI(t *testing.T) {
	store := fixtureStore(t)
	body := `{"query":"phoenix","results":[{"url":"https://a.example/x","title":"Phoenix","content":"rises","engine":"ddg"}]}`
	h, _ := newHost(t, Options{Reader: memory.Default(store), Builtins: firstPartyBuiltins(t), SearXNG: fakeSearxng{body: body}, SearXNGEnabled: true})
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range h.Tools() {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "memory.search,memory.recall,tree.read_chunk,tree.browse,tree.top_entities,tree.list_sources,searxng_search" {
		t.Fatalf("catalogue = %s", got)
	}
	compareFirstParty(t, h, memory.Default(store), []string{"budget", "launch", "brake"})

	var web abi.SearxngResult
	mustResult(t, h, "searxng_search", `{"query":"phoenix"}`, &web)
	if web.Query != "phoenix" || len(web.Results) != 1 || web.Results[0].URL != "https://a.example/x" || web.Results[0].Snippet != "rises" {
		t.Errorf("searxng_search = %+v", web)
	}

	// Argument errors carry the spec's messages.
	for args, want := range map[string]string{
		`{"query":"x","k":0}`:  "argument `k` must be greater than zero",
		`{"query":"x","k":51}`: "argument `k` must not exceed 50 (got 51)",
		`{"query":"x","q":1}`:  "unexpected argument `q`",
		`{}`:                   "missing required argument `query`",
		`{"query":"  "}`:       "argument `query` must not be empty",
	} {
		out, err := call(t, h, "memory.search", args)
		if err != nil || out.ToolError == nil || out.ToolError.Code != abi.CodeInvalidParams || !strings.Contains(out.ToolError.Message, want) {
			t.Errorf("memory.search %s: %+v %v, want %q", args, out, err, want)
		}
	}
}

// compareFirstParty calls each memory tool through the sandbox and the read API
// directly and checks they agree.
func compareFirstParty(t *testing.T, h *Host, store Reader, queries []string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range queries {
		args, _ := json.Marshal(map[string]any{"query": q, "k": 5})
		var got abi.SearchResult
		mustResult(t, h, "memory.search", string(args), &got)
		want, err := store.Search(ctx, abi.SearchRequest{Query: q, K: 5})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(got.Chunks)) != fmt.Sprint(ids(want.Chunks)) || len(want.Chunks) == 0 {
			t.Errorf("memory.search %q: sandbox %v, read API %v", q, ids(got.Chunks), ids(want.Chunks))
		}
		for i, c := range got.Chunks {
			if c.SourceKind == "" || c.SourceID == "" || c.TimestampMS == 0 || c.Snippet == "" || c.Snippet != want.Chunks[i].Snippet {
				t.Errorf("memory.search hit lacks citation fields: %+v", c)
			}
		}
		var rec abi.RecallResult
		mustResult(t, h, "memory.recall", string(args), &rec)
		wantRec, err := store.Recall(ctx, abi.RecallRequest{Query: q, K: 5})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(rec.Chunks)) != fmt.Sprint(ids(wantRec.Chunks)) || rec.Mode != wantRec.Mode {
			t.Errorf("memory.recall %q: sandbox %v %s, read API %v %s", q, ids(rec.Chunks), rec.Mode, ids(wantRec.Chunks), wantRec.Mode)
		}
		if len(got.Chunks) > 0 {
			var chunk abi.ChunkResult
			mustResult(t, h, "tree.read_chunk", `{"chunk_id":"`+got.Chunks[0].ID+`"}`, &chunk)
			wantChunk, err := store.GetChunk(ctx, abi.ChunkGetRequest{ID: got.Chunks[0].ID})
			if err != nil {
				t.Fatal(err)
			}
			if chunk.Chunk.Text != wantChunk.Chunk.Text || chunk.Chunk.Text == "" {
				t.Errorf("tree.read_chunk: %q vs %q", chunk.Chunk.Text, wantChunk.Chunk.Text)
			}
		}
	}
	out, err := call(t, h, "tree.read_chunk", `{"chunk_id":"`+strings.Repeat("0", 32)+`"}`)
	if err != nil || out.ToolError == nil || out.ToolError.Code != abi.CodeNotFound {
		t.Errorf("tree.read_chunk unknown id: %+v %v", out, err)
	}
	var list abi.ListResult
	mustResult(t, h, "tree.browse", `{"k":5}`, &list)
	wantList, err := store.ListChunks(ctx, abi.ChunksListRequest{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != wantList.Total || fmt.Sprint(ids(list.Chunks)) != fmt.Sprint(ids(wantList.Chunks)) {
		t.Errorf("tree.browse: %d %v vs %d %v", list.Total, ids(list.Chunks), wantList.Total, ids(wantList.Chunks))
	}
	var ents abi.EntitiesResult
	mustResult(t, h, "tree.top_entities", `{"k":5}`, &ents)
	wantEnts, err := store.TopEntities(ctx, abi.EntitiesTopRequest{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ents.Entities) != fmt.Sprint(wantEnts.Entities) || len(ents.Entities) == 0 {
		t.Errorf("tree.top_entities: %v vs %v", ents.Entities, wantEnts.Entities)
	}
	var srcs abi.SourcesResult
	mustResult(t, h, "tree.list_sources", `{}`, &srcs)
	wantSrcs, err := store.ListSources(ctx, abi.SourcesListRequest{K: 10}) // the tool's default page
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(srcs.Sources) != fmt.Sprint(wantSrcs.Sources) || len(srcs.Sources) == 0 {
		t.Errorf("tree.list_sources: %v vs %v", srcs.Sources, wantSrcs.Sources)
	}
}

// corpusStore ingests the generated corpus from ../shared/data into a temp store,
// or returns nil when the generator is not present.
func corpusStore(t testing.TB) *memtree.Store {
	t.Helper()
	gen := filepath.Join("..", "..", "shared", "data", "gencorpus")
	if _, err := os.Stat(gen); err != nil {
		return nil
	}
	out := filepath.Join(t.TempDir(), "corpus")
	cmd := exec.Command("go", "run", ".", "-out", out, "-eval=false")
	cmd.Dir = gen
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generating the corpus: %v\n%s", err, b)
	}
	path := filepath.Join(t.TempDir(), "chunks.db")
	w, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(out)
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(out, e.Name()))
	}
	if _, err := ingest.Run(context.Background(), w, paths, ingest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		t.Fatalf("ingesting the corpus: %v", err)
	}
	w.Close()
	r, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestFirstPartyToolsOnCorpus repeats the comparison on the generated corpus (a
// quality/scale check: it runs only where ../shared/data exists).
func TestFirstPartyToolsOnCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus ingest skipped in -short mode")
	}
	store := corpusStore(t)
	if store == nil {
		t.Skip("../shared/data/gencorpus not present: corpus comparison not run (the fixture test covers the tools)")
	}
	h, _ := newHost(t, Options{Reader: memory.Default(store), Builtins: firstPartyBuiltins(t)})
	compareFirstParty(t, h, memory.Default(store), []string{"phoenix launch", "brake repair", "invoice Halvorsen", "book club", "Lisbon trip"})
}
