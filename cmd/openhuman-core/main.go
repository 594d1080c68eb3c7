// Command openhuman-core serves a person's local memory tree to MCP clients through
// sandboxed, read-only WebAssembly tools. Subcommands register themselves in init
// functions of the files beside this one.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/config"
)

// globalFlags are shared by every subcommand.
type globalFlags struct {
	configFile string
	verbose    bool
}

var flags globalFlags

// rootCmd is the command tree (newRootCmd).
var rootCmd = newRootCmd()

// newRootCmd builds the command tree: every command is listed here and nowhere
// else (each file defines its command's constructor).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "openhuman-core",
		Short: "Read-only memory tree for MCP clients, served through sandboxed WebAssembly tools",
		Long: `openhuman-core lets MCP clients (Claude Desktop, Cursor, Zed, ...) read your local
memory tree — ingested mail, chat and documents — and, when enabled, search the web
through your own SearXNG instance. Every tool is a WebAssembly module that can only call
the read functions it was granted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&flags.configFile, "config", "", "config file (default $OPENHUMAN_HOME/config.toml)")
	root.PersistentFlags().BoolVarP(&flags.verbose, "verbose", "v", false, "debug logging on stderr")
	root.AddCommand(
		newIngestCmd(),
		newWatchCmd(),
		newSyncCmd(),
		newForgetCmd(),
		mcpCmd, // help goes to stdout like every command's (`mcp --help` starts no server)
		newServeCmd(),
		newStatusCmd(),
		newDoctorCmd(),
		newToolsCmd(),
		newTokensCmd(),
	)
	root.AddCommand(newQueryCmds()...)
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "openhuman-core", Version())
		},
	})
	return root
}

// setupLogging sends log/slog output to stderr: warn by default, debug with --verbose.
func setupLogging(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if flags.verbose {
		level = slog.LevelDebug
	}
	l := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(l)
	return l
}

// loadConfig loads the configuration and reports ignored environment values on the logger.
func loadConfig(log *slog.Logger) (*config.Config, error) {
	cfg, warnings, err := config.Load(flags.configFile, nil)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn("config: " + w.String())
	}
	return cfg, nil
}

// exitCoder lets a command choose its exit status.
type exitCoder interface{ ExitCode() int }

// exitError carries an exit status with an optional message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// usageErrors makes every command-line mistake exit 2 with a pointer to --help: bad
// flags (cobra's flag error function), wrong arguments (each command's Args
// validator), and what cobra reports before any command runs (an unknown command,
// a missing required flag).
func usageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(c, err)
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return usageError(cmd, err)
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// usageError is a command-line mistake: exit status 2, with where to read more.
func usageError(c *cobra.Command, err error) error {
	return &exitError{code: 2, err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
}

// cobraUsageError reports whether err is one of cobra's own usage errors that come
// before any validator runs.
func cobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "required flag(s) ", "unknown flag: ", "unknown shorthand flag: ", "invalid argument ", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// execute runs the command line and returns the process's exit status, printing
// any error on stderr.
func execute(ctx context.Context, args []string, stderr io.Writer) int {
	rootCmd.SetArgs(args)
	err := rootCmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ec exitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
		var ee *exitError
		if errors.As(err, &ee) && ee.err == nil {
			return code
		}
	} else if cobraUsageError(err) {
		code = 2
		err = fmt.Errorf("%w (see openhuman-core --help)", err)
	}
	fmt.Fprintln(stderr, "openhuman-core:", err)
	return code
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	usageErrors(rootCmd)
	code := execute(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}
