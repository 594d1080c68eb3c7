package rpcserver

import (
	"net/http"

	"github.com/openhuman/openhuman-core/internal/principal"
)

// chargeMCP charges /mcp's requests to the limiter /rpc charges (issue 39,
// finding 1): a POST is one request charged its Content-Length (or the MCP
// message cap when it sends none) before its body is read, a DELETE one
// request of no body, and a GET (the server-to-client stream) one stream
// slot for as long as it stays open. Beyond a bound the client gets HTTP 429
// with a JSON-RPC error naming it, and Retry-After.
func (s *Server) chargeMCP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := principal.From(r.Context()) // set by requireToken
		payer := s.payerOf(p)
		var release func()
		switch r.Method {
		case http.MethodGet:
			rel, refused := s.limiter.Stream(payer)
			if refused != nil {
				s.refuseMCP(w, refused.Reason)
				return
			}
			release = rel
		case http.MethodPost, http.MethodDelete:
			n := int64(0)
			if r.Method == http.MethodPost {
				n = chargeOf(r, s.opts.MCPMaxBodyBytes)
			}
			rel, refused := s.limiter.Request(payer, n)
			if refused != nil {
				s.refuseMCP(w, refused.Reason)
				return
			}
			release = rel
		}
		if release != nil {
			defer release()
		}
		next.ServeHTTP(w, r)
	})
}

// mcpCodeRefused is the JSON-RPC code of an /mcp request refused by the
// limiter (the MCP server's CodeSessionBusy: a bound on what is in flight).
const mcpCodeRefused = -32001

func (s *Server) refuseMCP(w http.ResponseWriter, reason string) {
	s.log.Debug("mcp over HTTP: request refused", "reason", reason)
	w.Header().Set("Retry-After", "1")
	// An MCP client shows the message: it is the reason itself.
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": mcpCodeRefused, "message": reason}})
}
