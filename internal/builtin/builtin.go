// Package builtin holds the logic of the seven first-party MCP tools — argument
// checks, the host call, result shaping — as plain Go: the one place every check and
// message of those tools is written.
//
// The host runs it (runtime/toolcall.go): the first-party modules under tools-wasm/
// are small C modules that dispatch on the tool and pass the whole call to their
// capability's host function, which calls the function here with the raw arguments
// and a host-side implementation of the capability (it runs the typed host function
// exactly as a guest call would), and answers with the result or the error.
//
// Each function takes the raw arguments object and the host capability it needs (an
// interface) and returns the tool's result or an *abi.Error.
//
// The memory tools pass the read API's result through as raw JSON when it already
// has the shape the tool's output schema requires (the host encodes the same abi
// types), and decode, repair and re-encode it only otherwise.
package builtin

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Tool names, in catalogue order.
const (
	ToolMemorySearch  = "memory.search"
	ToolMemoryRecall  = "memory.recall"
	ToolReadChunk     = "tree.read_chunk"
	ToolBrowse        = "tree.browse"
	ToolTopEntities   = "tree.top_entities"
	ToolListSources   = "tree.list_sources"
	ToolSearxngSearch = "searxng_search"
)

// chunkIDLen is the length of a chunk id: 128 bits in lowercase hex.
const chunkIDLen = 32

// maxKinds is the most values a kinds filter takes (the schemas' maxItems; there
// are three kinds, repeats are harmless).
const maxKinds = 10

// maxEmailChars is the longest user_email_hint (an address is at most 320).
const maxEmailChars = 320

// Catalogue lists the first-party tools in the order the MCP server lists them.
var Catalogue = []string{
	ToolMemorySearch, ToolMemoryRecall, ToolReadChunk, ToolBrowse,
	ToolTopEntities, ToolListSources, ToolSearxngSearch,
}

// ModuleSpec is one first-party module: its folder under tools-wasm/ (also the stem
// of its embedded modules/<folder>.wasm.gz), the one capability it requests and the
// tools it serves, in catalogue order.
type ModuleSpec struct {
	Folder     string
	Capability string
	Tools      []string
}

// Modules lists the first-party modules in catalogue order: one module, memory,
// serves the six memory.read tools (they share this package and one capability, so
// one compiled module instead of six saves its compiled code five times over), and
// searxng_search serves the web.searxng tool. Their tools, in order, are Catalogue.
var Modules = []ModuleSpec{
	{Folder: "memory", Capability: abi.CapMemoryRead, Tools: []string{
		ToolMemorySearch, ToolMemoryRecall, ToolReadChunk, ToolBrowse, ToolTopEntities, ToolListSources}},
	{Folder: "searxng_search", Capability: abi.CapWebSearXNG, Tools: []string{ToolSearxngSearch}},
}

// Memory is the memory.read capability as the tools use it: each method returns the
// host function's "ok" JSON undecoded (sdk/memory.Raw implements it in a module).
type Memory interface {
	Search(abi.SearchRequest) (json.RawMessage, error)
	Recall(abi.RecallRequest) (json.RawMessage, error)
	GetChunk(abi.ChunkGetRequest) (json.RawMessage, error)
	ListChunks(abi.ChunksListRequest) (json.RawMessage, error)
	TopEntities(abi.EntitiesTopRequest) (json.RawMessage, error)
	ListSources(abi.SourcesListRequest) (json.RawMessage, error)
}

// Web is the web.searxng capability as the searxng_search tool uses it.
type Web interface {
	Search(abi.SearxngRequest) (*abi.SearxngReply, error)
}

// hostErr passes a host error through as an *abi.Error (the host already phrased
// it), or wraps anything else as internal with the host function's name.
func hostErr(fn string, err error) error {
	e := sdk.AsError(err)
	if e.Code == abi.CodeInternal && !strings.Contains(e.Message, fn) {
		e = sdk.Internal("host function %s failed: %s", fn, e.Message)
	}
	return e
}

func hits(h []abi.ChunkHit) []abi.ChunkHit {
	if h == nil {
		return []abi.ChunkHit{}
	}
	return h
}

// shape returns raw as the tool result when it visibly has the required shape: a
// JSON object that starts with prefix (encoding/json writes struct fields in order,
// so the host's encoding of the abi type starts with its first field) and contains
// none of the bad fragments (outside strings, `"` is always escaped, so a fragment
// such as `"mode":""` cannot come from text). Otherwise it decodes raw into T,
// repairs it with fix and re-encodes it; a raw value that does not decode is an
// internal error naming fn.
func shape[T any](fn string, raw json.RawMessage, prefix string, fix func(*T), bad ...string) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.HasPrefix(raw, []byte(prefix)) && raw[len(raw)-1] == '}' {
		clean := true
		for _, b := range bad {
			if bytes.Contains(raw, []byte(b)) {
				clean = false
				break
			}
		}
		if clean {
			return raw, nil
		}
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, sdk.Internal("host function %s returned a result of the wrong shape: %v", fn, err)
	}
	fix(&v)
	out, err := json.Marshal(&v)
	if err != nil {
		return nil, sdk.Internal("re-encoding the %s result: %v", fn, err)
	}
	return out, nil
}

