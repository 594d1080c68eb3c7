package rpcserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openhuman/openhuman-core/internal/admission"
	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/outcome"
	"github.com/openhuman/openhuman-core/internal/principal"
	"github.com/openhuman/openhuman-core/internal/rpcwire"
	"github.com/openhuman/openhuman-core/runtime"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultMaxBatch     = 100
	// DefaultMaxInFlightPerTool is Options.MaxInFlightPerTool's default.
	DefaultMaxInFlightPerTool = 2
	DefaultShutdownTimeout    = 30 * time.Second
	// DefaultWriteTimeout outlasts the longest tool deadline policy allows (60 s).
	DefaultWriteTimeout = 75 * time.Second
	// RequestTimeout bounds the work for one /rpc request (waiting for a slot and the
	// calls of a batch), so its answer is written before DefaultWriteTimeout.
	RequestTimeout = 70 * time.Second
)

// AgentHeader optionally names the calling agent; it becomes the provenance label rpc:<agent>.
const AgentHeader = "X-OpenHuman-Agent"

// Options configure a Server.
type Options struct {
	// Token is the operator's bearer token (full access). It must not be empty.
	Token string
	// Principals resolves bearer tokens to principals (the operator's and
	// those of `openhuman-core tokens add`); nil: only Token, as the operator.
	// A call runs with its principal in its context (principal.With), so the
	// store's queries carry its scope and the audit line names it.
	Principals *principal.Set
	// Version is the binary version reported by /health and registry entries.
	Version string
	// SearXNGEnabled says whether SearXNG is enabled in the configuration; when it is
	// not, searxng_search and tools.searxng_search are listed as disabled.
	SearXNGEnabled bool
	// KnownTools are manifests of tools the dispatcher may not serve now (e.g. the
	// builtin searxng_search while disabled), so the registry can describe them.
	KnownTools []runtime.Tool
	// MaxBodyBytes caps a request body (default 1 MiB).
	MaxBodyBytes int64
	// MaxBatch caps the number of requests in one batch (default 100).
	MaxBatch int
	// MaxInFlightPerTool bounds the calls dispatched into one tool at once; further
	// calls wait (as long as their request lives) before their deadline starts. The
	// default, 2, matches the runtime's idle pool per module (DESIGN §7), so calls
	// reuse warm instances instead of creating and discarding fresh ones: with 50
	// clients it tripled memory_tree_search throughput and cut p99 from 5.1 s to 1.1 s
	// on a loaded 2-core machine, where unbounded calls also hit their deadlines
	// waiting for a sandbox.
	MaxInFlightPerTool int
	// AllowedHosts are further names (host or host:port; a bare host means on the
	// port a request arrived on) accepted in the Host and Origin headers besides
	// 127.0.0.1, localhost and [::1] ([server] allowed_hosts).
	AllowedHosts []string
	// Audit receives one entry per tool call (nil: no audit log).
	Audit *audit.Log
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// MaxRequestsInFlight bounds the /rpc requests in flight for the token
	// (default DefaultMaxRequestsInFlight); beyond it a request is answered at
	// once with HTTP 429 and a JSON-RPC error (inflight.go).
	MaxRequestsInFlight int
	// MaxBodyBytesInFlight bounds the body bytes those requests hold (default
	// DefaultMaxBodyBytesInFlight).
	MaxBodyBytesInFlight int64
	// MCP, when set, serves MCP over Streamable HTTP at /mcp, behind the same
	// bearer token (401 without it) and Host/Origin check (403) as /rpc, and
	// charged to the same limiter (mcplimits.go).
	MCP http.Handler
	// Admission, when set, is the limiter /rpc and /mcp charge; nil: one made
	// from MaxRequestsInFlight and MaxBodyBytesInFlight.
	Admission *admission.Limiter
	// MCPMaxBodyBytes is what a POST /mcp without Content-Length is charged
	// (default 1 MiB, the MCP server's message cap).
	MCPMaxBodyBytes int64
}

