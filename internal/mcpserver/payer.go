package mcpserver

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
)

// auditPayer is whom a call's audit line is charged to (audit.Entry.Payer):
// over HTTP the bearer token, the one identity such a client cannot mint anew
// (session ids and clientInfo.name are its own); on stdio the process's one
// session, which cannot rename itself.
// hdr is the HTTP request's header, nil on stdio.
func auditPayer(ss *mcp.ServerSession, hdr http.Header) string {
	if hdr != nil {
		h := hdr.Get("Authorization")
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			return audit.TokenPayer(strings.TrimSpace(h[7:]))
		}
		if ss != nil {
			return "mcp-http:" + ss.ID()
		}
		return "mcp-http"
	}
	return "mcp-stdio"
}

// requestHeader is the HTTP header a call came with, nil on stdio.
func requestHeader(req *mcp.CallToolRequest) http.Header {
	if req.Extra != nil {
		return req.Extra.Header
	}
	return nil
}

// instanceOwner is who may reuse the instance a call runs in (runtime.Call.Owner):
// the MCP session, which the server mints, rather than clientInfo.name, which
// two clients may share. On stdio the process has one session.
func instanceOwner(ss *mcp.ServerSession) string {
	if ss != nil && ss.ID() != "" {
		return "mcp-session:" + ss.ID()
	}
	return "mcp-stdio"
}
