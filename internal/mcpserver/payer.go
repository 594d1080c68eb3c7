package mcpserver

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
)

// auditPayer is whom a call's audit line is charged to (audit.Entry.Payer):
// over HTTP the bearer token, the one identity such a client cannot mint anew
// (session ids and clientInfo.name are its own); on stdio the process's one
// session, which cannot rename itself.
func auditPayer(req *mcp.CallToolRequest) string {
	if req.Extra != nil && req.Extra.Header != nil {
		h := req.Extra.Header.Get("Authorization")
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			return audit.TokenPayer(strings.TrimSpace(h[7:]))
		}
		return "mcp-http:" + req.Session.ID()
	}
	return "mcp-stdio"
}

// instanceOwner is who may reuse the instance a call runs in (runtime.Call.Owner):
// the MCP session, which the server mints, rather than clientInfo.name, which
// two clients may share. On stdio the process has one session.
func instanceOwner(req *mcp.CallToolRequest) string {
	if req.Session != nil && req.Session.ID() != "" {
		return "mcp-session:" + req.Session.ID()
	}
	return "mcp-stdio"
}