// Server is the HTTP JSON-RPC server. It is safe for concurrent use.
type Server struct {
	d         Dispatcher
	opts      Options
	log       *slog.Logger
	mux       *http.ServeMux
	seq       atomic.Uint64
	dupLogged sync.Map
	inflight  map[string]chan struct{} // per tool; fixed after New
	limiter   *admission.Limiter       // requests, bodies and streams in flight per token (/rpc and /mcp)
	payer     string                   // audit.TokenPayer of the token
}

// New returns a Server dispatching into d.
func New(d Dispatcher, opts Options) (*Server, error) {
	if d == nil {
		return nil, errors.New("rpcserver: nil Dispatcher")
	}
	if strings.TrimSpace(opts.Token) == "" {
		return nil, errors.New("rpcserver: empty bearer token: load one with LoadToken")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxInFlightPerTool <= 0 {
		opts.MaxInFlightPerTool = DefaultMaxInFlightPerTool
	}
	if opts.MaxRequestsInFlight <= 0 {
		opts.MaxRequestsInFlight = DefaultMaxRequestsInFlight
	}
	if opts.MaxBodyBytesInFlight <= 0 {
		opts.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MCPMaxBodyBytes <= 0 {
		opts.MCPMaxBodyBytes = 1 << 20
	}
	if opts.Admission == nil {
		opts.Admission = admission.New(admission.Limits{MaxRequests: opts.MaxRequestsInFlight, MaxBodyBytes: opts.MaxBodyBytesInFlight})
	}
	if opts.Principals == nil {
		opts.Principals = principal.NewSet(opts.Token, "")
	}
	s := &Server{d: d, opts: opts, log: opts.Logger, inflight: map[string]chan struct{}{}, payer: audit.TokenPayer(opts.Token), limiter: opts.Admission}
	for _, c := range controllers {
		if s.inflight[c.Tool] == nil {
			s.inflight[c.Tool] = make(chan struct{}, opts.MaxInFlightPerTool)
		}
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/health", s.serveHealth)
	s.mux.HandleFunc("/rpc", s.serveRPC)
	s.mux.HandleFunc("/schema", s.serveSchema)
	if opts.MCP != nil {
		s.mux.Handle("/mcp", corsMCP(s.requireToken(s.chargeMCP(opts.MCP)))) // cors.go, mcplimits.go
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			s.serveIndex(w, r)
			return
		}
		mcpRoute := ""
		if opts.MCP != nil {
			mcpRoute = "/mcp (MCP over Streamable HTTP with Authorization: Bearer <token>; this server has no OAuth), "
		}
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "not_found",
			"message": fmt.Sprintf("no route %s; use POST /rpc (JSON-RPC 2.0), %sGET /health, GET /schema or GET /", r.URL.Path, mcpRoute)})
	})
	return s, nil
}

// Handler returns the HTTP handler: GET /, /health and /schema (open) and POST /rpc
// (bearer token), all only for requests whose Host and Origin name this server.
func (s *Server) Handler() http.Handler { return s.checkHost(s.mux) }

// NewHTTPServer returns an http.Server for h with read, write and idle timeouts. Its
// BaseContext is not cancelled by ctx, so in-flight calls finish during Shutdown.
func NewHTTPServer(ctx context.Context, h http.Handler, log *slog.Logger) *http.Server {
	base := context.WithoutCancel(ctx)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Serve serves h on ln until ctx is cancelled, then shuts down gracefully: it stops
// accepting connections and waits up to shutdownTimeout for in-flight calls to finish.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, shutdownTimeout time.Duration, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	if shutdownTimeout <= 0 {
		shutdownTimeout = DefaultShutdownTimeout
	}
	srv := NewHTTPServer(ctx, h, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for in-flight calls", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("graceful shutdown of %s did not finish within %s: %w", ln.Addr(), shutdownTimeout, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve HTTP on %s: %w", ln.Addr(), err)
	}
	return nil
}

