// Package admission is serve's accounting of what HTTP clients hold at once:
// requests in flight, the body bytes they may hold and long-lived streams,
// charged per principal (the bearer token a request authenticated with) and in
// total, before the resource is spent. /rpc and /mcp charge the same Limiter,
// so a client cannot double its share by switching endpoints (issue 39,
// finding 1: /rpc was bounded, /mcp took 1.5 GB from one token).
//
// A request is charged its Content-Length (or the endpoint's body cap when it
// sends none) before a byte of its body is read; a stream (the MCP GET stream)
// is charged a slot for as long as it is open. Beyond any bound the caller
// answers at once with the Refusal's text, which names the bound.
package admission

import (
	"fmt"
	"sync"
)

// Defaults. serve has one bearer token, so its per-principal and total
// bounds coincide today; they are separate so that a second principal (a
// second token) cannot take a first one's share.
const (
	// DefaultMaxRequests bounds the HTTP requests (on /rpc and POST /mcp) one
	// principal has being read or served at once: 50 concurrent agents, the
	// load test's case, fit with room; more only queue behind the per-tool
	// slots, each holding its body.
	DefaultMaxRequests = 64
	// DefaultMaxBodyBytes bounds the body bytes those requests may hold (each
	// is charged before it is read): 32 MiB is 32 maximal /rpc bodies, and
	// keeps a token's worst case to tens of MiB after decoding.
	DefaultMaxBodyBytes = 32 << 20
	// DefaultMaxStreams bounds the open MCP GET (server-to-client) streams of
	// one principal: each holds a connection and a goroutine for as long as
	// the client likes; a few per client are normal.
	DefaultMaxStreams = 16
	// totalFactor is how many principals' worth the totals allow.
	totalFactor = 1
)

// Limits are the bounds of a Limiter; zero values take the defaults.
type Limits struct {
	MaxRequests  int   // per principal
	MaxBodyBytes int64 // per principal
	MaxStreams   int   // per principal
	// Totals across principals (default: the per-principal bound × 1).
	TotalRequests  int
	TotalBodyBytes int64
	TotalStreams   int
}

func (l Limits) withDefaults() Limits {
	if l.MaxRequests <= 0 {
		l.MaxRequests = DefaultMaxRequests
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = DefaultMaxStreams
	}
	if l.TotalRequests <= 0 {
		l.TotalRequests = l.MaxRequests * totalFactor
	}
	if l.TotalBodyBytes <= 0 {
		l.TotalBodyBytes = l.MaxBodyBytes * totalFactor
	}
	if l.TotalStreams <= 0 {
		l.TotalStreams = l.MaxStreams * totalFactor
	}
	return l
}

// Refusal is why a request or stream was not admitted.
type Refusal struct {
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// Limiter counts what each principal and all of them hold. Safe for
// concurrent use; the zero value is not usable (use New).
type Limiter struct {
	lim   Limits
	mu    sync.Mutex
	by    map[string]*held
	total held
}

type held struct {
	requests int
	bytes    int64
	streams  int
}

// New returns a Limiter with lim (zero fields: the defaults).
func New(lim Limits) *Limiter {
	return &Limiter{lim: lim.withDefaults(), by: map[string]*held{}}
}

// Limits are the bounds in force.
func (l *Limiter) Limits() Limits { return l.lim }

// Request charges one request of up to n body bytes to principal, or refuses
// it naming the bound. release (idempotent) gives the charge back.
func (l *Limiter) Request(principal string, n int64) (release func(), err *Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.of(principal)
	switch {
	case h.requests >= l.lim.MaxRequests:
		return nil, &Refusal{fmt.Sprintf("too many HTTP requests in flight for this token (%d, the limit, shared by /rpc and /mcp); wait for answers before sending more", h.requests)}
	case l.total.requests >= l.lim.TotalRequests:
		return nil, &Refusal{fmt.Sprintf("the server has %d HTTP requests in flight, the most it serves at once; wait for answers before sending more", l.total.requests)}
	case h.bytes+n > l.lim.MaxBodyBytes:
		return nil, &Refusal{fmt.Sprintf("the HTTP requests in flight for this token hold %d bytes of body and this one up to %d more, over the %d-byte limit (shared by /rpc and /mcp); wait for answers before sending more", h.bytes, n, l.lim.MaxBodyBytes)}
	case l.total.bytes+n > l.lim.TotalBodyBytes:
		return nil, &Refusal{fmt.Sprintf("the server's HTTP requests in flight hold %d bytes of body and this one up to %d more, over its %d-byte limit; wait for answers before sending more", l.total.bytes, n, l.lim.TotalBodyBytes)}
	}
	h.requests++
	h.bytes += n
	l.total.requests++
	l.total.bytes += n
	return l.releaser(principal, func(h *held) { h.requests--; h.bytes -= n }), nil
}

// Stream charges one long-lived stream to principal, or refuses it.
func (l *Limiter) Stream(principal string) (release func(), err *Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.of(principal)
	switch {
	case h.streams >= l.lim.MaxStreams:
		return nil, &Refusal{fmt.Sprintf("this token has %d MCP streams open (GET /mcp), the limit; close one (or end its session with DELETE /mcp) first", h.streams)}
	case l.total.streams >= l.lim.TotalStreams:
		return nil, &Refusal{fmt.Sprintf("the server has %d MCP streams open (GET /mcp), the most it keeps; close one first", l.total.streams)}
	}
	h.streams++
	l.total.streams++
	return l.releaser(principal, func(h *held) { h.streams-- }), nil
}

// Held is what principal holds now (for tests and diagnostics).
func (l *Limiter) Held(principal string) (requests int, bytes int64, streams int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.by[principal]; h != nil {
		return h.requests, h.bytes, h.streams
	}
	return 0, 0, 0
}

func (l *Limiter) of(principal string) *held {
	h := l.by[principal]
	if h == nil {
		h = &held{}
		l.by[principal] = h
	}
	return h
}

func (l *Limiter) releaser(principal string, undo func(*held)) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			h := l.by[principal]
			undo(h)
			undo(&l.total)
			if *h == (held{}) {
				delete(l.by, principal)
			}
		})
	}
}
