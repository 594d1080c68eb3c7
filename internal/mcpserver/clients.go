package mcpserver

import (
	"strings"

	"github.com/openhuman/openhuman-core/internal/config"
)

// Client is one MCP client the README's client table names: what it sends as
// clientInfo.name, which tool-name spelling `tool_names = "auto"` serves it, and
// the public record that decision rests on.
type Client struct {
	// Name is the product as people call it.
	Name string
	// ClientInfo is the clientInfo.name the client sends in initialize ("" when
	// no public record of it was found).
	ClientInfo string
	// Match lists normalised clientInfo.name values (NormalizeClientName, after
	// SplitBridge) this client is recognised by: an exact value, or a prefix
	// when it ends in "*".
	Match []string
	// Portable is false only for a client known (from its code or docs) to accept
	// tool names with dots: auto serves it the spec's names. Every other client,
	// and every client not in the table, is served the portable names
	// (^[a-zA-Z0-9_-]{1,64}$), which no client refuses.
	Portable bool
	// Why is the evidence, with the public source it comes from.
	Why string
	// Config is where the client keeps its MCP servers (for doctor and the README).
	Config string
}

// Clients is the table behind `tool_names = "auto"`, newest evidence as of
// 2026-12. A client not listed (or whose name is not recognised) is served the
// portable names: a dotted name reaches the model API of most clients as it is,
// and several refuse it (Continue, Cline with native tool calls, LibreChat, any
// agent on a model API that holds function names to ^[a-zA-Z0-9_-]+$).
var Clients = []Client{
	{Name: "Claude Desktop / claude.ai", ClientInfo: "claude-ai", Match: []string{"claude-ai"}, Portable: true,
		Why:    "refuses the whole server: tools.N.FrontendRemoteMcpToolDefinition.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$' (loomle/loomle#168, barryw/ImmichMCP#3, l22-io/orchard-mcp#14); through mcp-remote it sends \"claude-ai (via mcp-remote <version>)\"",
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
	{Name: "Cline", ClientInfo: "Cline", Match: []string{"cline*"}, Portable: true,
		Why:    "with native tool calls the name goes to the model API as it is, which refuses dots; portable names work in both of its modes",
		Config: "cline_mcp_settings.json"},
	{Name: "Continue", ClientInfo: "continue-client", Match: []string{"continue*"}, Portable: true,
		Why:    "sends clientInfo continue-client (continuedev/continue core/context/mcp/MCPConnection.ts) and passes tool names to the model API unchanged, which refuses openhuman_memory.search",
		Config: "~/.continue/config.yaml"},
	{Name: "LibreChat", ClientInfo: "@librechat/api-client", Match: []string{"librechat*"}, Portable: true,
		Why:    "sends clientInfo @librechat/api-client (danny-avila/LibreChat packages/api/src/mcp/connection.ts) and passes tool names to the model API raw",
		Config: "librechat.yaml (mcpServers)"},
	{Name: "Windsurf", ClientInfo: "", Match: []string{"windsurf*"}, Portable: true,
		Why:    "no public record that it accepts dotted names: portable names, which every client accepts",
		Config: "~/.codeium/windsurf/mcp_config.json"},
	{Name: "Goose", ClientInfo: "goose", Match: []string{"goose*"}, Portable: true,
		Why:    "sanitises names for the model itself (aaif-goose/goose#7740, name_to_key), so portable names reach the model unchanged",
		Config: "~/.config/goose/config.yaml"},
	{Name: "LM Studio", ClientInfo: "", Match: []string{"lm-studio*", "lmstudio*"}, Portable: true,
		Why:    "no public record that it accepts dotted names: portable names, which every client accepts",
		Config: "~/.lmstudio/mcp.json"},
	{Name: "VS Code (GitHub Copilot Chat)", ClientInfo: "Visual Studio Code", Match: []string{"visual-studio-code*"}, Portable: false,
		Why:    "warns and rewrites dots itself; tools still work (microsoft/vscode#308463)",
		Config: ".vscode/mcp.json"},
	{Name: "Claude Code", ClientInfo: "claude-code", Match: []string{"claude-code"}, Portable: false,
		Why:    "rewrites names to mcp__server__tool itself; dotted names work",
		Config: "claude mcp add"},
	{Name: "Gemini CLI", ClientInfo: "gemini-cli-mcp-client", Match: []string{"gemini-cli*"}, Portable: false,
		Why:    "keeps dots: generateValidName replaces only [^a-zA-Z0-9_.-] (google-gemini/gemini-cli packages/core/src/tools/mcp-tool.ts), and the Gemini API allows dots in function names",
		Config: "~/.gemini/settings.json"},
	{Name: "MCP Inspector", ClientInfo: "mcp-inspector", Match: []string{"mcp-inspector*"}, Portable: false,
		Why:    "lists and calls tools by their names with no model in between (modelcontextprotocol/inspector)",
		Config: "npx @modelcontextprotocol/inspector"},
	{Name: "smoke test (spec)", ClientInfo: "smoke", Match: []string{"smoke"}, Portable: false,
		Why:    "the spec's smoke test (spec/mcp-server.md) prints the spec's names",
		Config: ""},
}

// ClientFor returns the table's entry for a clientInfo.name (nil when unknown).
// A bridge's "(via …)" is seen through (SplitBridge).
func ClientFor(clientName string) *Client {
	clientName, _ = SplitBridge(clientName)
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
// served portable tool names under the tool_names setting: under auto, every
// client but those the table knows to accept dots.
func PortableNamesFor(setting, clientName string) bool {
	switch setting {
	case config.ToolNamesPortable:
		return true
	case config.ToolNamesSpec:
		return false
	}
	c := ClientFor(clientName)
	return c == nil || c.Portable
}
