package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/mcpserver"
	"github.com/openhuman/openhuman-core/internal/principal"
	"github.com/openhuman/openhuman-core/internal/rpcserver"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

// newServeCmd is `openhuman-core serve`: the HTTP JSON-RPC server.
func newServeCmd() *cobra.Command {
	var addr string
	var watchSources bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the memory tools over MCP (Streamable HTTP at /mcp) and HTTP JSON-RPC",
		Long: `serve answers MCP over Streamable HTTP at /mcp and JSON-RPC 2.0 at POST /rpc (both
need the bearer token), and GET /health, GET / (a short description) and GET /schema (an
OpenRPC document of every method), which are open.

/mcp is the same MCP server as "openhuman-core mcp" (tools, resources, sandbox, limits,
tool_names, audit) for clients that connect by URL: POST, GET (the notification stream)
and DELETE, with Mcp-Session-Id. The token is a static bearer token; there is no OAuth, so
give it to the client as a header, e.g.
  claude mcp add --transport http openhuman http://127.0.0.1:7788/mcp --header "Authorization: Bearer <token>"
  npx mcp-remote http://127.0.0.1:7788/mcp --header "Authorization: Bearer <token>"
(VS Code and Cursor: "headers": {"Authorization": "Bearer <token>"}). A web page from an
allowed origin may call /mcp (CORS preflights are answered); other origins get 403. Tools
installed or updated in the tools folder while serve runs reach every session
(notifications/tools/list_changed).

Methods: openhuman.memory_tree_search, _recall, _get_chunk, _list_chunks, _top_entities,
_list_sources, openhuman.tools_searxng_search and openhuman.tools_web_search (the same
SearXNG search; each dispatched into the same WebAssembly module as the MCP tool, with the
MCP tool's params), openhuman.tool_registry_list and openhuman.tool_registry_get (an agent
named in the X-OpenHuman-Agent header sees only the tools its allowed_agents admit).

The operator's bearer token is OPENHUMAN_CORE_TOKEN, or one generated once into
<workspace>/core.token (mode 0600) and printed on stderr that once; it reads everything.
"openhuman-core tokens add NAME --allow GLOB" mints a token per person or agent that reads
only the sources its scope allows; the audit log names the principal of every call. Binding to a non-loopback address requires
OPENHUMAN_CORE_TOKEN to be set explicitly.

Requests must name this server in their Host header (and Origin header, when a browser sends
one): 127.0.0.1, localhost or [::1] on the port serve listens on, the address it listens on, or
a name in [server] allowed_hosts of config.toml. Others get 403, so a web page on another site
cannot reach serve through a DNS name rebound to 127.0.0.1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if watchSources { // the watch loop of watch.go beside the server
				stop, err := startServeWatch(cmd.Context(), cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer stop()
			}
			return runServe(cmd.Context(), addr, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address host:port (default from [server] host/port or OPENHUMAN_CORE_HOST/_PORT: 127.0.0.1:7788)")
	cmd.Flags().BoolVar(&watchSources, "watch", false, "also keep the [[sources]] of config.toml current, as `watch` does")
	return cmd
}

// runServe loads the configuration, token and runtime, then serves until ctx is
// cancelled (SIGINT/SIGTERM), letting in-flight calls finish.
func runServe(ctx context.Context, addr string, stderr io.Writer) error {
	log := setupLogging(stderr)
	cfg, err := loadConfig(log)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if addr == "" {
		addr = net.JoinHostPort(cfg.Server.Host, strconv.Itoa(cfg.Server.Port))
	}
	token, source, err := rpcserver.LoadToken(os.Getenv(rpcserver.TokenEnv), cfg.TokenPath())
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := rpcserver.CheckExposure(addr, token, source); err != nil {
		return &exitError{code: 2, err: err}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another serve running? choose another port with --addr or OPENHUMAN_CORE_PORT)", addr, err)
	}
	defer ln.Close()

	// The runtime outlives the signal: in-flight calls finish during the graceful
	// shutdown, then closeHost releases the modules.
	host, closeHost, err := openHost(context.WithoutCancel(ctx), cfg, log)
	if err != nil {
		return err
	}
	defer closeHost()

	al := openAudit(cfg, log)
	defer al.Close()
	auditRefusedHostCalls(host, al)

	// MCP over Streamable HTTP at /mcp: the same server as `mcp` (catalogue,
	// sandbox, limits, tool_names, audit), one session per client.
	// The operator token and the principals of `tokens add` (principals.json,
	// read again when it changes): each call runs with its principal's scope.
	principals := principal.NewSet(token, principal.Path(cfg.Workspace))
	if err := principals.Err(); err != nil {
		return &exitError{code: 2, err: err}
	}
	msrv, err := mcpserver.New(mcpserver.Options{
		Version: Version(), Dispatcher: host, Audit: al, Logger: log,
		ToolsCanChange: true, SearXNGEnabled: cfg.SearXNG.Enabled, ToolNames: cfg.MCP.ToolNames,
		Principals: principals,
	})
	if err != nil {
		return err
	}
	host.OnChange(msrv.Refresh)
	msrv.Refresh() // the tool set may have changed while it was built

	srv, err := rpcserver.New(host, rpcserver.Options{
		MCP:            msrv.HTTPHandler(mcpserver.HTTPOptions{}),
		Token:          token,
		Principals:     principals,
		Version:        Version(),
		SearXNGEnabled: cfg.SearXNG.Enabled,
		KnownTools:     builtinManifests(log),
		AllowedHosts:   cfg.Server.AllowedHosts,
		Audit:          al,
		Logger:         log,
	})
	if err != nil {
		return err
	}

	// The tools directory and policy.toml are watched as in `mcp`: a tool
	// installed, updated or removed while serve runs is swapped in (a call in
	// flight finishes on the module it started with), and every /mcp session is
	// sent notifications/tools/list_changed on its GET stream.
	defer watchTools(ctx, host, cfg, log)()
	// The token is printed once, when it is generated; later starts say where it is.
	switch source {
	case rpcserver.TokenFromEnv:
		fmt.Fprintf(stderr, "openhuman-core serve: bearer token from %s\n", rpcserver.TokenEnv)
	case rpcserver.TokenFromGenerated:
		fmt.Fprintf(stderr, "openhuman-core serve: generated bearer token (saved to %s, mode 0600; printed only this once): %s\n", cfg.TokenPath(), token)
	default:
		fmt.Fprintf(stderr, "openhuman-core serve: bearer token in %s\n", cfg.TokenPath())
	}
	fmt.Fprintf(stderr, "openhuman-core serve: listening on http://%s (POST /rpc; MCP at /mcp; GET /, /health, /schema); Ctrl-C stops\n", ln.Addr())
	if err := rpcserver.Serve(ctx, ln, srv.Handler(), rpcserver.DefaultShutdownTimeout, log); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "openhuman-core serve: stopped")
	return nil
}

// builtinManifests describes the first-party tools the runtime may not serve (the
// SearXNG tool while disabled), from the manifests inside the embedded modules, so the
// registry lists them with their real schemas. A module that cannot be read is
// skipped: the registry then falls back to what the runtime's status knows.
func builtinManifests(log *slog.Logger) []runtime.Tool {
	m, err := toolswasm.Get("searxng_search")
	if err != nil {
		log.Warn("tool registry: reading the embedded searxng_search module", "err", err)
		return nil
	}
	man, err := policy.ReadManifestNamed(m.Wasm, m.Name+".wasm")
	if err != nil {
		log.Warn("tool registry: reading the searxng_search manifest", "err", err)
		return nil
	}
	var out []runtime.Tool
	for _, t := range man.Tools {
		out = append(out, runtime.Tool{
			Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			Annotations: t.Annotations, AllowedAgents: []string{"*"},
			Module: runtime.ModuleInfo{Name: m.Name + ".wasm", SHA256: m.SHA256, ABI: man.ABI,
				Capabilities: man.Capabilities, Limits: man.Limits, Origin: runtime.OriginBuiltin},
		})
	}
	return out
}
