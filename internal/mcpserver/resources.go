package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP resources: every chunk and every source of the memory tree as a resource
// a client can attach or open, and a resource_link to each hit in the results of
// memory.search, memory.recall and tree.browse.
//
// A resource is read through the same path as a tool call: resources/read of a
// chunk runs tree.read_chunk, of a source tree.browse, resources/list runs
// tree.list_sources — in the sandbox, with the session's provenance label
// (allowed_agents applies), the tools' limits and one audit line each. So
// resources open no second way into the store, and a security reviewer finds
// every read in the audit log under the tool that made it.

// URI templates of the resources (resources/templates/list).
const (
	ChunkURITemplate  = "memory://chunk/{id}"
	SourceURITemplate = "memory://source/{id}"
	chunkURIPrefix    = "memory://chunk/"
	sourceURIPrefix   = "memory://source/"
	// CodeResourceNotFound is MCP's error code for a resource that does not exist.
	CodeResourceNotFound = -32002
	// resourceLinksSince is the first protocol version with resource_link
	// content; older clients are not sent it (their schemas refuse it).
	resourceLinksSince = "2025-06-18"
)

// The tools resources are read through (canonical names).
const (
	toolReadChunk   = "tree.read_chunk"
	toolBrowse      = "tree.browse"
	toolListSources = "tree.list_sources"
)

// linkedTools are the tools whose hits get a resource_link each.
var linkedTools = map[string]bool{"memory.search": true, "memory.recall": true, toolBrowse: true}

// ChunkURI is the resource URI of the chunk id.
func ChunkURI(id string) string { return chunkURIPrefix + url.PathEscape(id) }

// SourceURI is the resource URI of the source id (slack:#general/2015-07 →
// memory://source/slack:%23general%2F2015-07).
func SourceURI(id string) string { return sourceURIPrefix + url.PathEscape(id) }

// registerResources declares the resource templates (the SDK answers
// resources/templates/list from them); resources/list and resources/read are
// answered by resourcesMiddleware.
func (s *Server) registerResources() {
	s.sdk.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "chunk", Title: "Memory chunk", URITemplate: ChunkURITemplate, MIMEType: "text/plain",
		Description: "One chunk of the memory tree (a mail, part of a chat conversation or a document) with its full text, people, time and source. " +
			"{id} is the 32-hex-character id of a memory.search, memory.recall or tree.browse hit.",
	}, s.templateRead)
	s.sdk.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "source", Title: "Memory source", URITemplate: SourceURITemplate, MIMEType: "text/plain",
		Description: "One source (a mail thread, a chat conversation month, a document): its newest chunks, each with a memory://chunk link. " +
			"{id} is a source_id of tree.list_sources, percent-encoded (slack:#general/2015-07 → slack:%23general%2F2015-07).",
	}, s.templateRead)
}

// templateRead is the SDK's handler for the templates; resourcesMiddleware
// answers resources/read before the SDK, so it is reached only if that changes.
func (s *Server) templateRead(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return s.readResource(ctx, req.Session, nil, req.Params.URI)
}

// resourcesMiddleware answers resources/list (the sources, paged) and
// resources/read (memory://chunk/… and memory://source/…).
func (s *Server) resourcesMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/read":
			rr, ok := req.(*mcp.ReadResourceRequest)
			if !ok || rr.Params == nil {
				break
			}
			return s.readResource(ctx, sessionOf(req), extraHeader(req), rr.Params.URI)
		case "resources/list":
			lr, ok := req.(*mcp.ListResourcesRequest)
			if !ok {
				break
			}
			cursor := ""
			if lr.Params != nil {
				cursor = lr.Params.Cursor
			}
			return s.listResources(ctx, sessionOf(req), extraHeader(req), cursor)
		}
		return next(ctx, method, req)
	}
}

// extraHeader is the HTTP header of a request over /mcp (nil on stdio).
func extraHeader(req mcp.Request) http.Header {
	if ex := req.GetExtra(); ex != nil {
		return ex.Header
	}
	return nil
}

// rawResultKey marks a context whose tool call must return its result in the
// CallToolResult itself, not as a placeholder for the session's writer
// (fastresult.go): a resource read reshapes the result before it is written.
type rawResultKey struct{}

func wantsRawResult(ctx context.Context) bool { return ctx.Value(rawResultKey{}) != nil }