// healthBody is the /health answer.
type healthBody struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
	Tools   struct {
		Ready int `json:"ready"`
		Total int `json:"total"`
	} `json:"tools"`
}

// serveHealth answers GET /health: total counts the enabled MCP tools, ready those whose
// module is compiled and answering (available or degraded).
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"ok": false, "error": "method_not_allowed", "message": "use GET /health"})
		return
	}
	var b healthBody
	b.OK, b.Version = true, s.opts.Version
	for _, e := range s.Registry() {
		if e.Transport != TransportMCP || !e.Enabled {
			continue
		}
		b.Tools.Total++
		if e.Health == HealthAvailable || e.Health == HealthDegraded {
			b.Tools.Ready++
		}
	}
	writeJSON(w, http.StatusOK, b)
}

// serveRPC answers POST /rpc.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	if tokenInURL(w, r) {
		return
	}
	p, ok := s.authorized(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="openhuman-core"`)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"ok": false, "error": "unauthorized",
			"message": "missing or wrong bearer token: send `Authorization: Bearer <token>` with the token from " + TokenEnv + " or <workspace>/core.token"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, errorResponse(nil, rpcErr(CodeInvalidRequest, "use POST /rpc with a JSON-RPC 2.0 body, not %s", r.Method)))
		return
	}
	release, busy := s.admit(s.payerOf(p), s.bodyCharge(r))
	if busy != nil {
		s.log.Debug("rpc: request refused: too many in flight", "err", busy.Data)
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, errorResponse(nil, busy))
		return
	}
	defer release()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorResponse(nil, rpcErr(CodeInvalidRequest,
				"request body is larger than %d bytes, the cap for /rpc: send smaller params or split the batch", mbe.Limit)))
			return
		}
		s.log.Warn("rpc: reading a request body failed", "err", err)
		writeJSON(w, http.StatusBadRequest, errorResponse(nil, rpcErr(CodeParseError, "could not read the whole request body")))
		return
	}
	client := clientLabel(r.Header.Get(AgentHeader))
	ctx, cancel := context.WithTimeout(principal.With(r.Context(), p), RequestTimeout)
	defer cancel()

	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		writeJSON(w, http.StatusOK, errorResponse(nil, rpcErr(CodeParseError, "request body is empty; send a JSON-RPC 2.0 request object or a batch array")))
		return
	}
	if perr := rpcwire.CheckJSON(trimmed); perr != nil { // the MCP servers' parse check too
		writeJSON(w, http.StatusOK, errorResponse(nil, fromWire(perr)))
		return
	}
	if trimmed[0] != '[' {
		resp := s.handleOne(ctx, trimmed, client)
		if resp == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	// Unlike the MCP server, which must hand a batch to the SDK whole, /rpc
	// answers each element of a batch on its own (JSON-RPC 2.0 §6).
	batch, perr := rpcwire.SplitBatch(trimmed, s.opts.MaxBatch)
	if perr != nil {
		writeJSON(w, http.StatusOK, errorResponse(nil, fromWire(perr)))
		return
	}
	out := make([]*response, 0, len(batch))
	for _, raw := range batch {
		if resp := s.handleOne(ctx, raw, client); resp != nil {
			out = append(out, resp)
		}
	}
	if len(out) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// requireToken answers 401 to a request without a bearer token of a principal,
// and passes on the others with their principal in the request's context.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tokenInURL(w, r) {
			return
		}
		p, ok := s.authorized(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="openhuman-core"`)
			writeJSON(w, http.StatusUnauthorized, errorResponse(nil, rpcErr(CodeInvalidRequest,
				"missing or wrong bearer token: this server takes a static bearer token and has no OAuth; send the header Authorization: Bearer <token> "+
					"(the token in %s or <workspace>/core.token; mcp-remote: --header \"Authorization: Bearer <token>\")", TokenEnv)))
			return
		}
		next.ServeHTTP(w, r.WithContext(principal.With(r.Context(), p)))
	})
}

