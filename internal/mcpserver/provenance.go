package mcpserver

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BareLabel is the provenance label of a session whose client gave no usable name.
const BareLabel = "mcp"

// NormalizeClientName turns an MCP clientInfo.name into the provenance suffix:
// trimmed, lowercased, each run of characters that are not ASCII letters or digits
// replaced by one "-", with leading and trailing "-" removed. A name with no ASCII
// letter or digit normalises to "".
func NormalizeClientName(name string) string {
	var b strings.Builder
	pendingDash := false
	for _, r := range strings.TrimSpace(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		default:
			pendingDash = true
			continue
		}
		if pendingDash && b.Len() > 0 {
			b.WriteByte('-')
		}
		pendingDash = false
		b.WriteRune(r)
	}
	return b.String()
}

// LabelFor returns the provenance label for a client name: "mcp:<normalised>", or
// BareLabel when the name normalises to nothing.
func LabelFor(name string) string {
	if n := NormalizeClientName(name); n != "" {
		return BareLabel + ":" + n
	}
	return BareLabel
}

// sessionLabel is the label fixed by the session's first initialize (the SDK keeps
// the first InitializeParams; this server answers later initializes itself).
func sessionLabel(ss *mcp.ServerSession) string {
	if ss == nil {
		return BareLabel
	}
	p := ss.InitializeParams()
	if p == nil || p.ClientInfo == nil {
		return BareLabel
	}
	return LabelFor(p.ClientInfo.Name)
}

// sessionOf is the server session a request came in on (nil if none).
func sessionOf(req mcp.Request) *mcp.ServerSession {
	if req == nil {
		return nil
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return ss
}
