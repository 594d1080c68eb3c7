package rpcserver

import (
	"net/http"

	"github.com/openhuman/openhuman-core/internal/admission"
)

// What the holders of the bearer token may have in flight on /rpc and /mcp
// together (internal/admission; issue 39, finding 1 extended the bound to
// /mcp, mcplimits.go) (issue 29, finding 13: stdio caps each session at 32 calls and 16 MiB of
// arguments; /rpc had no cap beyond its per-tool slots, so every waiting
// request kept its body of up to 1 MiB for up to RequestTimeout).
//
// The rule is stdio's — requests and bytes held, refused at once beyond
// either — counted per bearer token rather than per connection: an HTTP/1.1
// connection carries one request at a time and a client opens connections
// at will, so a per-connection cap bounds nothing, while the token is the one
// identity a client cannot mint. The server has one token, so the bound is
// the whole /rpc surface's; it is twice stdio's because one token serves every
// HTTP agent of the server (50 concurrent agents, the load test's case, fit)
// where a stdio session is one client.
const (
	// DefaultMaxRequestsInFlight bounds the /rpc requests being read or served
	// at once (a batch is one request: its calls run one after another).
	DefaultMaxRequestsInFlight = admission.DefaultMaxRequests
	// DefaultMaxBodyBytesInFlight bounds the request bodies they hold: each is
	// charged its Content-Length, or MaxBodyBytes when it sends none, before
	// its body is read.
	DefaultMaxBodyBytesInFlight = admission.DefaultMaxBodyBytes
)

// admit reserves one request of up to n body bytes for the token in the
// limiter /rpc and /mcp share (internal/admission), or returns the error to
// answer with (CodeUnavailable: /rpc's -32001 already means "not found"; the
// same code answers a call that gave up waiting for a tool's slot).
func (s *Server) admit(payer string, n int64) (release func(), err *Error) {
	release, refused := s.limiter.Request(payer, n)
	if refused != nil {
		return nil, rpcErr(CodeUnavailable, "%s", refused.Reason)
	}
	return release, nil
}

// bodyCharge is what a request is charged before its body is read.
func (s *Server) bodyCharge(r *http.Request) int64 {
	return chargeOf(r, s.opts.MaxBodyBytes)
}

// chargeOf is r's Content-Length, or limit when it sends none or more.
func chargeOf(r *http.Request, limit int64) int64 {
	if r.ContentLength >= 0 && r.ContentLength <= limit {
		return r.ContentLength
	}
	return limit
}
