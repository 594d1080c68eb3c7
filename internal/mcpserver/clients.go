package mcpserver

import (
	"strings"

	"github.com/openhuman/openhuman-core/internal/config"
)

// Client is one MCP client the README's client table names: what it sends as
// clientInfo.name, which tool-name spelling `tool_names = "auto"` serves it, and
// the public report that decision rests on.
type Client struct {
	// Name is the product as people call it.
	Name string
	// ClientInfo is the clientInfo.name the client sends in initialize ("" when
	// no public record of it was found).
	ClientInfo string
	// Match lists normalised clientInfo.name values (NormalizeClientName) this
	// client is recognised by: an exact value, or a prefix when it ends in "*".
	Match []string
	// Portable is true when the client refuses (or its model API refuses) a tool
	// name outside ^[a-zA-Z0-9_-]{1,64}$: auto serves it the portable names.
	Portable bool
	// Why is the evidence, with the public thread it comes from.
	Why string
	// Config is where the client keeps its MCP servers (for doctor and the README).
	Config string
}

// Clients is the table behind `tool_names = "auto"`, newest evidence as of
// 2026-12. A client not listed (or whose name is not recognised) is served the
// spec's names, so the spec's smoke test (clientInfo "smoke") prints what it
// always printed.
var Clients = []Client{
	{Name: "Claude Desktop / claude.ai", ClientInfo: "claude-ai", Match: []string{"claude-ai"}, Portable: true,
		Why:    "refuses the whole server: tools.N.FrontendRemoteMcpToolDefinition.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$' (loomle/loomle#168, barryw/ImmichMCP#3, l22-io/orchard-mcp#14)",
		Config: "claude_desktop_config.json"},
	{Name: "Cursor", ClientInfo: "cursor-vscode", Match: []string{"cursor*"}, Portable: true,
		Why:    "drops dotted tools (\"Tool name must only contain alphanumeric characters and underscores\", webstudio-is/webstudio#5960) and calls docs.find as docs_find (gemini-cli-extensions/workspace#168)",
		Config: "~/.cursor/mcp.json"},
	{Name: "OpenAI Codex", ClientInfo: "codex-mcp-client", Match: []string{"codex*"}, Portable: true,
		Why:    "the OpenAI API answers 400 \"Invalid 'tools[N].name': ... '^[a-zA-Z0-9_-]+$'\" (openai/codex#8174, cboxdk/statamic-mcp#3)",
		Config: "~/.codex/config.toml"},
	{Name: "GitHub Copilot CLI", ClientInfo: "", Match: []string{"copilot*", "github-copilot*"}, Portable: true,
		Why:    "every prompt fails with CAPIError 400 \"tools.N.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'\" (github/copilot-cli#2581, #1879)",
		Config: "~/.copilot/mcp-config.json"},
	{Name: "Zed", ClientInfo: "Zed", Match: []string{"zed*"}, Portable: true,
		Why:    "the agent panel forwards names to Anthropic/OpenAI, which refuse them (zed-industries/zed#40928); sanitised only since zed-industries/zed#60154, so older releases still fail",
		Config: "~/.config/zed/settings.json (context_servers)"},
	{Name: "VS Code (GitHub Copilot Chat)", ClientInfo: "Visual Studio Code", Match: []string{"visual-studio-code*"}, Portable: false,
		Why:    "warns and rewrites dots itself; tools still work (microsoft/vscode#308463)",
		Config: ".vscode/mcp.json"},
	{Name: "Claude Code", ClientInfo: "claude-code", Match: []string{"claude-code"}, Portable: false,
		Why:    "rewrites names to mcp__server__tool itself; dotted names work",
		Config: "claude mcp add"},
	{Name: "Windsurf", ClientInfo: "", Match: []string{"windsurf*"}, Portable: false,
		Why:    "no public report of refused tool names found (issues and docs searched for Windsurf + tool name pattern); spec names",
		Config: "~/.codeium/windsurf/mcp_config.json"},
	{Name: "Cline", ClientInfo: "Cline", Match: []string{"cline*"}, Portable: false,
		Why:    "calls tools through its own use_mcp_tool with the name as text; no public report of refused dotted names found",
		Config: "cline_mcp_settings.json"},
	{Name: "Continue", ClientInfo: "", Match: []string{"continue*"}, Portable: false,
		Why:    "no public report of refused tool names found; spec names",
		Config: "~/.continue/config.yaml"},
	{Name: "Goose", ClientInfo: "goose", Match: []string{"goose*"}, Portable: false,
		Why:    "prefixes names as extension__tool and sanitises names for the model (aaif-goose/goose#7740 uses its name_to_key); no report of refused dotted tool names found",
		Config: "~/.config/goose/config.yaml"},
	{Name: "LM Studio", ClientInfo: "", Match: []string{"lm-studio*", "lmstudio*"}, Portable: false,
		Why:    "no public report of refused tool names found; spec names",
		Config: "~/.lmstudio/mcp.json"},
}

// ClientFor returns the table's entry for a clientInfo.name (nil when unknown).
func ClientFor(clientName string) *Client {
	n := NormalizeClientName(clientName)
	if n == "" {
		return nil
	}
	for i := range Clients {
		for _, m := range Clients[i].Match {
			if p, ok := strings.CutSuffix(m, "*"); ok && strings.HasPrefix(n, p) || m == n {
				return &Clients[i]
			}
		}
	}
	return nil
}

// PortableNamesFor reports whether a session whose client sent clientName is
// served portable tool names under the tool_names setting.
func PortableNamesFor(setting, clientName string) bool {
	switch setting {
	case config.ToolNamesPortable:
		return true
	case config.ToolNamesSpec:
		return false
	}
	c := ClientFor(clientName)
	return c != nil && c.Portable
}
