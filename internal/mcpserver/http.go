package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Streamable HTTP (MCP 2025-11-25 transport) for serve's /mcp. go-sdk's
// StreamableHTTPHandler does the transport (POST with JSON or SSE answers, the GET
// stream, DELETE, Mcp-Session-Id, MCP-Protocol-Version, idle expiry); it serves
// the same *mcp.Server as stdio, so the catalogue, sandbox, limits, tool_names
// rule and audit are the same. This file adds what the SDK leaves to the server:
// a bound on live sessions and on requests in flight per session.

// Tunables of the /mcp endpoint.
const (
	// DefaultHTTPIdleTimeout closes a session that sent nothing for this long: a
	// client that went away without DELETE leaves no state behind for long (and
	// when the server is full the oldest idle session makes room at once,
	// limits.go); a client whose session expired gets 404 and, as the transport
	// requires, initializes a new one, a single round trip.
	DefaultHTTPIdleTimeout = 5 * time.Minute
	// DefaultHTTPMaxSessions bounds live sessions: each holds a little memory and
	// a goroutine; a few clients per user are normal, thousands are a bug or abuse.
	DefaultHTTPMaxSessions = 64
	// DefaultHTTPMaxInFlight bounds the requests one session has in flight: the
	// runtime runs two calls per module at once with warm instances (DESIGN §7),
	// so more than a few only queue, holding connections.
	DefaultHTTPMaxInFlight = 8
	// maxHTTPBody bounds a POST body, as MaxLineBytes bounds a stdio line.
	maxHTTPBody = MaxLineBytes
)

// HTTPOptions configure HTTPHandler; zero values take the defaults above.
type HTTPOptions struct {
	IdleTimeout time.Duration
	MaxSessions int
	MaxInFlight int
}

// HTTPHandler serves this server's tools over Streamable HTTP. The caller puts it
// behind authentication and the Host/Origin check (serve: the bearer token and
// checkHost of /rpc).
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultHTTPIdleTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultHTTPMaxSessions
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultHTTPMaxInFlight
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdk }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      o.IdleTimeout,
		Logger:              s.log.With("component", "go-sdk-http"),
		MaxRequestBodyBytes: maxHTTPBody,
		// serve's own Host/Origin check (with [server] allowed_hosts) runs first;
		// the SDK's would refuse the allowed names that are not localhost.
		DisableLocalhostProtection: true,
	})
	s.httpMaxInFlight.Store(int64(o.MaxInFlight))
	return &httpBounds{srv: s, next: sdk, opts: o, sessions: map[string]*httpSession{}}
}

// boundHTTPCalls refuses a request of an HTTP session (one with a session id;
// stdio sessions have none) beyond HTTPOptions.MaxInFlight. It counts in the
// server's method handler, which returns before the answer is sent, so a
// client never sees an answer while its request still counts.
func (s *Server) boundHTTPCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		limit := s.httpMaxInFlight.Load()
		ss := sessionOf(req)
		if limit <= 0 || ss == nil || ss.ID() == "" || method == "initialize" || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		v, _ := s.httpCalls.LoadOrStore(ss.ID(), new(atomic.Int64))
		n := v.(*atomic.Int64)
		if n.Add(1) > limit {
			n.Add(-1)
			return nil, &jsonrpc.Error{Code: -32000, Message: fmt.Sprintf("this session has %d requests in flight, the most allowed: wait for an answer before sending more", limit)}
		}
		defer n.Add(-1)
		return next(ctx, method, req)
	}
}

type httpSession struct {
	lastSeen time.Time
	open     int    // HTTP requests of the session being served
	payer    string // whom its audit lines are charged to (auditPayer)
}

// httpBounds limits live sessions and in-flight requests per session.
type httpBounds struct {
	srv      *Server
	next     http.Handler
	opts     HTTPOptions
	mu       sync.Mutex
	sessions map[string]*httpSession
}

// sessionHeader is the Streamable HTTP session header.
const sessionHeader = "Mcp-Session-Id"

func (b *httpBounds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionHeader)
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, maxHTTPBody+1))
		if err != nil {
			writeRPCError(w, http.StatusBadRequest, nil, codeParseError, "reading the request body: "+err.Error())
			return
		}
		if len(body) > maxHTTPBody {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, fmt.Sprintf("request body exceeds %d bytes", maxHTTPBody))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	markRequestID(r, body) // the audit line's request_id (limits.go)
	now := time.Now()
	b.mu.Lock()
	for sid, ss := range b.sessions { // the SDK closes idle sessions after the same time
		if ss.open == 0 && now.Sub(ss.lastSeen) > b.opts.IdleTimeout {
			delete(b.sessions, sid)
			b.srv.httpCalls.Delete(sid)
			b.srv.opts.Audit.EndSession(ss.payer, "mcp-http:"+sid) // limits.go
		}
	}
	ss := b.sessions[id]
	var evict string
	if id == "" && r.Method == http.MethodPost && len(b.sessions) >= b.opts.MaxSessions {
		evict = b.oldestIdle() // limits.go
	}
	switch {
	case id == "" && r.Method == http.MethodPost && len(b.sessions) >= b.opts.MaxSessions && evict == "":
		b.mu.Unlock()
		writeRPCError(w, http.StatusOK, requestID(body), -32000, // clients show a JSON-RPC error, not a bare 503
			fmt.Sprintf("too many MCP sessions (%d), each with a request in flight or a stream open: end one with DELETE /mcp, or wait for answers", b.opts.MaxSessions))
		return
	}
	var evictPayer string
	if evict != "" {
		evictPayer = b.sessions[evict].payer
		delete(b.sessions, evict)
		b.srv.httpCalls.Delete(evict)
	}
	if ss != nil {
		ss.lastSeen = now
		ss.open++
		defer func() { b.mu.Lock(); ss.open--; ss.lastSeen = time.Now(); b.mu.Unlock() }()
	}
	b.mu.Unlock()
	if evict != "" {
		b.close(r, evict, evictPayer)
	}

	rec := &sessionRecorder{ResponseWriter: w}
	if id == "" {
		// A new session counts from the moment its id is sent, before the
		// client can read the answer and open another.
		rec.onHeader = func(sid string, status int) {
			if sid != "" && status < 300 {
				b.mu.Lock()
				b.sessions[sid] = &httpSession{lastSeen: time.Now(), payer: auditPayer(nil, r.Header)}
				b.mu.Unlock()
			}
		}
	}
	b.next.ServeHTTP(rec, r)

	if r.Method == http.MethodDelete && id != "" {
		b.mu.Lock()
		delete(b.sessions, id)
		b.mu.Unlock()
		b.srv.httpCalls.Delete(id)
		b.srv.opts.Audit.EndSession(auditPayer(nil, r.Header), "mcp-http:"+id) // limits.go
	}
}

// sessionRecorder notes the session id and status the SDK answers with.
type sessionRecorder struct {
	http.ResponseWriter
	status   int
	onHeader func(session string, status int)
}

func (r *sessionRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		if r.onHeader != nil {
			r.onHeader(r.Header().Get(sessionHeader), code)
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *sessionRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(p)
}

// Flush lets the SDK stream SSE through the recorder.
func (r *sessionRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (r *sessionRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func requestID(body []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	return m.ID
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Write(append(b, '\n'))
}
