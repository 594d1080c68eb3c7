package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/textsafe"
	"github.com/openhuman/openhuman-core/runtime"
)

// ListSchema identifies the JSON layout of `tools list --json`.
const ListSchema = "openhuman.tools/1"

// listEntry is one module in `tools list` output.
type listEntry struct {
	Tools        []string       `json:"tools"`
	Origin       string         `json:"origin"`
	Module       string         `json:"module"`
	File         string         `json:"file,omitempty"`
	SHA256       string         `json:"sha256"`
	ABI          string         `json:"abi"`
	Grants       []string       `json:"grants"`
	Limits       runtime.Limits `json:"limits"`
	Signer       string         `json:"signer,omitempty"`
	State        string         `json:"state"`
	Error        string         `json:"error,omitempty"`
	ServedByThis bool           `json:"served"`
}

type listReport struct {
	Schema   string      `json:"schema"`
	ToolsDir string      `json:"tools_dir"`
	Policy   string      `json:"policy"`
	Modules  []listEntry `json:"modules"`
}

// newToolsListCmd is `openhuman-core tools list`.
func newToolsListCmd() *cobra.Command {
	var asJSON bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every tool the MCP server would serve, with origin, digest, grants, limits and load state",
		Long: `list loads the first-party modules and the tools directory exactly as ` + "`mcp`" + ` does
(same config, policy and runtime), waits for them to compile, and reports every module:
the tools it serves, origin (builtin or directory), file, sha256, granted capabilities,
effective limits, signer, and its state (ready, refused, failed, disabled) with the
reason. Exit status 1 when any module is refused or failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			return runList(cmd.Context(), cmd.OutOrStdout(), log, asJSON, wait)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema openhuman.tools/1)")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for modules to compile")
	return cmd
}

func runList(ctx context.Context, out io.Writer, log *slog.Logger, asJSON bool, wait time.Duration) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := loadConfig(log)
	if err != nil {
		return err
	}
	host, closeHost, err := openHost(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeHost()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := host.WaitReady(wctx); err != nil {
		log.Debug("some modules did not load", "err", err) // each is reported below with its reason
	}
	served := map[string]bool{}
	for _, t := range host.Tools() {
		served[t.Module.Name+"\x00"+t.Module.SHA256] = true
	}
	rep := listReport{Schema: ListSchema, ToolsDir: cfg.Tools.Dir, Policy: cfg.Tools.Policy, Modules: []listEntry{}}
	bad := 0
	for _, st := range host.Status() {
		e := listEntry{
			Tools: st.Tools, Origin: st.Module.Origin, Module: st.Module.Name, File: st.Module.File,
			SHA256: st.Module.SHA256, ABI: st.Module.ABI, Grants: st.Module.Capabilities, Limits: st.Module.Limits,
			Signer: st.Module.Signer, State: st.State, Error: st.Error,
			ServedByThis: served[st.Module.Name+"\x00"+st.Module.SHA256],
		}
		if e.Tools == nil {
			e.Tools = []string{}
		}
		if e.Grants == nil {
			e.Grants = []string{}
		}
		if st.State == runtime.StateRefused || st.State == runtime.StateFailed {
			bad++
		}
		rep.Modules = append(rep.Modules, e)
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeListText(out, rep)
	}
	if bad > 0 {
		return &exitError{code: 1}
	}
	return nil
}

func writeListText(out io.Writer, rep listReport) {
	rep = escapedList(rep) // module-supplied names never reach the terminal raw
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tORIGIN\tSTATE\tGRANTS\tLIMITS\tMODULE\tSHA256")
	var problems []string
	for _, e := range rep.Modules {
		tools := "-"
		if len(e.Tools) > 0 {
			tools = e.Tools[0]
		}
		grants := strings.Join(e.Grants, ",")
		if grants == "" {
			grants = "-"
		}
		limits := "-"
		if e.Limits.TimeoutMS > 0 {
			limits = fmt.Sprintf("%dms/%dMiB/%dKiB", e.Limits.TimeoutMS, e.Limits.MemoryMiB, e.Limits.MaxResultBytes>>10)
		}
		mod := e.Module
		if e.File != "" {
			mod = e.File
		}
		if e.Signer != "" {
			mod += " (signed " + e.Signer + ")"
		}
		short := e.SHA256
		if len(short) > 16 {
			short = short[:16] + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", tools, e.Origin, e.State, grants, limits, mod, short)
		for _, t := range e.Tools[min(1, len(e.Tools)):] { // a module's other tools, one a line
			fmt.Fprintf(tw, "%s\t\t\t\t\t↳ %s\t\n", t, mod)
		}
		if e.Error != "" {
			problems = append(problems, fmt.Sprintf("%s (%s): %s", e.Module, e.State, e.Error))
		}
	}
	tw.Flush()
	fmt.Fprintf(out, "\ntools directory: %s\npolicy: %s\n", rep.ToolsDir, rep.Policy)
	if len(problems) > 0 {
		fmt.Fprintln(out, "\nnot served:")
		for _, p := range problems {
			fmt.Fprintf(out, "  - %s\n", strings.ReplaceAll(p, "\n", "\n    "))
		}
	}
}

// escapedList is rep with every string a module or the configuration supplied
// escaped for a terminal (internal/textsafe): a tool or file name made of
// control sequences cannot rewrite the listing. The JSON form is escaped by
// encoding/json.
func escapedList(rep listReport) listReport {
	e := textsafe.String
	rep.ToolsDir, rep.Policy = e(rep.ToolsDir), e(rep.Policy)
	mods := make([]listEntry, len(rep.Modules))
	for i, m := range rep.Modules {
		m.Tools, m.Grants = textsafe.Strings(m.Tools), textsafe.Strings(m.Grants)
		m.Origin, m.Module, m.File, m.SHA256, m.ABI, m.Signer, m.State = e(m.Origin), e(m.Module), e(m.File), e(m.SHA256), e(m.ABI), e(m.Signer), e(m.State)
		m.Error = textsafe.Text(m.Error) // the listing indents its lines
		mods[i] = m
	}
	rep.Modules = mods
	return rep
}
