// Package mcpserver serves the tool catalogue over the Model Context Protocol on
// stdio with the official go-sdk, dispatching every tools/call into the sandboxed
// runtime with the session's client provenance, and auditing each call.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/jsoncheck"
	"github.com/openhuman/openhuman-core/internal/outcome"
	"github.com/openhuman/openhuman-core/internal/principal"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ServerName is the serverInfo.name reported to clients.
const ServerName = "openhuman-core"

// ProtocolVersions are the MCP versions this server negotiates, newest first; an
// unknown version requested by a client is answered with the first.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// DefaultDrainTimeout bounds how long the server keeps answering requests already
// read after stdin closes: the longest tool deadline (60 s hard cap) plus a margin.
const DefaultDrainTimeout = 65 * time.Second

// Dispatcher is what the server needs from the runtime: the tool catalogue in
// listing order and a way to run one call.
type Dispatcher interface {
	Tools() []runtime.Tool
	Call(ctx context.Context, call runtime.Call) (*runtime.Outcome, error)
}

// Options configure a Server.
type Options struct {
	// Version is the binary's version, reported as serverInfo.version.
	Version string
	// Dispatcher runs the tools. Required.
	Dispatcher Dispatcher
	// Audit receives one entry per tool call (nil: no audit log).
	Audit *audit.Log
	// Logger receives logs (stderr in production; nil: slog.Default()).
	Logger *slog.Logger
	// ToolsCanChange advertises capabilities.tools.listChanged: set it when
	// third-party tools may appear or go while the server runs.
	ToolsCanChange bool
	// SearXNGEnabled mentions searxng_search in the instructions.
	SearXNGEnabled bool
	// DrainTimeout bounds the wait for in-flight answers at EOF (default DefaultDrainTimeout).
	DrainTimeout time.Duration
	// OnInitialized, when set, is called once per session right after the
	// session's first successful initialize answer has been written: the moment
	// work held back so as not to delay that answer (compiling tool modules) can
	// start.
	OnInitialized func()
	// OnStdinClosed, when set, is called once when stdin reaches EOF, before the
	// server waits for the answers still in flight: the moment to stop work whose
	// answer nobody will read and that has not started (calls waiting for a tool
	// module to compile), so the process exits promptly.
	OnStdinClosed func()
	// NoFastResults makes the SDK encode every tool result itself instead of the
	// session's writer putting it into the SDK's frame (fastresult.go): the same
	// bytes on the wire, slower; for tests and measurements.
	NoFastResults bool
	// NoFastCalls leaves every tools/call to the go-sdk's request path instead
	// of the line filter's own (fastcall.go): the same frames on the wire,
	// slower; for tests and measurements.
	NoFastCalls bool
	// ToolNames is config.ToolNamesAuto (default), ToolNamesSpec or
	// ToolNamesPortable: the spelling of the tool names a session lists
	// (names.go). tools/call takes both spellings in every session.
	ToolNames string
	// Principals resolves an HTTP call's bearer token to its principal (serve):
	// the call runs with it in its context (principal.With), so the store's
	// queries carry its scope, and the audit line names it. A call over HTTP
	// whose token it does not resolve (revoked meanwhile) is refused. nil, and
	// on stdio: no principal, full access.
	Principals *principal.Set
}

// Server is an MCP server over one Dispatcher. One Server may serve several
// sessions (each Serve call is one).
type Server struct {
	opts Options
	log  *slog.Logger
	sdk  *mcp.Server

	mu      sync.Mutex
	ordered []*mcp.Tool          // tools/list, in the dispatcher's order
	prints  map[string][]byte    // tool name -> fingerprint of what the SDK has
	byName  map[string]*mcp.Tool // current tools
	web     map[string]bool      // tools whose module reads only the web (SearXNG), not memory
	agents  map[string][]string  // tool name -> allowed_agents (absent: every client)
	names   toolNames            // portable spellings (names.go)

	httpMaxInFlight atomic.Int64 // HTTPOptions.MaxInFlight once HTTPHandler was called (http.go)
	httpCalls       sync.Map     // HTTP session id -> *atomic.Int64 requests in flight

	fast      sync.Map     // *mcp.ServerSession -> *fastResults of its connection
	fastCalls atomic.Int64 // results handed over as placeholders (for tests)
	// fastCallsRun counts tools/calls the line filter ran itself (fastcall.go; for tests).
	fastCallsRun atomic.Int64
	loads        sessionLoads // calls in flight per session (sessioncap.go)
}