// queryArgs reads the arguments memory.search and memory.recall share: query
// (required, at most abi.MaxQueryChars) and k (1..50, default 10).
func queryArgs(args json.RawMessage) (string, int, error) {
	a, err := sdk.ParseArgs(args, "query", "k")
	if err != nil {
		return "", 0, err
	}
	q, err := a.RequiredString("query")
	if err != nil {
		return "", 0, err
	}
	if err := sdk.CheckLength("query", q, abi.MaxQueryChars); err != nil {
		return "", 0, err
	}
	k, err := a.K()
	return q, k, err
}

// MemorySearch is memory.search: keyword search over the full text of the chunks.
// Arguments: query (required), k (1..50, default 10).
func MemorySearch(args json.RawMessage, m Memory) (json.RawMessage, error) {
	q, k, err := queryArgs(args)
	if err != nil {
		return nil, err
	}
	raw, err := m.Search(abi.SearchRequest{Query: q, K: k})
	if err != nil {
		return nil, hostErr(abi.FnMemorySearch, err)
	}
	return shape(abi.FnMemorySearch, raw, `{"chunks":[`, func(r *abi.SearchResult) { r.Chunks = hits(r.Chunks) })
}

// MemoryRecall is memory.recall: recall by meaning (synonyms, embeddings when
// configured). Arguments: query (required), k (1..50, default 10).
func MemoryRecall(args json.RawMessage, m Memory) (json.RawMessage, error) {
	q, k, err := queryArgs(args)
	if err != nil {
		return nil, err
	}
	raw, err := m.Recall(abi.RecallRequest{Query: q, K: k})
	if err != nil {
		return nil, hostErr(abi.FnMemoryRecall, err)
	}
	return shape(abi.FnMemoryRecall, raw, `{"chunks":[`, func(r *abi.RecallResult) {
		r.Chunks = hits(r.Chunks)
		if r.Mode == "" {
			r.Mode = abi.ModeLexical
		}
	}, `"mode":""`)
}

// ReadChunk is tree.read_chunk: one chunk with its full text. Argument: chunk_id
// (required; 32 hexadecimal characters). An unknown id is a not_found error.
func ReadChunk(args json.RawMessage, m Memory) (json.RawMessage, error) {
	a, err := sdk.ParseArgs(args, "chunk_id")
	if err != nil {
		return nil, err
	}
	id, err := a.RequiredString("chunk_id")
	if err != nil {
		return nil, err
	}
	if !isChunkID(id) {
		shown := id
		if len(shown) > 80 {
			shown = shown[:80] + "…"
		}
		return nil, sdk.InvalidParams("argument `chunk_id` must be a chunk id: 32 hexadecimal characters, as found in the `id` of a memory.search, memory.recall or tree.browse hit (got %q)", shown)
	}
	id = strings.ToLower(id)
	raw, err := m.GetChunk(abi.ChunkGetRequest{ID: id})
	if err != nil {
		if e := sdk.AsError(err); e.Code == abi.CodeNotFound {
			if strings.Contains(e.Message, "memory tree is empty") {
				return nil, sdk.NotFound("no chunk with id %s: the memory tree is empty; ingest mail, chat or documents with `openhuman-core ingest PATH...` first", id)
			}
			return nil, sdk.NotFound("no chunk with id %s in the memory tree; chunk ids come from memory.search, memory.recall or tree.browse results — run one of them again to get a current id (ids change when a source is re-ingested with different content)", id)
		}
		return nil, hostErr(abi.FnChunkGet, err)
	}
	return shape(abi.FnChunkGet, raw, `{"chunk":{`, func(*abi.ChunkResult) {})
}