// readThrough runs tool with args for the session, as a tools/call would, and
// returns its JSON result, or the error to answer the resource request with.
func (s *Server) readThrough(ctx context.Context, ss *mcp.ServerSession, hdr http.Header, uri, tool string, args any) (json.RawMessage, error) {
	raw, _ := json.Marshal(args)
	res, err := s.runCall(context.WithValue(ctx, rawResultKey{}, true), ss, hdr, tool, raw, "")
	if err != nil {
		return nil, err
	}
	if res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if strings.Contains(text, "(error id ") { // a failure of the server, not of the request
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("reading %s: %s", clip(uri), text)}
		}
		return nil, &jsonrpc.Error{Code: CodeResourceNotFound, Message: fmt.Sprintf("resource %s: %s", clip(uri), text)}
	}
	b, ok := res.StructuredContent.(json.RawMessage)
	if !ok {
		b, _ = json.Marshal(res.StructuredContent)
	}
	return b, nil
}

// readResource answers resources/read of uri.
func (s *Server) readResource(ctx context.Context, ss *mcp.ServerSession, hdr http.Header, uri string) (*mcp.ReadResourceResult, error) {
	notFound := func(why string) error {
		return &jsonrpc.Error{Code: CodeResourceNotFound, Message: fmt.Sprintf("resource %s not found: %s", clip(uri), why)}
	}
	var (
		kind, id string
		err      error
	)
	switch {
	case strings.HasPrefix(uri, chunkURIPrefix):
		kind = "chunk"
		id, err = url.PathUnescape(uri[len(chunkURIPrefix):])
	case strings.HasPrefix(uri, sourceURIPrefix):
		kind = "source"
		id, err = url.PathUnescape(uri[len(sourceURIPrefix):])
	default:
		return nil, notFound("this server's resources are " + ChunkURITemplate + " and " + SourceURITemplate)
	}
	if err != nil || id == "" {
		return nil, notFound(fmt.Sprintf("the %s id must follow %s, percent-encoded", kind, uri[:strings.LastIndex(uri, "/")+1]))
	}
	var text string
	if kind == "chunk" {
		raw, err := s.readThrough(ctx, ss, hdr, uri, toolReadChunk, map[string]any{"chunk_id": id})
		if err != nil {
			return nil, err
		}
		var r struct{ Chunk resourceChunk }
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading " + clip(uri) + ": " + toolReadChunk + " returned an unexpected result"}
		}
		text = r.Chunk.render()
	} else {
		raw, err := s.readThrough(ctx, ss, hdr, uri, toolBrowse, map[string]any{"source_ids": []string{id}, "k": 50})
		if err != nil {
			return nil, err
		}
		var r struct {
			Chunks []resourceChunk
			Total  int
			Hint   string
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading " + clip(uri) + ": " + toolBrowse + " returned an unexpected result"}
		}
		if len(r.Chunks) == 0 {
			why := "no chunk has this source id; tree.list_sources lists the sources"
			if r.Hint != "" {
				why = r.Hint
			}
			return nil, notFound(why)
		}
		text = renderSource(id, r.Chunks, r.Total)
	}
	text = s.shownText(s.sessionPortable(ss), text) // tool names as the session lists them
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}

// resourceChunk is what a resource shows of a chunk (tree.read_chunk's chunk,
// or a tree.browse hit, which has a snippet instead of the text).
type resourceChunk struct {
	ID          string   `json:"id"`
	SourceKind  string   `json:"source_kind"`
	SourceID    string   `json:"source_id"`
	SourceRef   string   `json:"source_ref"`
	Title       string   `json:"title"`
	TimestampMS int64    `json:"timestamp_ms"`
	StartMS     int64    `json:"time_range_start_ms"`
	EndMS       int64    `json:"time_range_end_ms"`
	Text        string   `json:"text"`
	Snippet     string   `json:"snippet"`
	Entities    []string `json:"entities"`
}

