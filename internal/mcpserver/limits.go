package mcpserver

import (
	"context"
	"net/http"
	"time"

	"github.com/openhuman/openhuman-core/internal/rpcwire"
)

// What /mcp adds to the SDK's session handling (issue 39): when the server
// is at its session bound, the session idle longest (no request in flight,
// no stream open) is closed to make room for the new client, so abandoned
// sessions cannot lock clients out (finding 6); and every tools/call carries
// its JSON-RPC id to the audit line (finding 7). Requests, bodies and streams
// per bearer token are charged before this handler runs, by serve's shared
// limiter (internal/admission, rpcserver/mcplimits.go).

// requestIDHeader carries a POST's JSON-RPC id from httpBounds to the tool
// handler (the SDK hands the handler the HTTP header, not the id). The server
// sets it on every request, removing any the client sent.
const requestIDHeader = "X-Openhuman-Core-Request-Id"

// markRequestID sets requestIDHeader to body's JSON-RPC id as the audit log
// writes it (the stdio rule: idLabel of the canonical id), or removes it.
func markRequestID(r *http.Request, body []byte) {
	r.Header.Del(requestIDHeader)
	raw := requestID(body)
	if raw == nil {
		return
	}
	if key, err := rpcwire.CanonicalID(raw); err == nil {
		r.Header.Set(requestIDHeader, idLabel(key))
	}
}

// httpRequestID is the id markRequestID set, and whether the call came over
// HTTP at all (hdr nil: stdio, whose line filter puts the id in _meta).
func httpRequestID(hdr http.Header) (string, bool) {
	if hdr == nil {
		return "", false
	}
	return hdr.Get(requestIDHeader), true
}

// oldestIdle is the session with nothing in flight that was seen longest
// ago, "" when every session is busy. b.mu is held.
func (b *httpBounds) oldestIdle() string {
	var id string
	var seen time.Time
	for sid, ss := range b.sessions {
		if ss.open == 0 && (id == "" || ss.lastSeen.Before(seen)) {
			id, seen = sid, ss.lastSeen
		}
	}
	return id
}

// close ends session id in the SDK as its client's DELETE would, so its
// state and goroutines go and a later request with its id gets 404; a count
// of audit lines dropped over payer's budget is written then.
func (b *httpBounds) close(r *http.Request, id, payer string) {
	del, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	del.Header.Set(sessionHeader, id)
	rec := &statusOnly{header: http.Header{}}
	b.next.ServeHTTP(rec, del)
	b.srv.opts.Audit.EndSession(payer, "mcp-http:"+id)
	b.srv.log.Info("mcp over HTTP: closed the session idle longest to make room for a new client", "session", id, "status", rec.status)
}

// statusOnly is a ResponseWriter keeping only the status.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) Write(p []byte) (int, error) { return len(p), nil }
func (s *statusOnly) WriteHeader(code int)        { s.status = code }