func isChunkID(s string) bool {
	if len(s) != chunkIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Browse is tree.browse: chunks newest first, filtered by source kinds, source ids,
// entity ids, a time window and a substring, with k and offset for paging.
func Browse(args json.RawMessage, m Memory) (json.RawMessage, error) {
	a, err := sdk.ParseArgs(args, "source_kinds", "source_ids", "entity_ids", "since_ms", "until_ms", "query", "k", "offset")
	if err != nil {
		return nil, err
	}
	var req abi.ChunksListRequest
	if req.SourceKinds, err = kindsArg(a, "source_kinds"); err != nil {
		return nil, err
	}
	if req.SourceIDs, err = a.LimitedStringArray("source_ids", abi.MaxFilterItems, abi.MaxIDChars); err != nil {
		return nil, err
	}
	if req.EntityIDs, err = a.LimitedStringArray("entity_ids", abi.MaxFilterItems, abi.MaxIDChars); err != nil {
		return nil, err
	}
	if req.SinceMS, err = a.TimeBound("since_ms", false); err != nil {
		return nil, err
	}
	if req.UntilMS, err = a.TimeBound("until_ms", true); err != nil {
		return nil, err
	}
	if req.SinceMS != nil && req.UntilMS != nil && *req.SinceMS > *req.UntilMS {
		return nil, sdk.InvalidParams("argument `since_ms` (%d) must not be after `until_ms` (%d)", *req.SinceMS, *req.UntilMS)
	}
	if req.Query, req.K, req.Offset, err = pageArgs(a); err != nil {
		return nil, err
	}
	raw, err := m.ListChunks(req)
	if err != nil {
		return nil, hostErr(abi.FnChunksList, err)
	}
	return shape(abi.FnChunksList, raw, `{"chunks":[`, func(r *abi.ListResult) { r.Chunks = hits(r.Chunks) })
}

// kindsArg reads the list of kinds argument name, lowercased (at most maxKinds
// of at most abi.MaxKindChars each).
func kindsArg(a *sdk.Args, name string) ([]string, error) {
	kinds, err := a.LimitedStringArray(name, maxKinds, abi.MaxKindChars)
	if err != nil {
		return nil, err
	}
	for i, s := range kinds {
		kinds[i] = strings.ToLower(s)
	}
	return kinds, nil
}

// pageArgs reads what a paged list takes: the optional query (at most
// abi.MaxQueryChars), k and offset, in that order.
func pageArgs(a *sdk.Args) (query string, k, offset int, err error) {
	if query, _, err = a.OptionalString("query"); err != nil {
		return "", 0, 0, err
	}
	if err = sdk.CheckLength("query", query, abi.MaxQueryChars); err != nil {
		return "", 0, 0, err
	}
	if k, err = a.K(); err != nil {
		return "", 0, 0, err
	}
	if offset, err = a.Offset(); err != nil {
		return "", 0, 0, err
	}
	return query, k, offset, nil
}

// TopEntities is tree.top_entities: one page of the most-referenced entities,
// optionally of one kind (lowercased), with the total and the next page's offset.
// Arguments: kind, k, offset.
func TopEntities(args json.RawMessage, m Memory) (json.RawMessage, error) {
	a, err := sdk.ParseArgs(args, "kind", "k", "offset")
	if err != nil {
		return nil, err
	}
	kind, _, err := a.OptionalString("kind")
	if err != nil {
		return nil, err
	}
	if err := sdk.CheckLength("kind", kind, abi.MaxKindChars); err != nil {
		return nil, err
	}
	k, err := a.K()
	if err != nil {
		return nil, err
	}
	offset, err := a.Offset()
	if err != nil {
		return nil, err
	}
	raw, err := m.TopEntities(abi.EntitiesTopRequest{Kind: strings.ToLower(kind), K: k, Offset: offset})
	if err != nil {
		return nil, hostErr(abi.FnEntitiesTop, err)
	}
	return shape(abi.FnEntitiesTop, raw, `{"entities":[`, func(r *abi.EntitiesResult) {
		if r.Entities == nil {
			r.Entities = []abi.Entity{}
		}
	})
}

// ListSources is tree.list_sources: one page of the ingested sources, most recent
// first, with chunk counts and activity, the total that match and the next page's
// offset. Arguments: kinds (chat, email, document), query (a substring of the
// display name), k, offset, user_email_hint (the user's own address, left out of
// email display names).
func ListSources(args json.RawMessage, m Memory) (json.RawMessage, error) {
	a, err := sdk.ParseArgs(args, "kinds", "query", "k", "offset", "user_email_hint", "group")
	if err != nil {
		return nil, err
	}
	var req abi.SourcesListRequest
	if req.Kinds, err = kindsArg(a, "kinds"); err != nil {
		return nil, err
	}
	if req.Query, req.K, req.Offset, err = pageArgs(a); err != nil {
		return nil, err
	}
	if req.UserEmailHint, _, err = a.OptionalString("user_email_hint"); err != nil {
		return nil, err
	}
	if err := sdk.CheckLength("user_email_hint", req.UserEmailHint, maxEmailChars); err != nil {
		return nil, err
	}
	if req.Group, _, err = a.OptionalString("group"); err != nil {
		return nil, err
	}
	if err := sdk.CheckLength("group", req.Group, abi.MaxKindChars); err != nil {
		return nil, err
	}
	if req.Group != "" && req.Group != abi.GroupMonth && req.Group != abi.GroupConversation {
		return nil, sdk.InvalidParams("argument `group` must be %q or %q, got %q", abi.GroupMonth, abi.GroupConversation, req.Group)
	}
	raw, err := m.ListSources(req)
	if err != nil {
		return nil, hostErr(abi.FnSourcesList, err)
	}
	return shape(abi.FnSourcesList, raw, `{"sources":[`, func(r *abi.SourcesResult) {
		if r.Sources == nil {
			r.Sources = []abi.Source{}
		}
	})
}
