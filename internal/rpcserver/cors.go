package rpcserver

import (
	"net/http"
	"strconv"
)

// CORS for /mcp, so that a web page served from an allowed origin (this server's
// own addresses or [server] allowed_hosts) can speak MCP to it from a browser.
// checkHost runs first and answers 403 to any other Origin, so every request
// that reaches corsMCP with an Origin header comes from an allowed one; this
// adds what the browser needs to let the page read the answer.

// corsMaxAge is how long (seconds) a browser may reuse a preflight answer: the
// allowed methods and headers change only with a new binary.
const corsMaxAge = 600

// corsAllowHeaders are the request headers a Streamable HTTP client sends.
const corsAllowHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"

// corsExposeHeaders are the answer headers a page must be able to read: the
// session id it sends back, the negotiated version, and why a 401 refused it.
const corsExposeHeaders = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate"

// corsMCP answers a CORS preflight (OPTIONS with Access-Control-Request-Method)
// itself, without the bearer token, which a browser never sends on one, and
// marks every other answer to an allowed Origin as readable by it.
func corsMCP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
