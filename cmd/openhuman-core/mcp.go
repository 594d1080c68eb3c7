package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/mcpserver"
	"github.com/openhuman/openhuman-core/internal/toolwatch"
	"github.com/openhuman/openhuman-core/runtime"
)

var mcpCmd = &cobra.Command{
	Use:   "mcp",
	Short: "Serve the memory tree to an MCP client over stdio (read-only)",
	Long: `mcp runs a Model Context Protocol server on stdin/stdout for a local client
such as Claude Desktop, Cursor or Zed. It reads newline-delimited JSON-RPC 2.0 from
stdin and writes one compact JSON line per response to stdout; logs go to stderr
(warnings by default, debug with --verbose). It does not start the HTTP server.

Tools: memory.search, memory.recall, tree.read_chunk, tree.browse,
tree.top_entities, tree.list_sources, and searxng_search when SearXNG is enabled
([searxng] enabled = true in config.toml, or OPENHUMAN_SEARXNG_ENABLED=true),
then the third-party modules policy.toml grants. Every call is written to
<workspace>/audit/audit.jsonl. Send SIGHUP to re-read the tools directory.

The server exits 0 at end of input, after answering every request it has read.`,
	Example: `  printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
    | openhuman-core mcp`,
	Args: cobra.NoArgs,
	RunE: runMCP,
}

func runMCP(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return serveMCP(ctx, os.Stdin, os.Stdout, os.Stderr, isTerminal(os.Stdin))
}

// terminalHint is printed on stderr when stdin is a terminal: a person who ran
// `openhuman-core mcp` by hand learns why nothing happens.
const terminalHint = "openhuman-core mcp: waiting for an MCP client on stdin (newline-delimited JSON-RPC); see README → Connect an MCP client"

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// serveMCP runs the MCP server on stdin/stdout until stdin ends or ctx is done.
// stdout carries protocol frames only; logs and the hint go to stderr.
func serveMCP(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, interactive bool) error {
	start := time.Now()
	window := openStartWindow(startWindowMax)
	defer window.close()
	log := setupLogging(stderr)
	if interactive {
		fmt.Fprintln(stderr, terminalHint)
	}
	cfg, err := loadConfig(log)
	if err != nil {
		return err
	}
	tConfig := time.Since(start)
	// The compile workers (and warming the store) start once the MCP server is
	// built, before stdin is read: beside building it they competed with it for
	// the CPU, and they never wait for the client (issue 29: a client that is slow
	// to initialize, or 256 modules, must not hold the start). The first-party
	// modules run on the interpreter, so what they start is ≈ 0.5 ms of work.
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release()
	host, closeHost, err := openHostHeld(ctx, cfg, log, hold, window.done)
	if err != nil {
		return err
	}
	defer closeHost()
	tHost := time.Since(start)

	al := openAudit(cfg, log)
	defer al.Close()
	auditRefusedHostCalls(host, al)

	// The server follows the host's tool set from its creation on: a change
	// before the server exists is remembered and applied once it does (a second
	// Refresh of an unchanged set converted every tool again, ≈ 1 ms of a start).
	var (
		srvRef  atomic.Pointer[mcpserver.Server]
		changed atomic.Bool
	)
	host.OnChange(func() {
		changed.Store(true)
		if s := srvRef.Load(); s != nil {
			s.Refresh()
		}
	})
	srv, err := mcpserver.New(mcpserver.Options{
		Version:    Version(),
		Dispatcher: &firstCallDispatcher{Host: host, window: window},
		Audit:      al,
		Logger:     log,
		// The watcher below picks up a tools directory created after start, so the
		// tool list can always change.
		ToolsCanChange: true,
		SearXNGEnabled: cfg.SearXNG.Enabled,
		ToolNames:      cfg.MCP.ToolNames,
		OnStdinClosed:  func() { host.StopWaitingForCompiles(runtime.EOFCompileGrace) },
		OnInitialized: func() {
			log.Debug("initialize answered", "since_start_ms", ms(time.Since(start)))
		},
	})
	if err != nil {
		return err
	}
	srvRef.Store(srv)
	if changed.Load() {
		srv.Refresh() // the tool set changed while the server was being built
	}
	release()

	// Third-party modules: re-audit and swap in on any change of the tools
	// directory or policy.toml; clients get notifications/tools/list_changed.
	defer watchTools(ctx, host, cfg, log)()

	// Where the start went (spawn → initialize reply is measured by cmd/bench).
	log.Debug("mcp server ready", "version", Version(), "store", cfg.StorePath(), "searxng", cfg.SearXNG.Enabled, "tools", len(host.Tools()),
		"config_ms", ms(tConfig), "host_ms", ms(tHost), "ready_ms", ms(time.Since(start)))
	err = srv.Serve(ctx, stdin, stdout)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted: a normal way to stop a stdio server
	}
	return err
}

// ms is d in milliseconds with two decimals, for debug logs.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// watchTools keeps the tools a server offers current while it runs, in `mcp`
// and `serve` alike: the tools directory and policy.toml are watched
// (toolwatch: a change is re-audited and swapped in), and SIGHUP reloads the
// directory at once. The returned function stops both.
func watchTools(ctx context.Context, host toolwatch.Reloader, cfg *config.Config, log *slog.Logger) (stop func()) {
	watcher := toolwatch.Start(ctx, host, toolwatch.Options{Dir: cfg.Tools.Dir, PolicyFile: cfg.Tools.Policy, Logger: log})
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			if err := host.Reload(ctx); err != nil {
				log.Warn("reloading the tools directory", "dir", cfg.Tools.Dir, "err", err)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		watcher.Stop()
	}
}