// New builds a server and registers the dispatcher's current tools.
func New(opts Options) (*Server, error) {
	if opts.Dispatcher == nil {
		return nil, errors.New("mcpserver: Options.Dispatcher is required")
	}
	if opts.Version == "" {
		opts.Version = "0.0.0-dev"
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{opts: opts, log: log, prints: map[string][]byte{}, byName: map[string]*mcp.Tool{}}
	s.sdk = mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: Instructions(opts.SearXNGEnabled),
		Logger:       log.With("component", "go-sdk"),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: opts.ToolsCanChange},
			Resources: &mcp.ResourceCapabilities{}}, // resources.go
		SupportedProtocolVersions: slices.Clone(ProtocolVersions),
	})
	s.sdk.AddReceivingMiddleware(s.listInOrder, s.namesMiddleware, s.boundHTTPCalls, s.resourcesMiddleware)
	s.registerResources()
	s.Refresh()
	return s, nil
}

// Instructions is the initialize result's guidance for the model.
func Instructions(searxng bool) string {
	text := "openhuman-core is a read-only view of the user's own memory tree: their ingested email, chat and documents. " +
		"Nothing here can change or send anything. " +
		"To answer a question from memory, start with memory.search (keywords, names, addresses, exact phrases) or memory.recall " +
		"(describe the meaning; finds paraphrases and related wording), then call tree.read_chunk with a hit's id to read the full text " +
		"before quoting it. Cite where facts came from with each chunk's source_kind, source_id, source_ref and timestamp_ms. " +
		"To discover what exists, use tree.list_sources (mail threads, chat channels, documents with counts and last activity), " +
		"tree.top_entities (the most-mentioned people, addresses, handles and topics; canonical ids are lowercase like email:ann@x.example), " +
		"and tree.browse to page through chunks newest first, filtered by source_kinds, source_ids, entity_ids or a time window in epoch milliseconds. " +
		"k defaults to 10 and must be 1..50. An empty result with a hint means nothing has been ingested yet."
	if searxng {
		text += " searxng_search queries the user's self-hosted SearXNG instance for public web results (categories web, news, images); " +
			"use it only for information that is not in memory, and say when an answer comes from the web."
	}
	return text
}

// Refresh brings the served tool list in line with the dispatcher's. Clients are
// sent notifications/tools/list_changed when it changed. Call it from the
// runtime's change callback.
func (s *Server) Refresh() {
	tools := s.opts.Dispatcher.Tools()
	ordered := make([]*mcp.Tool, 0, len(tools))
	prints := make(map[string][]byte, len(tools))
	byName := make(map[string]*mcp.Tool, len(tools))
	web := map[string]bool{}
	agents := map[string][]string{}
	for _, t := range tools {
		mt, err := convertTool(t)
		if err != nil {
			s.log.Warn("mcp: tool not served", "tool", t.Name, "module", t.Module.Name, "err", err)
			continue
		}
		if _, dup := byName[mt.Name]; dup {
			s.log.Warn("mcp: duplicate tool name; the first one is served", "tool", t.Name, "module", t.Module.Name)
			continue
		}
		fp := toolPrint(mt)
		if slices.Contains(t.Module.Capabilities, abi.CapWebSearXNG) && !slices.Contains(t.Module.Capabilities, abi.CapMemoryRead) {
			web[mt.Name] = true
		}
		if len(t.AllowedAgents) > 0 {
			agents[mt.Name] = slices.Clone(t.AllowedAgents)
		}
		ordered = append(ordered, mt)
		prints[mt.Name] = fp
		byName[mt.Name] = mt
	}
	names, ordered, skip := buildNames(ordered)
	for name, why := range skip {
		// The runtime refuses such a module at load; a dispatcher that does not
		// is still never served a tool some client would refuse.
		s.log.Warn("mcp: tool not served", "tool", name, "err", why)
		delete(prints, name)
		delete(byName, name)
	}

	s.mu.Lock()
	var removed []string
	for name := range s.prints {
		if _, ok := prints[name]; !ok {
			removed = append(removed, name)
		}
	}
	var changed []*mcp.Tool
	for _, mt := range ordered {
		if !bytes.Equal(s.prints[mt.Name], prints[mt.Name]) {
			changed = append(changed, mt)
		}
	}
	s.ordered, s.prints, s.byName, s.web, s.agents, s.names = ordered, prints, byName, web, agents, names
	s.mu.Unlock()

	sort.Strings(removed)
	if len(removed) > 0 {
		s.sdk.RemoveTools(removed...)
	}
	for _, mt := range changed {
		s.sdk.AddTool(sdkTool(mt), s.handler(mt.Name))
	}
	if len(removed)+len(changed) > 0 {
		s.log.Debug("mcp: tool list updated", "tools", len(ordered), "added_or_changed", len(changed), "removed", len(removed))
	}
}