// authorized resolves the request's bearer token to its principal (by the
// token's SHA-256: the time taken says nothing of its characters).
func (s *Server) authorized(r *http.Request) (principal.Principal, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return principal.Principal{}, false
	}
	return s.opts.Principals.Resolve(strings.TrimSpace(h[len(prefix):]))
}

// payerOf is whom p's requests and audit lines are charged to: the operator
// token's payer, or the principal's own.
func (s *Server) payerOf(p principal.Principal) string {
	if p.Name == principal.Operator || p.Name == "" {
		return s.payer
	}
	return "principal:" + p.Name
}

// urlTokenParams are query parameters that would put a credential in a URL.
var urlTokenParams = []string{"token", "access_token", "bearer", "auth", "authorization", "api_key", "key"}

// tokenInURL answers 400 to a request carrying a token in its URL (URLs land
// in proxies' and browsers' logs): the token goes in the Authorization header.
func tokenInURL(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	for _, k := range urlTokenParams {
		if q.Has(k) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "token_in_url",
				"message": fmt.Sprintf("a credential was sent in the URL (query parameter %q): URLs are written to logs, so this server never reads one there; send the header Authorization: Bearer <token> instead, and consider the token leaked (openhuman-core tokens revoke NAME, then tokens add)", k)})
			return true
		}
	}
	return false
}

// handleOne answers one request; nil for a notification.
func (s *Server) handleOne(ctx context.Context, raw json.RawMessage, client string) *response {
	req, errResp := parseRequest(raw)
	if errResp != nil {
		return errResp
	}
	if req == nil {
		return nil
	}
	start := time.Now()
	result, rerr := s.dispatch(ctx, req, client)
	s.log.Debug("rpc", "method", req.Method, "client", client, "ms", float64(time.Since(start).Microseconds())/1000, "error", errString(rerr))
	if rerr != nil && rerr.errorID != "" && !toolMethod(req.Method) {
		s.log.Warn("rpc: internal error answered to the client", "method", req.Method, "client", client, "error_id", rerr.errorID, "err", rerr.detail)
	}
	if req.Notification {
		return nil
	}
	if rerr != nil {
		return errorResponse(req.ID, rerr)
	}
	return &response{JSONRPC: "2.0", ID: req.ID, Result: result}
}

func errString(e *Error) string {
	if e == nil {
		return ""
	}
	return e.logged()
}

// toolMethod reports whether method dispatches into a tool module (callTool logs
// and audits those itself).
func toolMethod(method string) bool {
	_, ok := controllerByMethod[method]
	return ok
}

// dispatch runs one method.
func (s *Server) dispatch(ctx context.Context, req *request, client string) (json.RawMessage, *Error) {
	switch req.Method {
	case "openhuman.tool_registry_list":
		return s.registryList(req.Params, client)
	case "openhuman.tool_registry_get":
		return s.registryGet(req.Params, client)
	}
	c, ok := controllerByMethod[req.Method]
	if !ok {
		return nil, rpcErr(CodeMethodNotFound, "unknown method %q; methods: %s", req.Method, strings.Join(methodNames(), ", "))
	}
	return s.callTool(ctx, c, req, client)
}

// methodNames lists every method the server answers.
func methodNames() []string {
	names := make([]string, 0, len(controllers)+2)
	for _, c := range controllers {
		names = append(names, c.Method())
	}
	return append(names, "openhuman.tool_registry_list", "openhuman.tool_registry_get")
}

