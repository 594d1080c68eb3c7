package builtin

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// store is an in-memory memory.read capability: it records each request and answers
// from the fixture fields (or with err).
type store struct {
	err      error
	raw      json.RawMessage // when set, every call answers with these bytes
	search   *abi.SearchResult
	recall   *abi.RecallResult
	chunks   map[string]abi.Chunk
	list     *abi.ListResult
	entities *abi.EntitiesResult
	sources  *abi.SourcesResult
	lastReq  any
}

func (s *store) Search(r abi.SearchRequest) (json.RawMessage, error) {
	s.lastReq = r
	return s.answer(s.search)
}
func (s *store) Recall(r abi.RecallRequest) (json.RawMessage, error) {
	s.lastReq = r
	return s.answer(s.recall)
}
func (s *store) GetChunk(r abi.ChunkGetRequest) (json.RawMessage, error) {
	s.lastReq = r
	if s.err != nil || s.raw != nil {
		return s.answer(nil)
	}
	c, ok := s.chunks[r.ID]
	if !ok {
		return nil, &abi.Error{Code: abi.CodeNotFound, Message: "chunk " + r.ID + " not found"}
	}
	return s.answer(&abi.ChunkResult{Chunk: c})
}

// answer encodes v as the host does (encoding/json of the abi type), unless the
// store is set to fail or to answer raw bytes.
func (s *store) answer(v any) (json.RawMessage, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.raw != nil {
		return s.raw, nil
	}
	return json.Marshal(v)
}

// dec decodes a tool's raw result into T, failing the test on an error.
func dec[T any](t *testing.T, raw json.RawMessage, err error) *T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return &v
}
func (s *store) ListChunks(r abi.ChunksListRequest) (json.RawMessage, error) {
	s.lastReq = r
	return s.answer(s.list)
}
func (s *store) TopEntities(r abi.EntitiesTopRequest) (json.RawMessage, error) {
	s.lastReq = r
	return s.answer(s.entities)
}
func (s *store) ListSources(r abi.SourcesListRequest) (json.RawMessage, error) {
	s.lastReq = r
	return s.answer(s.sources)
}

var hit = abi.ChunkHit{
	ID: "0123456789abcdef0123456789abcdef", SourceKind: "email", SourceID: "gmail:alice@example.com|bob@example.com",
	SourceRef: "<m1@example.com>", Title: "Phoenix launch", TimestampMS: 1767225600000, Snippet: "the [phoenix] launch", Score: 3.5, Seq: 0,
}

// cited is hit as search and recall return it: with its cited messages.
var cited = func() abi.ChunkHit {
	h := hit
	h.SourceRefs = []string{"<m1@example.com>", "<m2@example.com>"}
	h.Messages = []abi.HitMessage{
		{Ref: "<m1@example.com>", Author: "Alice <alice@example.com>", Time: "2026-01-01T00:00:00Z", TimePrecision: abi.PrecisionMS, Text: "The phoenix launch is on."},
		{Ref: "<m2@example.com>", Author: "Bob <bob@example.com>", Time: "2026-01-02T00:00:00Z", TimePrecision: abi.PrecisionDay, Text: "Great, see…", Truncated: true},
	}
	return h
}()

