package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// cliLabel is the provenance label of a call made from the command line: what
// policy.toml's allowed_agents matches and the audit log records.
const cliLabel = "cli"

// newQueryCmds are `openhuman-core search` and `recall`.
func newQueryCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, c := range []struct{ use, tool, short, long, example string }{
		{"search QUERY", "memory.search", "Search the memory tree by keywords (memory.search) and print the hits",
			`search runs memory.search — keywords, names, addresses, exact phrases — through the same
sandboxed module, limits, policy and audit log as an MCP client, with the provenance label
"cli", and prints each hit the way a person reads it: who, when, where, and the cited lines.
--json prints the tool's result as an MCP client receives it.`,
			`  openhuman-core search 'brake quote'
  openhuman-core search -k 3 --json 'alice@kestrel.example'`},
		{"recall QUERY", "memory.recall", "Recall from the memory tree by meaning (memory.recall) and print the hits",
			`recall runs memory.recall — describe the meaning; it finds paraphrases and related wording —
through the same sandboxed module, limits, policy and audit log as an MCP client, with the
provenance label "cli", and prints each hit: who, when, where, and the cited lines.
--json prints the tool's result as an MCP client receives it.`,
			`  openhuman-core recall 'the car makes a noise when stopping'`},
	} {
		var k int
		var asJSON bool
		tool := c.tool
		cmd := &cobra.Command{
			Use: c.use, Short: c.short, Long: c.long, Example: c.example,
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				q := strings.TrimSpace(strings.Join(args, " "))
				if q == "" {
					return usageError(cmd, errors.New("the query is empty"))
				}
				if k < 1 || k > abi.MaxK {
					return usageError(cmd, fmt.Errorf("-k must be 1..%d, got %d", abi.MaxK, k))
				}
				return runQuery(cmd, tool, q, k, asJSON)
			},
		}
		cmd.Flags().IntVarP(&k, "k", "k", 10, fmt.Sprintf("number of hits (1..%d)", abi.MaxK))
		cmd.Flags().BoolVar(&asJSON, "json", false, "print the tool's JSON result")
		cmds = append(cmds, cmd)
	}
	return cmds
}

// runQuery calls tool with query and k as the label cli and prints the result.
func runQuery(cmd *cobra.Command, tool, query string, k int, asJSON bool) error {
	ctx := cmd.Context()
	log := setupLogging(cmd.ErrOrStderr())
	cfg, err := loadConfig(log)
	if err != nil {
		return err
	}
	host, closeHost, err := openHost(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeHost()
	al := openAudit(cfg, log)
	defer al.Close()

	args, _ := json.Marshal(map[string]any{"query": query, "k": k})
	start := time.Now()
	out, err := host.Call(ctx, runtime.Call{Tool: tool, Arguments: args, Client: cliLabel})
	entry := audit.Entry{Time: start, Session: cliLabel, Tool: tool, Arguments: audit.SummarizeArguments(args)}
	var result []byte
	switch {
	case out != nil:
		entry.ModuleSHA256 = out.ModuleSHA256
		entry.Capabilities = audit.Capabilities{HostCalls: out.Usage.HostCalls, BytesIn: out.Usage.BytesIn, BytesOut: out.Usage.BytesOut}
	default:
		entry.ModuleSHA256 = runtime.ModuleDigest(err)
	}
	switch {
	case err != nil:
		entry.Outcome, entry.Error, entry.ErrorID = audit.OutcomeError, err.Error(), audit.NewErrorID()
		err = fmt.Errorf("%s failed (error id %s): %w", tool, entry.ErrorID, err)
	case out.ToolError != nil:
		entry.Outcome, entry.Error = audit.ToolErrorOutcome(out.ToolError.Code), out.ToolError.Message
		err = fmt.Errorf("%s: %s", tool, out.ToolError.Message)
	default:
		entry.Outcome, result = audit.OutcomeOK, out.Result
	}
	entry.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	al.Record(entry)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if asJSON {
		var buf bytes.Buffer
		if json.Indent(&buf, result, "", "  ") != nil {
			buf.Reset()
			buf.Write(result)
		}
		buf.WriteByte('\n')
		_, err := w.Write(buf.Bytes())
		return err
	}
	var res struct {
		Chunks []abi.ChunkHit `json:"chunks"`
		Mode   string         `json:"mode"`
		Note   string         `json:"note"`
		Hint   string         `json:"hint"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return fmt.Errorf("%s returned a result that is not a list of hits: %w", tool, err)
	}
	printHits(w, res.Chunks)
	for _, s := range []string{res.Note, res.Hint} {
		if s != "" {
			fmt.Fprintln(w, s)
		}
	}
	if len(res.Chunks) == 0 && res.Hint == "" {
		fmt.Fprintf(w, "no hits for %q\n", query)
	}
	return nil
}

// printHits writes hits for a person: a heading per hit (where, when), then the
// cited messages (who, when, the lines), or the snippet when none is cited.
func printHits(w io.Writer, hits []abi.ChunkHit) {
	for i, h := range hits {
		if i > 0 {
			fmt.Fprintln(w)
		}
		where := h.Title
		if where == "" {
			where = h.SourceID
		}
		when := ""
		if h.TimestampMS > 0 {
			when = time.UnixMilli(h.TimestampMS).UTC().Format("2006-01-02 15:04 UTC")
		}
		fmt.Fprintf(w, "%d. [%s] %s", i+1, h.SourceKind, oneLine(where))
		if when != "" {
			fmt.Fprintf(w, " — %s", when)
		}
		fmt.Fprintln(w)
		if len(h.Messages) == 0 {
			for _, l := range strings.Split(strings.TrimSpace(h.Snippet), "\n") {
				fmt.Fprintf(w, "   %s\n", l)
			}
		}
		for _, m := range h.Messages {
			who := m.Author
			if who == "" {
				who = "(unknown sender)"
			}
			head := "   " + oneLine(who)
			if m.Time != "" {
				if t, err := time.Parse(time.RFC3339Nano, m.Time); err == nil {
					head += ", " + t.UTC().Format("2006-01-02 15:04")
				}
			}
			fmt.Fprintln(w, head+":")
			for _, l := range strings.Split(strings.TrimSpace(m.Text), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					fmt.Fprintf(w, "     %s\n", l)
				}
			}
		}
		fmt.Fprintf(w, "   source %s · chunk %s\n", h.SourceID, h.ID)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