// convertTool turns a manifest tool into the SDK's form, refusing what the SDK
// would panic on.
func convertTool(t runtime.Tool) (*mcp.Tool, error) {
	if t.Name == "" || len(t.Name) > 128 {
		return nil, fmt.Errorf("tool name %q must be 1..128 characters", t.Name)
	}
	// Only the top level is decoded: decoding the whole schema into nested maps
	// cost most of a Refresh (the SDK checks the schemas again in AddTool).
	var in map[string]json.RawMessage
	if err := json.Unmarshal(t.InputSchema, &in); err != nil {
		return nil, fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	var typ any
	if raw, ok := in["type"]; ok {
		_ = json.Unmarshal(raw, &typ) // valid JSON: the object above decoded
	}
	if typ != "object" {
		return nil, fmt.Errorf(`input schema must have "type": "object", got %v`, typ)
	}
	mt := &mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: compactRaw(t.InputSchema),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.Annotations.ReadOnlyHint,
			OpenWorldHint:   new(t.Annotations.OpenWorldHint),
			DestructiveHint: t.Annotations.DestructiveHint,
		},
	}
	if t.Annotations.IdempotentHint != nil {
		mt.Annotations.IdempotentHint = *t.Annotations.IdempotentHint
	}
	if len(bytes.TrimSpace(t.OutputSchema)) > 0 && string(bytes.TrimSpace(t.OutputSchema)) != "null" {
		var out map[string]json.RawMessage
		if err := json.Unmarshal(t.OutputSchema, &out); err != nil {
			return nil, fmt.Errorf("output schema is not a JSON object: %w", err)
		}
		mt.OutputSchema = compactRaw(t.OutputSchema)
	}
	return mt, nil
}

func compactRaw(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// listInOrder answers tools/list from the dispatcher's order (the SDK would sort
// by name) without pagination, refusing a cursor.
func (s *Server) listInOrder(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" {
			return next(ctx, method, req)
		}
		if lr, ok := req.(*mcp.ListToolsRequest); ok && lr.Params != nil && lr.Params.Cursor != "" {
			// This server never hands out a cursor (one page holds every tool).
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("invalid cursor %q: tools/list returns every tool in one page and gives no nextCursor; call it without a cursor", clip(lr.Params.Cursor))}
		}
		// A session sees only the tools its provenance label may call (the policy's
		// allowed_agents); a call to another is refused by the runtime all the same.
		ss := sessionOf(req)
		label := sessionLabel(ss)
		portable := s.sessionPortable(ss)
		s.mu.Lock()
		listed, canonical := s.listedTools(portable)
		tools := make([]*mcp.Tool, 0, len(listed))
		for i, mt := range listed {
			if allowed, ok := s.agents[canonical[i].Name]; !ok || policy.AgentAllowed(allowed, label) {
				tools = append(tools, mt)
			}
		}
		s.mu.Unlock()
		// Cacheable only matters to 2026-07-28 clients; say what the SDK's default would.
		return &mcp.ListToolsResult{Tools: tools, Cacheable: mcp.Cacheable{CacheScope: "public"}}, nil
	}
}

// handler runs one tools/call through the dispatcher.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		hdr := requestHeader(req)
		reqID, overHTTP := httpRequestID(hdr) // HTTP: set by httpBounds, never by the client
		if v, ok := req.Params.Meta[requestIDMetaKey].(string); ok && !overHTTP {
			reqID = v // stdio: set by the line filter
		}
		return s.runCall(ctx, req.Session, hdr, name, req.Params.Arguments, reqID)
	}
}