// outputSchema returns the resolved output schema of tool as declared in the
// tool.toml of the module that serves it (builtin.Modules).
func outputSchema(t *testing.T, tool string) *jsonschema.Resolved {
	t.Helper()
	folder := ""
	for _, m := range Modules {
		if slices.Contains(m.Tools, tool) {
			folder = m.Folder
		}
	}
	if folder == "" {
		t.Fatalf("no module in Modules serves %s", tool)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "tools-wasm", folder, "tool.toml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := policy.ParseManifest(data, folder+"/tool.toml")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(m.Tools, func(s policy.ToolSpec) bool { return s.Name == tool })
	if i < 0 {
		t.Fatalf("%s/tool.toml declares %+v, not the tool %s", folder, m.Tools, tool)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(m.Tools[i].OutputSchema, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// conforms checks that v, encoded as the module would encode it, satisfies the
// tool's output schema.
func conforms(t *testing.T, tool string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		t.Fatal(err)
	}
	if err := outputSchema(t, tool).Validate(inst); err != nil {
		t.Fatalf("%s result %s does not match its output_schema: %v", tool, b, err)
	}
}

func wantErr(t *testing.T, err error, code, msg string) {
	t.Helper()
	var e *abi.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want %s %q", err, err, code, msg)
	}
	if e.Code != code || e.Message != msg {
		t.Fatalf("error = %s %q, want %s %q", e.Code, e.Message, code, msg)
	}
}

func TestMemorySearch(t *testing.T) {
	s := &store{search: &abi.SearchResult{Chunks: []abi.ChunkHit{cited}, MessageTextMaxChars: 800, Omitted: 1}}
	raw, err := MemorySearch(json.RawMessage(`{"query":"  phoenix  "}`), s)
	res := dec[abi.SearchResult](t, raw, err)
	if s.lastReq != (abi.SearchRequest{Query: "phoenix", K: 10}) {
		t.Fatalf("host request = %+v, want trimmed query and k=10", s.lastReq)
	}
	if len(res.Chunks) != 1 || !reflect.DeepEqual(res.Chunks[0], cited) || res.MessageTextMaxChars != 800 || res.Omitted != 1 {
		t.Fatalf("result = %+v", res)
	}
	conforms(t, ToolMemorySearch, raw)

	if _, err := MemorySearch(json.RawMessage(`{"query":"x","k":50}`), s); err != nil || s.lastReq.(abi.SearchRequest).K != 50 {
		t.Fatalf("k=50: %v, %+v", err, s.lastReq)
	}
	// An empty store: chunks is [] (never null) and the hint passes through.
	s = &store{search: &abi.SearchResult{Hint: "run openhuman-core ingest PATH"}}
	raw, err = MemorySearch(json.RawMessage(`{"query":"x"}`), s)
	if res = dec[abi.SearchResult](t, raw, err); res.Chunks == nil || res.Hint == "" {
		t.Fatalf("empty store: %s", raw)
	}
	conforms(t, ToolMemorySearch, raw)
	// A host result of another shape (null chunks) is repaired, not passed through.
	raw, err = MemorySearch(json.RawMessage(`{"query":"x"}`), &store{raw: json.RawMessage(`{"hint":"ingest first","chunks":null}`)})
	if err != nil || string(raw) != `{"chunks":[],"hint":"ingest first"}` {
		t.Fatalf("repaired result = %s, %v", raw, err)
	}
	_, err = MemorySearch(json.RawMessage(`{"query":"x"}`), &store{raw: json.RawMessage(`{"chunks":7}`)})
	if e, ok := err.(*abi.Error); !ok || e.Code != abi.CodeInternal || !strings.Contains(e.Message, "memory_search returned a result of the wrong shape") {
		t.Fatalf("wrong shape: %v", err)
	}

	for _, c := range []struct{ args, msg string }{
		{`{}`, "missing required argument `query`"},
		{`{"query":" "}`, "argument `query` must not be empty"},
		{`{"query":"x","k":51}`, "argument `k` must not exceed 50 (got 51)"},
		{`{"query":"x","limit":5}`, "unexpected argument `limit`"},
		{`"phoenix"`, "arguments must be an object, got string"},
		{`{"query":"` + strings.Repeat("é", 1001) + `"}`, "argument `query` has 1001 characters; at most 1000 are allowed"},
	} {
		_, err := MemorySearch(json.RawMessage(c.args), &store{})
		wantErr(t, err, abi.CodeInvalidParams, c.msg)
	}
	// A host error reaches the caller unchanged.
	_, err = MemorySearch(json.RawMessage(`{"query":"x"}`), &store{err: &abi.Error{Code: abi.CodeUnavailable, Message: "store is locked"}})
	wantErr(t, err, abi.CodeUnavailable, "store is locked")
	_, err = MemorySearch(json.RawMessage(`{"query":"x"}`), &store{err: errors.New("boom")})
	wantErr(t, err, abi.CodeInternal, "host function memory_search failed: boom")
}

func TestMemoryRecall(t *testing.T) {
	s := &store{recall: &abi.RecallResult{Chunks: []abi.ChunkHit{cited}, Mode: abi.ModeLexical, Note: "no embedder configured", MessageTextMaxChars: 400}}
	raw, err := MemoryRecall(json.RawMessage(`{"query":"rocket release","k":3}`), s)
	res := dec[abi.RecallResult](t, raw, err)
	if s.lastReq != (abi.RecallRequest{Query: "rocket release", K: 3}) {
		t.Fatalf("host request = %+v", s.lastReq)
	}
	if res.Mode != abi.ModeLexical || len(res.Chunks) != 1 {
		t.Fatalf("result = %+v", res)
	}
	conforms(t, ToolMemoryRecall, raw)
	_, err = MemoryRecall(json.RawMessage(`{}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "missing required argument `query`")
	_, err = MemoryRecall(json.RawMessage(`[]`), s)
	wantErr(t, err, abi.CodeInvalidParams, "arguments must be an object, got array")
	// A host that reports no chunks still yields a schema-valid result.
	raw, err = MemoryRecall(json.RawMessage(`{"query":"x"}`), &store{recall: &abi.RecallResult{}})
	if res = dec[abi.RecallResult](t, raw, err); res.Mode != abi.ModeLexical || res.Chunks == nil {
		t.Fatalf("repaired recall = %s", raw)
	}
	conforms(t, ToolMemoryRecall, raw)
}

func TestReadChunk(t *testing.T) {
	c := abi.Chunk{
		ID: hit.ID, SourceKind: "email", SourceID: hit.SourceID, SourceRef: hit.SourceRef, TimestampMS: hit.TimestampMS,
		TimeRangeStartMS: hit.TimestampMS, TimeRangeEndMS: hit.TimestampMS + 60000, TokenCount: 12, Text: "Full text of the phoenix launch mail.",
		Entities: []string{"email:alice@example.com"}, Attachments: []abi.Attachment{{Name: "plan.pdf", ContentType: "application/pdf", Size: 1024}},
	}
	s := &store{chunks: map[string]abi.Chunk{c.ID: c}}
	raw, err := ReadChunk(json.RawMessage(`{"chunk_id":" 0123456789ABCDEF0123456789abcdef "}`), s)
	res := dec[abi.ChunkResult](t, raw, err)
	if s.lastReq != (abi.ChunkGetRequest{ID: c.ID}) {
		t.Fatalf("host request = %+v, want the lowercased trimmed id", s.lastReq)
	}
	if !reflect.DeepEqual(res.Chunk, c) {
		t.Fatalf("chunk = %+v", res.Chunk)
	}
	conforms(t, ToolReadChunk, raw)

	_, err = ReadChunk(json.RawMessage(`{"chunk_id":"ffffffffffffffffffffffffffffffff"}`), s)
	wantErr(t, err, abi.CodeNotFound, "no chunk with id ffffffffffffffffffffffffffffffff in the memory tree; chunk ids come from memory.search, memory.recall or tree.browse results — run one of them again to get a current id (ids change when a source is re-ingested with different content)")
	_, err = ReadChunk(json.RawMessage(`{"chunk_id":"ffffffffffffffffffffffffffffffff"}`), &store{err: &abi.Error{Code: abi.CodeNotFound,
		Message: "get chunk ffffffffffffffffffffffffffffffff: the memory tree is empty (ingest with: openhuman-core ingest PATH...): not found"}})
	wantErr(t, err, abi.CodeNotFound, "no chunk with id ffffffffffffffffffffffffffffffff: the memory tree is empty; ingest mail, chat or documents with `openhuman-core ingest PATH...` first")
	_, err = ReadChunk(json.RawMessage(`{"chunk_id":"xyz"}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "argument `chunk_id` must be a chunk id: 32 hexadecimal characters, as found in the `id` of a memory.search, memory.recall or tree.browse hit (got \"xyz\")")
	_, err = ReadChunk(json.RawMessage(`{"id":"`+c.ID+`"}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "unexpected argument `id`")
	_, err = ReadChunk(json.RawMessage(`{"chunk_id":"`+c.ID+`","unused":1}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "unexpected argument `unused`")
	_, err = ReadChunk(json.RawMessage(`{}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "missing required argument `chunk_id`")
}

func TestBrowse(t *testing.T) {
	s := &store{list: &abi.ListResult{Chunks: []abi.ChunkHit{hit}, Total: 41, Next: 10}}
	raw, err := Browse(json.RawMessage(`{}`), s)
	res := dec[abi.ListResult](t, raw, err)
	if !reflect.DeepEqual(s.lastReq, abi.ChunksListRequest{K: 10}) {
		t.Fatalf("{} → host request %+v, want only k=10", s.lastReq)
	}
	if res.Total != 41 || res.Next != 10 || len(res.Chunks) != 1 {
		t.Fatalf("result = %+v", res)
	}
	conforms(t, ToolBrowse, raw)

	since, until := int64(1767225600000), int64(1769904000000)
	_, err = Browse(json.RawMessage(`{"source_kinds":[""," Email ","  "],"source_ids":["slack:#eng"],"entity_ids":["email:alice@example.com"],
		"since_ms":1767225600000,"until_ms":1769904000000,"query":" launch ","k":25,"offset":50}`), s)
	if err != nil {
		t.Fatal(err)
	}
	want := abi.ChunksListRequest{
		SourceKinds: []string{"email"}, SourceIDs: []string{"slack:#eng"}, EntityIDs: []string{"email:alice@example.com"},
		SinceMS: &since, UntilMS: &until, Query: "launch", K: 25, Offset: 50,
	}
	if !reflect.DeepEqual(s.lastReq, want) {
		t.Fatalf("host request = %+v, want %+v", s.lastReq, want)
	}
	// Nulls count as absent.
	if _, err = Browse(json.RawMessage(`{"k":null,"offset":null,"since_ms":null,"source_ids":null}`), s); err != nil || !reflect.DeepEqual(s.lastReq, abi.ChunksListRequest{K: 10}) {
		t.Fatalf("nulls: %v, %+v", err, s.lastReq)
	}
	for _, c := range []struct{ args, msg string }{
		{`{"k":51}`, "argument `k` must not exceed 50 (got 51)"},
		{`{"limit":5}`, "unexpected argument `limit`"},
		{`{"source_kinds":"email"}`, "argument `source_kinds` must be an array of strings, got string"},
		{`{"entity_ids":[1]}`, "argument `entity_ids` must contain only strings, got number entry"},
		{`{"since_ms":"yesterday"}`, "argument `since_ms` must be milliseconds since 1970-01-01 UTC or a date: RFC 3339 (\"2015-07-01T09:30:00Z\"), \"YYYY-MM-DD\" or \"YYYY-MM\" (got \"yesterday\")"},
		{`{"since_ms":"2015-08","until_ms":"2015-07"}`, "argument `since_ms` (1438387200000) must not be after `until_ms` (1438387199999)"},
		{`{"until_ms":-5}`, "argument `until_ms` must be a non-negative integer (milliseconds since 1970-01-01 UTC)"},
		{`{"since_ms":10,"until_ms":5}`, "argument `since_ms` (10) must not be after `until_ms` (5)"},
		{`{"offset":-1}`, "argument `offset` must be a non-negative integer"},
		{`{"query":""}`, "argument `query` must not be empty when provided"},
		{`{"entity_ids":[` + strings.Repeat(`"topic:x",`, 100000) + `"topic:y"]}`, "argument `entity_ids` has 100001 items; at most 100 are allowed (split the filter over several calls)"},
		{`{"source_ids":[` + strings.Repeat(`"a",`, 100) + `"b"]}`, "argument `source_ids` has 101 items; at most 100 are allowed (split the filter over several calls)"},
		{`{"source_kinds":[` + strings.Repeat(`"chat",`, 10) + `"email"]}`, "argument `source_kinds` has 11 items; at most 10 are allowed (split the filter over several calls)"},
		{`{"source_ids":["` + strings.Repeat("x", 4097) + `"]}`, "an item of argument `source_ids` has 4097 characters; at most 4096 are allowed"},
		{`{"query":"` + strings.Repeat("x", 1001) + `"}`, "argument `query` has 1001 characters; at most 1000 are allowed"},
	} {
		_, err := Browse(json.RawMessage(c.args), &store{})
		wantErr(t, err, abi.CodeInvalidParams, c.msg)
	}
}

func TestTopEntities(t *testing.T) {
	s := &store{entities: &abi.EntitiesResult{Entities: []abi.Entity{{EntityID: "email:alice@example.com", Kind: "email", Surface: "alice@example.com", Count: 7, LastSeenMS: 1767225600000}}, Total: 12, Next: 10}}
	raw, err := TopEntities(json.RawMessage(`{}`), s)
	if res := dec[abi.EntitiesResult](t, raw, err); s.lastReq != (abi.EntitiesTopRequest{K: 10}) || len(res.Entities) != 1 {
		t.Fatalf("{}: %s, req %+v", raw, s.lastReq)
	}
	conforms(t, ToolTopEntities, raw)
	if _, err := TopEntities(json.RawMessage(`{"kind":" Email ","k":50,"offset":100}`), s); err != nil || s.lastReq != (abi.EntitiesTopRequest{Kind: "email", K: 50, Offset: 100}) {
		t.Fatalf("kind+k+offset: %v, %+v", err, s.lastReq)
	}
	_, err = TopEntities(json.RawMessage(`{"kind":"`+strings.Repeat("k", 33)+`"}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "argument `kind` has 33 characters; at most 32 are allowed")
	_, err = TopEntities(json.RawMessage(`{"offset":-3}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "argument `offset` must be a non-negative integer")
	_, err = TopEntities(json.RawMessage(`{"kind":"  "}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "argument `kind` must not be empty when provided")
	raw, err = TopEntities(json.RawMessage(`{}`), &store{entities: &abi.EntitiesResult{}})
	if res := dec[abi.EntitiesResult](t, raw, err); res.Entities == nil {
		t.Fatalf("empty: %s", raw)
	}
	conforms(t, ToolTopEntities, raw)
}

func TestListSources(t *testing.T) {
	s := &store{sources: &abi.SourcesResult{Sources: []abi.Source{{SourceKind: "chat", SourceID: "slack:#eng", DisplayName: "#eng", ChunkCount: 3, FirstMS: 1, MostRecentMS: 2}}, Total: 20000, Next: 10}}
	raw, err := ListSources(json.RawMessage(`{}`), s)
	if res := dec[abi.SourcesResult](t, raw, err); !reflect.DeepEqual(s.lastReq, abi.SourcesListRequest{K: 10}) || len(res.Sources) != 1 || res.Total != 20000 || res.Next != 10 {
		t.Fatalf("{}: %s, %+v", raw, s.lastReq)
	}
	conforms(t, ToolListSources, raw)
	raw, err = ListSources(json.RawMessage(`{}`), &store{sources: &abi.SourcesResult{}})
	if res := dec[abi.SourcesResult](t, raw, err); res.Sources == nil {
		t.Fatalf("empty: %s", raw)
	}
	conforms(t, ToolListSources, raw)
	if _, err := ListSources(json.RawMessage(`{"user_email_hint":" alice@example.com "}`), s); err != nil || !reflect.DeepEqual(s.lastReq, abi.SourcesListRequest{UserEmailHint: "alice@example.com", K: 10}) {
		t.Fatalf("hint: %v, %+v", err, s.lastReq)
	}
	want := abi.SourcesListRequest{Kinds: []string{"email", "chat"}, Query: "phoenix", K: 50, Offset: 19950}
	if _, err := ListSources(json.RawMessage(`{"kinds":[" Email ","chat",""],"query":" phoenix ","k":50,"offset":19950}`), s); err != nil || !reflect.DeepEqual(s.lastReq, want) {
		t.Fatalf("paged: %v, %+v, want %+v", err, s.lastReq, want)
	}
	for _, c := range []struct{ args, msg string }{
		{`{"k":51}`, "argument `k` must not exceed 50 (got 51)"},
		{`{"k":0}`, "argument `k` must be greater than zero"},
		{`{"offset":1000001}`, "argument `offset` must not exceed 1000000 (got 1000001); narrow the listing with the tool's filters instead of paging this deep"},
		{`{"kinds":"email"}`, "argument `kinds` must be an array of strings, got string"},
		{`{"kinds":[` + strings.Repeat(`"chat",`, 10) + `"email"]}`, "argument `kinds` has 11 items; at most 10 are allowed (split the filter over several calls)"},
		{`{"query":""}`, "argument `query` must not be empty when provided"},
		{`{"user_email_hint":"` + strings.Repeat("a", 321) + `"}`, "argument `user_email_hint` has 321 characters; at most 320 are allowed"},
	} {
		_, err := ListSources(json.RawMessage(c.args), &store{})
		wantErr(t, err, abi.CodeInvalidParams, c.msg)
	}
	_, err = ListSources(json.RawMessage(`{"limit":5}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "unexpected argument `limit`")
	_, err = ListSources(json.RawMessage(`{"user_email_hint":5}`), s)
	wantErr(t, err, abi.CodeInvalidParams, "argument `user_email_hint` must be a string")
}

func TestCatalogueFolders(t *testing.T) {
	var all []string
	for _, m := range Modules {
		all = append(all, m.Tools...)
	}
	if !slices.Equal(all, Catalogue) {
		t.Fatalf("Modules serve %v, want the catalogue %v", all, Catalogue)
	}
	for _, tool := range Catalogue {
		outputSchema(t, tool) // parses, validates and names the tool
	}
}