func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// people are the chunk's person and e-mail entities, without their prefixes.
func (c resourceChunk) people() []string {
	var out []string
	for _, e := range c.Entities {
		for _, p := range []string{"person:", "email:"} {
			if v, ok := strings.CutPrefix(e, p); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// render is a chunk as a resource: a short header (title, people, time, source,
// links), then the full text.
func (c resourceChunk) render() string {
	var b strings.Builder
	if c.Title != "" {
		b.WriteString(c.Title + "\n")
	}
	if p := c.people(); len(p) > 0 {
		b.WriteString("people: " + strings.Join(p, ", ") + "\n")
	}
	when := rfc3339(c.TimestampMS)
	if c.StartMS != 0 && c.EndMS > c.StartMS {
		when = rfc3339(c.StartMS) + " – " + rfc3339(c.EndMS)
	}
	b.WriteString("time: " + when + "\n")
	b.WriteString("source: " + c.SourceKind + " " + c.SourceID + " (" + SourceURI(c.SourceID) + ")\n")
	if c.SourceRef != "" {
		b.WriteString("ref: " + c.SourceRef + "\n")
	}
	b.WriteString("chunk: " + c.ID + " (" + ChunkURI(c.ID) + ")\n\n")
	b.WriteString(c.Text)
	return b.String()
}

// renderSource is a source as a resource: its newest chunks, each with its
// time, snippet and link.
func renderSource(id string, chunks []resourceChunk, total int) string {
	var b strings.Builder
	title := chunks[0].Title
	if title == "" {
		title = id
	}
	fmt.Fprintf(&b, "%s\nsource: %s %s\nchunks: %d", title, chunks[0].SourceKind, id, total)
	if total > len(chunks) {
		fmt.Fprintf(&b, " (the newest %d here; tree.browse with source_ids [%q] and offset %d pages on)", len(chunks), id, len(chunks))
	}
	b.WriteString("\n")
	for _, c := range chunks {
		fmt.Fprintf(&b, "\n[%s] %s\n%s\n", rfc3339(c.TimestampMS), ChunkURI(c.ID), c.Snippet)
	}
	return b.String()
}

// listResources answers resources/list: the sources, newest activity first,
// 50 a page; the cursor is the offset of the page.
func (s *Server) listResources(ctx context.Context, ss *mcp.ServerSession, hdr http.Header, cursor string) (*mcp.ListResourcesResult, error) {
	offset := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q: use the nextCursor of the previous resources/list answer", clip(cursor))}
		}
		offset = n
	}
	args := map[string]any{"k": 50}
	if offset > 0 {
		args["offset"] = offset
	}
	raw, err := s.readThrough(ctx, ss, hdr, "resources/list", toolListSources, args)
	if err != nil {
		return nil, err
	}
	var r struct {
		Sources []struct {
			SourceKind   string `json:"source_kind"`
			SourceID     string `json:"source_id"`
			DisplayName  string `json:"display_name"`
			Title        string `json:"title"`
			ChunkCount   int    `json:"chunk_count"`
			MostRecentMS int64  `json:"most_recent_ms"`
		}
		Next int
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "resources/list: " + toolListSources + " returned an unexpected result"}
	}
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, src := range r.Sources {
		title := src.Title
		if title == "" {
			title = src.DisplayName
		}
		out.Resources = append(out.Resources, &mcp.Resource{
			URI: SourceURI(src.SourceID), Name: src.SourceID, Title: title, MIMEType: "text/plain",
			Description: fmt.Sprintf("%s, %d chunks, last activity %s", src.SourceKind, src.ChunkCount, rfc3339(src.MostRecentMS)),
		})
	}
	if r.Next > 0 {
		out.NextCursor = strconv.Itoa(r.Next)
	}
	return out, nil
}

// hitLinks are the resource_link items of a successful result of tool (its
// canonical name): one per hit of memory.search, memory.recall and tree.browse,
// for sessions whose protocol has resource links.
func hitLinks(ss *mcp.ServerSession, tool string, result []byte) []mcp.Content {
	if !linkedTools[tool] || ss == nil {
		return nil
	}
	if p := ss.InitializeParams(); p == nil || p.ProtocolVersion < resourceLinksSince {
		return nil
	}
	var r struct {
		Chunks []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"chunks"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	links := make([]mcp.Content, 0, len(r.Chunks))
	seen := map[string]bool{}
	for _, c := range r.Chunks {
		if c.ID == "" || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		links = append(links, &mcp.ResourceLink{URI: ChunkURI(c.ID), Name: c.ID, Title: c.Title, MIMEType: "text/plain"})
	}
	return links
}