// callTool dispatches a controller method into its tool module and audits the call.
func (s *Server) callTool(ctx context.Context, c controller, req *request, client string) (json.RawMessage, *Error) {
	if _, perr := paramsObject(req.Method, req.Params); perr != nil {
		return nil, perr
	}
	if c.Tool == searxngTool && !s.opts.SearXNGEnabled {
		return nil, rpcErr(CodeDisabled, "SearXNG search is not enabled. Set searxng.enabled=true in config.toml or OPENHUMAN_SEARXNG_ENABLED=true, then restart serve.")
	}
	args := req.Params
	if args == nil {
		args = json.RawMessage("{}")
	}
	call := runtime.Call{Tool: c.Tool, Arguments: args, Client: client, RequestID: "rpc-" + strconv.FormatUint(s.seq.Add(1), 10)}
	start := time.Now()
	sem := s.inflight[c.Tool]
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, rpcErr(CodeUnavailable, "%s: gave up waiting for a free slot (%d calls to %s in flight): %v", req.Method, cap(sem), c.Tool, ctx.Err())
	}
	out, err := s.d.Call(ctx, call)
	<-sem
	result, rerr, o := s.shape(ctx, c, req.Method, out, err)

	p, _ := principal.From(ctx)
	entry := audit.Entry{Time: start, Session: client, Payer: s.payerOf(p), Principal: p.Name, RequestID: call.RequestID, Tool: c.Tool,
		Arguments: audit.SummarizeArguments(args), Outcome: audit.OutcomeOK,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if out != nil {
		entry.ModuleSHA256 = out.ModuleSHA256
		entry.Capabilities = audit.Capabilities{HostCalls: out.Usage.HostCalls, BytesIn: out.Usage.BytesIn, BytesOut: out.Usage.BytesOut, Refused: out.Usage.Refused}
	} else {
		entry.ModuleSHA256 = runtime.ModuleDigest(err) // a call that failed in its module
		u := runtime.UsageOf(err)                      // its reads may have reached the client
		entry.Capabilities = audit.Capabilities{HostCalls: u.HostCalls, BytesIn: u.BytesIn, BytesOut: u.BytesOut, Refused: u.Refused}
	}
	entry.Outcome, entry.Error, entry.ErrorID = o.Audit, o.Detail, o.ErrorID
	s.opts.Audit.Record(entry)
	if entry.Outcome == audit.OutcomeCancelled {
		s.log.Debug("rpc: tool call cancelled", "method", req.Method, "tool", c.Tool, "client", client)
	}
	if entry.Outcome == audit.OutcomeError || entry.ErrorID != "" {
		s.log.Warn("rpc: tool call failed", "method", req.Method, "tool", c.Tool, "client", client, "err", entry.Error, "error_id", entry.ErrorID)
	}
	return result, rerr
}

// shape maps a dispatcher answer to a result or a JSON-RPC error through the
// outcome table both servers share (internal/outcome), and returns the outcome
// for the audit line. What the runtime or a store said goes to the log and the
// audit line under an error id; the client gets a stable message with the id.
// Two ends are /rpc's own: a call that ran past the request's budget, and a
// module that is not loaded, named with its state.
func (s *Server) shape(ctx context.Context, c controller, method string, out *runtime.Outcome, err error) (json.RawMessage, *Error, outcome.Outcome) {
	o := outcome.Of(ctx, c.Tool, out, err, c.Tool == searxngTool)
	if o.Class == outcome.Failed || o.Class == outcome.Unavailable {
		if err != nil && ctx.Err() != nil {
			e := hiddenErr(CodeInternalError, err.Error(), "%s: the call was cancelled: the request ran past its %s budget (error id %s)", method, RequestTimeout)
			return nil, e, outcome.Outcome{Class: outcome.Failed, Kind: audit.FailureTimeout, Detail: err.Error(), ErrorID: e.errorID, Audit: audit.OutcomeError}
		}
		if st := s.unavailableModule(c.Tool); err != nil && st != nil {
			detail := fmt.Sprintf("%v; module %s is %s: %s", err, st.Module.Name, st.State, orDefault(st.Error, "no reason given"))
			e := hiddenErr(CodeUnavailable, detail,
				"%s: tool %s is unavailable: its module %s is %s (error id %s); openhuman.tool_registry_get shows why", method, c.Tool, st.Module.Name, st.State)
			return nil, e, outcome.Outcome{Class: outcome.Unavailable, Kind: audit.FailureUnavailable, Detail: detail, ErrorID: e.errorID, Audit: audit.OutcomeError}
		}
	}
	if o.Class == outcome.OK {
		if t := jsonType(out.Result); t == "object" && json.Valid(out.Result) {
			return out.Result, nil, o
		}
		o = outcome.NotAnObject(c.Tool)
	}
	code, data := CodeInternalError, method+": "+o.Text
	switch o.Class {
	case outcome.Invalid:
		code = CodeInvalidParams
	case outcome.NotFound:
		code = CodeNotFound
	case outcome.UserService, outcome.Unavailable:
		code = CodeUnavailable
	case outcome.Refused:
		code = CodeForbidden
	case outcome.UnknownTool:
		code, data = CodeUnavailable, data+"; `openhuman-core tools list` shows why"
	}
	e := &Error{Code: code, Message: codeMessages[code], Data: data, errorID: o.ErrorID}
	if o.ErrorID != "" {
		e.detail = o.Detail
	}
	return nil, e, o
}