// runCall runs one tools/call of the tool name (canonical) with args for the
// session ss: the SDK's handler and the line filter's own path (fastcall.go)
// both end here.
func (s *Server) runCall(ctx context.Context, ss *mcp.ServerSession, hdr http.Header, name string, args json.RawMessage, reqID string) (*mcp.CallToolResult, error) {
	start := time.Now()
	who, err := s.principalOf(ss, hdr)
	if err != nil {
		return nil, err
	}
	if who.Name != "" {
		ctx = principal.With(ctx, who)
	}
	label := sessionLabel(ss)
	release, busy := s.loads.admit(ss, len(args))
	if busy != nil {
		s.log.Debug("mcp: tools/call refused: session busy", "tool", name, "client", label, "err", busy)
		return nil, busy
	}
	defer release()
	call := runtime.Call{Tool: name, Arguments: args, Client: label, RequestID: reqID, Owner: instanceOwner(ss)}

	out, err := s.opts.Dispatcher.Call(ctx, call)
	portable := s.sessionPortable(ss)
	res, result, rpcErr, entry := s.shape(ctx, s.shownName(portable, name), out, err)
	if res != nil && res.IsError && portable {
		// Messages name tools as this session lists them.
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				tc.Text = s.shownText(true, tc.Text)
			}
		}
	}
	if result != nil {
		if fr := s.fastResultsOf(ss); fr != nil && !wantsRawResult(ctx) {
			// The session's writer puts the result into the SDK's frame
			// (fastresult.go): the SDK encodes two placeholders instead.
			token := fr.put(result)
			s.fastCalls.Add(1)
			res = &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: token}},
				StructuredContent: json.RawMessage(`"` + token + `"`),
			}
		} else {
			res = &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: string(result)}},
				StructuredContent: json.RawMessage(result),
			}
		}
		res.Content = append(res.Content, hitLinks(ss, name, result)...) // resources.go
	}
	entry.Time = start
	entry.Session = label
	entry.Bridge = sessionBridge(ss)
	if ss != nil {
		entry.SessionID = ss.ID()
	}
	entry.Payer = auditPayer(ss, hdr)
	if who.Name != "" && who.Name != principal.Operator {
		entry.Payer = "principal:" + who.Name // as /rpc charges it: one budget per principal
	}
	entry.Principal = who.Name
	entry.RequestID = reqID
	entry.Tool = name
	entry.Arguments = audit.SummarizeArguments(args)
	entry.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.opts.Audit.Record(entry)

	level := slog.LevelDebug
	if entry.Outcome == audit.OutcomeError || entry.ErrorID != "" {
		level = slog.LevelWarn
	}
	if s.log.Enabled(ctx, level) { // argKeys decodes the arguments: only for a line that is written
		s.log.Log(ctx, level, "mcp: tools/call", "id", reqID, "tool", name, "client", label,
			"arg_keys", argKeys(args), "outcome", entry.Outcome, "duration_ms", entry.DurationMS, "err", entry.Error, "error_id", entry.ErrorID)
	}
	if rpcErr != nil {
		return nil, rpcErr
	}
	return res, nil
}

// principalOf is the principal of an HTTP call's bearer token (none on stdio,
// or without Options.Principals). A call of an HTTP session (one with a session
// id) that comes without its request's headers is refused, never served with
// full access.
func (s *Server) principalOf(ss *mcp.ServerSession, hdr http.Header) (principal.Principal, error) {
	if s.opts.Principals == nil || hdr == nil && (ss == nil || ss.ID() == "") {
		return principal.Principal{}, nil
	}
	h := hdr.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		if p, ok := s.opts.Principals.Resolve(strings.TrimSpace(h[7:])); ok {
			return p, nil
		}
	}
	return principal.Principal{}, &jsonrpc.Error{Code: -32000, Message: "the bearer token of this request is not (or no longer) valid: it may have been revoked; ask the operator for a new one (openhuman-core tokens add)"}
}

