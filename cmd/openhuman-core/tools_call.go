package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/runtime"
)

// callClientLabel is the provenance label of `tools call` (allowed_agents "*"
// admits it; name it as "cli:tools-call" to admit only it).
const callClientLabel = "cli:tools-call"

// newToolsCallCmd is `openhuman-core tools call`.
func newToolsCallCmd() *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "call TOOL ['{\"arg\":…}']",
		Short: "Run one tool through the sandbox on the configured store and show its result, schema check and host calls",
		Long: `call runs TOOL as a client would, through the same sandbox, policy and store
` + "`openhuman-core mcp`" + ` uses (the memory tree is opened read-only), with the JSON
arguments given (default {}). It prints the result on stdout and, on stderr, whether
the result matches the tool's output_schema (with the JSON path of the first
violation), the host functions the call used and how long it took.

Exit status: 0 the tool answered and its result matches its output_schema; 1 the
tool reported an error, failed in its sandbox, or broke its output_schema; 2 a
usage error or an unknown tool.`,
		Example: `  openhuman-core tools call hello '{"name":"Ada"}'
  openhuman-core tools call tree.list_sources '{"k":3}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			in := "{}"
			if len(args) == 2 {
				in = args[1]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runCall(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), log, args[0], in, agent)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", callClientLabel, "the client label the call is made as (policy allowed_agents)")
	return cmd
}

func runCall(ctx context.Context, stdout, stderr io.Writer, log *slog.Logger, tool, args, agent string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return &exitError{code: 2, err: fmt.Errorf("the arguments must be one JSON object, like '{\"name\":\"Ada\"}': %q", args)}
	}
	cfg, err := loadConfig(log)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	host, closeHost, err := openHost(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeHost()
	var spec *runtime.Tool
	for _, t := range host.Tools() {
		if t.Name == tool {
			spec = &t
			break
		}
	}
	if spec == nil {
		var names []string
		for _, t := range host.Tools() {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		return &exitError{code: 2, err: fmt.Errorf("no loaded module serves tool %q; served: %s (`openhuman-core tools list` shows refused modules and why)", tool, strings.Join(names, ", "))}
	}
	start := time.Now()
	out, err := host.Call(ctx, runtime.Call{Tool: tool, Arguments: json.RawMessage(args), Client: agent, RequestID: "tools-call"})
	took := time.Since(start)
	var schemaErr *runtime.OutputSchemaError
	var result json.RawMessage
	var usage runtime.Usage
	switch {
	case errors.As(err, &schemaErr):
		result, usage = schemaErr.Result, schemaErr.Usage
	case err != nil:
		return fmt.Errorf("%s failed: %w", tool, err)
	case out.ToolError != nil:
		writeUsage(stderr, out.Usage, spec, took)
		return fmt.Errorf("%s answered with an error: %s: %s", tool, out.ToolError.Code, out.ToolError.Message)
	default:
		result, usage = out.Result, out.Usage
		// The host checks third-party results; a first-party one is checked here.
		schemaErr, _ = runtime.ValidateOutput(tool, spec.Module.Name, spec.OutputSchema, result).(*runtime.OutputSchemaError)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, result, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(result)
	}
	pretty.WriteByte('\n')
	if _, err := stdout.Write(pretty.Bytes()); err != nil {
		return err
	}
	if schemaErr != nil {
		fmt.Fprintf(stderr, "output_schema: DOES NOT MATCH at %s: %s\n", schemaErr.Path, schemaErr.Problem)
	} else {
		fmt.Fprintln(stderr, "output_schema: matches")
	}
	writeUsage(stderr, usage, spec, took)
	if schemaErr != nil {
		return &exitError{code: 1, err: schemaErr}
	}
	return nil
}

func writeUsage(w io.Writer, u runtime.Usage, t *runtime.Tool, took time.Duration) {
	var calls []string
	for name, n := range u.HostCalls {
		calls = append(calls, fmt.Sprintf("%s ×%d", name, n))
	}
	slices.Sort(calls)
	list := "none"
	if len(calls) > 0 {
		list = strings.Join(calls, ", ")
	}
	fmt.Fprintf(w, "host calls: %s (%d bytes to the module, %d from it)\n", list, u.BytesIn, u.BytesOut)
	fmt.Fprintf(w, "module: %s (%s, sha256 %s), %s\n", t.Module.Name, t.Module.Origin, shortSHA(t.Module.SHA256), took.Round(time.Millisecond))
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
