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

// SplitBridge separates a client name from the bridge that relayed it: a
// bridge such as mcp-remote renames the client "claude-ai (via mcp-remote
// 0.15.1)". client is the name the client itself sent ("claude-ai"), bridge
// what the parentheses said ("mcp-remote 0.15.1"), "" when there was none.
// Matching the client table and the provenance label use client only, so a
// bridge and each of its releases do not make a new client of the same one.
func SplitBridge(name string) (client, bridge string) {
	t := strings.TrimSpace(name)
	if !strings.HasSuffix(t, ")") {
		return name, ""
	}
	open := strings.LastIndex(t, "(")
	if open <= 0 {
		return name, ""
	}
	inner := strings.TrimSpace(t[open+1 : len(t)-1])
	via, ok := cutPrefixFold(inner, "via ")
	client = strings.TrimSpace(t[:open])
	if !ok || client == "" || strings.TrimSpace(via) == "" {
		return name, ""
	}
	return client, strings.TrimSpace(via)
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// LabelFor returns the provenance label for a client name: "mcp:<normalised>", or
// BareLabel when the name normalises to nothing. A bridge's "(via …)" is not
// part of it (SplitBridge).
func LabelFor(name string) string {
	name, _ = SplitBridge(name)
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

// sessionBridge is the bridge that relayed the session's client ("" when
// none): written to the audit line, never part of the label.
func sessionBridge(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	p := ss.InitializeParams()
	if p == nil || p.ClientInfo == nil {
		return ""
	}
	_, bridge := SplitBridge(p.ClientInfo.Name)
	return bridge
}

// sessionOf is the server session a request came in on (nil if none).
func sessionOf(req mcp.Request) *mcp.ServerSession {
	if req == nil {
		return nil
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return ss
}