// unavailableModule is the status of tool's module when it cannot answer
// (refused, failed, disabled), or nil when it is loaded.
func (s *Server) unavailableModule(tool string) *runtime.ModuleStatus {
	for _, st := range s.d.Status() {
		for _, n := range st.Tools {
			if n != tool {
				continue
			}
			switch st.State {
			case runtime.StateReady, runtime.StateCompiling:
				return nil
			}
			return &st
		}
	}
	return nil
}

// registryList answers openhuman.tool_registry_list.
func (s *Server) registryList(params json.RawMessage, client string) (json.RawMessage, *Error) {
	m, perr := paramsObject("openhuman.tool_registry_list", params)
	if perr != nil {
		return nil, perr
	}
	if k := firstKey(m); k != "" {
		return nil, rpcErr(CodeInvalidParams, "unknown param '%s' for tool_registry.list (it takes no params)", k)
	}
	return marshalResult(map[string]any{"tools": s.RegistryFor(client)})
}

// registryGet answers openhuman.tool_registry_get.
func (s *Server) registryGet(params json.RawMessage, client string) (json.RawMessage, *Error) {
	m, perr := paramsObject("openhuman.tool_registry_get", params)
	if perr != nil {
		return nil, perr
	}
	raw, ok := m["tool_id"]
	delete(m, "tool_id")
	if k := firstKey(m); k != "" {
		return nil, rpcErr(CodeInvalidParams, "unknown param '%s' for tool_registry.get (it takes only tool_id)", k)
	}
	if !ok || jsonType(raw) == "null" {
		return nil, rpcErr(CodeInvalidParams, "missing required param 'tool_id': the registry id of a tool, e.g. memory.search or tools.searxng_search")
	}
	var id string
	if json.Unmarshal(raw, &id) != nil {
		return nil, rpcErr(CodeInvalidParams, "tool_id must be a string, got %s", jsonType(raw))
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, rpcErr(CodeInvalidParams, "tool_id must be a non-empty string")
	}
	for _, e := range s.RegistryFor(client) {
		if e.ToolID == id {
			return marshalResult(map[string]any{"tool": e})
		}
	}
	return nil, rpcErr(CodeNotFound, "tool not found in registry: %s (openhuman.tool_registry_list shows every tool_id)", id)
}

// firstKey returns the smallest key of m, or "".
func firstKey(m map[string]json.RawMessage) string {
	first := ""
	for k := range m {
		if first == "" || k < first {
			first = k
		}
	}
	return first
}

func marshalResult(v any) (json.RawMessage, *Error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, hiddenErr(CodeInternalError, fmt.Sprintf("encode result: %v", err), "could not encode the result: internal error (error id %s)")
	}
	return b, nil
}

// clientLabel turns an X-OpenHuman-Agent header into the provenance label rpc or rpc:<agent>.
func clientLabel(agent string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.TrimSpace(agent)) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 64 {
				break
			}
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "rpc"
	}
	return "rpc:" + b.String()
}

// writeJSON writes v as a JSON response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // readable <, > and & in error messages
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error","data":"could not encode the response"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