// shape turns a dispatcher outcome into the MCP result (or a JSON-RPC error) and
// the audit entry's outcome fields. A successful call's result is returned as
// result (compact JSON, an object, valid UTF-8), for the caller to wrap; res is
// then nil.
func (s *Server) shape(ctx context.Context, name string, out *runtime.Outcome, err error) (res *mcp.CallToolResult, result []byte, rpcErr error, e audit.Entry) {
	if out != nil {
		e.ModuleSHA256 = out.ModuleSHA256
		e.Capabilities = audit.Capabilities{HostCalls: out.Usage.HostCalls, BytesIn: out.Usage.BytesIn, BytesOut: out.Usage.BytesOut, Refused: out.Usage.Refused}
	} else {
		e.ModuleSHA256 = runtime.ModuleDigest(err) // a call that failed in its module
		u := runtime.UsageOf(err)                  // its reads may have reached the client
		e.Capabilities = audit.Capabilities{HostCalls: u.HostCalls, BytesIn: u.BytesIn, BytesOut: u.BytesOut, Refused: u.Refused}
	}
	// The outcome table both servers share (internal/outcome): the class, the
	// client's words, the detail and error id for the log and the audit line.
	o := outcome.Of(ctx, name, out, err, s.webOnly(name))
	e.Outcome, e.Error, e.ErrorID = o.Audit, o.Detail, o.ErrorID
	switch o.Class {
	case outcome.OK:
	case outcome.UnknownTool:
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: o.Text}, e
	default:
		return errorResult(o.Text), nil, nil, e
	}
	// One pass tells valid and compact apart (jsoncheck); a result the runtime
	// checked is valid, and a first-party one compact, so it is used as it is.
	// The runtime's own pass already said so (Outcome.Compact): not scanned twice.
	result = out.Result
	valid, compact := true, true
	if !out.Compact {
		valid, compact = jsoncheck.Check(result)
	}
	if valid && !compact {
		var buf bytes.Buffer
		_ = json.Compact(&buf, result) // valid: cannot fail
		result = buf.Bytes()
	}
	if !valid || len(result) == 0 || result[0] != '{' {
		o := outcome.NotAnObject(name)
		e.Outcome, e.Error = o.Audit, o.Detail
		return errorResult(o.Text), nil, nil, e
	}
	e.Outcome = audit.OutcomeOK
	// A module's JSON may hold strings that are not valid UTF-8. JSON text outside
	// strings is ASCII, so replacing each invalid byte sequence with U+FFFD keeps it
	// valid JSON; the text block and structuredContent carry the same repaired bytes.
	if !utf8.Valid(result) {
		result = repairUTF8(result)
		s.log.Warn("mcp: tool result held invalid UTF-8; replaced with U+FFFD", "tool", name)
	}
	return nil, result, nil, e
}

// fastResultsOf returns the placeholder store of ss's connection, or nil when
// ss is not (yet) known (its results then take the SDK's own encoding).
func (s *Server) fastResultsOf(ss *mcp.ServerSession) *fastResults {
	if ss == nil {
		return nil
	}
	if fr, ok := s.fast.Load(ss); ok {
		return fr.(*fastResults)
	}
	return nil
}

// webOnly reports whether tool's module reads the web (SearXNG) and not memory.
func (s *Server) webOnly(tool string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if canon, ok := s.names.canonicalOf[tool]; ok {
		tool = canon // shape is given the name as the session lists it
	}
	return s.web[tool]
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func argKeys(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Serve runs one MCP session over newline-delimited JSON-RPC on in/out until in
// reaches EOF (after answering every request already read) or ctx is done.
// Only compact JSON lines are written to out.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	conn := newStdioConn(in, out, s.log, s.opts.DrainTimeout)
	conn.onInit = s.opts.OnInitialized
	conn.onEOF = s.opts.OnStdinClosed
	conn.ctx = ctx
	t := &mcp.IOTransport{Reader: conn.reader(), Writer: conn.writer(), MaxLineLength: 4 * MaxLineBytes}
	ss, err := s.sdk.Connect(ctx, t, nil)
	if err != nil {
		close(conn.sessionSet)
		return fmt.Errorf("start MCP session: %w", err)
	}
	if !s.opts.NoFastResults {
		s.fast.Store(ss, conn.fast)
		defer s.fast.Delete(ss)
	}
	if !s.opts.NoFastCalls {
		conn.mu.Lock()
		conn.srv, conn.ss = s, ss
		conn.mu.Unlock()
	}
	close(conn.sessionSet)
	// A count of audit lines dropped over this client's budget is written
	// when it leaves (issue 39, finding 8), not only before a next line.
	defer func() { s.opts.Audit.EndSession(auditPayer(ss, nil), sessionLabel(ss)) }()
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-done
		return ctx.Err()
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
			return nil
		}
		return fmt.Errorf("MCP session ended: %w", err)
	}
}
