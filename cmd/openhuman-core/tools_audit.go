package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/policy"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

type auditFlags struct {
	policyFile string
	json       bool
	builtin    string
	diff       bool
}

// newToolsAuditCmd is `openhuman-core tools audit`.
func newToolsAuditCmd() *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use:   "audit (FILE.wasm | --builtin NAME|all | --diff OLD.wasm NEW.wasm)",
		Short: "Show what a tool module can touch and whether the policy would load it (never runs it)",
		Long: `audit reads a tool module without executing it and reports its sha256, ABI, embedded
manifest (tools, schemas, requested capabilities and limits), every import classified
(WASI basic, capability host function, Extism plumbing, or FORBIDDEN with why), every
export, the signature status, and the verdict under the policy in force.

The verdict is one of three. WOULD LOAD. REFUSED until the policy admits it: the
module itself is fine, and the audit prints the policy.toml entry that pins and
grants it. NEVER LOADABLE as built: a forbidden import, an exceeded limit, no valid
manifest or a broken signature; the reasons come first and no policy entry is
suggested, because none would help.

Exit status: 0 would load, 1 refused until the policy admits it, 2 not a valid
WebAssembly module (or unreadable), 3 never loadable as built.

--diff OLD.wasm NEW.wasm shows what changed between two versions of a module:
imports, requested capabilities and limits, exports, manifest fields, tool schemas
(by JSON pointer), signature and verdict. Exit status as diff(1): 0 no
differences, 1 differences, 2 a file cannot be read or is not a module.`,
		Example: `  openhuman-core tools audit ~/.openhuman/tools/timeline.wasm
  openhuman-core tools audit timeline.wasm --policy ./policy.toml --json
  openhuman-core tools audit --builtin memory.search
  openhuman-core tools audit --builtin all --json
  openhuman-core tools audit --diff timeline-1.0.wasm timeline-1.1.wasm`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.diff {
				if len(args) != 2 || f.builtin != "" {
					return fmt.Errorf("--diff takes two modules: OLD.wasm NEW.wasm")
				}
				return nil
			}
			if f.builtin != "" {
				if len(args) > 0 {
					return fmt.Errorf("give FILE.wasm or --builtin NAME, not both")
				}
				return nil
			}
			if len(args) != 1 {
				return fmt.Errorf("give one FILE.wasm to audit, or --builtin NAME|all for the modules in this binary")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			if f.diff {
				return runAuditDiff(cmd.OutOrStdout(), log, args[0], args[1], f)
			}
			if f.builtin != "" {
				return runAuditBuiltin(cmd.OutOrStdout(), log, f.builtin, f)
			}
			return runAudit(cmd.OutOrStdout(), log, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.policyFile, "policy", "", "policy file (default: the configured policy, $OPENHUMAN_HOME/policy.toml)")
	cmd.Flags().StringVar(&f.builtin, "builtin", "", "audit the first-party module embedded in this binary that serves tool NAME (or is named NAME, e.g. memory; or all of them)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the stable JSON report (schema openhuman.audit/1; with --diff openhuman.audit-diff/1)")
	cmd.Flags().BoolVar(&f.diff, "diff", false, "compare two modules: OLD.wasm NEW.wasm")
	return cmd
}

// loadPolicyFor loads --policy, or the configured policy file.
func loadPolicyFor(log *slog.Logger, file string) (*policy.Policy, error) {
	if file == "" {
		cfg, err := loadConfig(log)
		if err != nil {
			return nil, err
		}
		file = cfg.Tools.Policy
	} else if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("policy file %s does not exist (omit --policy to use the configured one)", file)
	}
	return policy.Load(file)
}

func runAudit(out io.Writer, log *slog.Logger, file string, f auditFlags) error {
	pol, err := loadPolicyFor(log, f.policyFile)
	if err != nil {
		return &exitError{code: toolaudit.ExitInvalid, err: err}
	}
	// Read as the loader reads it: a regular file, size-capped, FIFO-safe.
	opts := toolaudit.Options{Name: file, Policy: pol}
	if cfg, err := loadConfig(log); err == nil {
		opts.ToolsDir = cfg.Tools.Dir // tool names already served there refuse it, as in the loader
	}
	rep, err := toolaudit.AuditFile(file, opts)
	if rep == nil {
		return &exitError{code: toolaudit.ExitInvalid, err: fmt.Errorf("reading module: %w", err)}
	}
	return writeReport(out, rep, f.json)
}

// runAuditBuiltin audits embedded first-party modules: the one serving a tool (or
// of that module name; the six memory tools share the module "memory"), or all
// ("all"; the exit status is the worst of them; --json prints a JSON array).
func runAuditBuiltin(out io.Writer, log *slog.Logger, name string, f auditFlags) error {
	pol, err := loadPolicyFor(log, f.policyFile)
	if err != nil {
		return &exitError{code: toolaudit.ExitInvalid, err: err}
	}
	var mods []toolswasm.Module
	if name == "all" {
		mods, err = toolswasm.Modules()
	} else {
		var m toolswasm.Module
		m, err = toolswasm.Get(name)
		mods = []toolswasm.Module{m}
	}
	if err != nil {
		return &exitError{code: toolaudit.ExitInvalid, err: err}
	}
	var reports []*toolaudit.Report
	worst := 0
	for _, m := range mods {
		rep, _ := toolaudit.Audit(m.Wasm, toolaudit.Options{Name: "builtin:" + m.Name, Policy: pol, Builtin: true, PinnedSHA256: m.SHA256})
		reports = append(reports, rep)
		worst = max(worst, rep.ExitCode())
	}
	if len(reports) == 1 {
		return writeReport(out, reports[0], f.json)
	}
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return &exitError{code: toolaudit.ExitInvalid, err: err}
		}
	} else {
		for i, rep := range reports {
			if i > 0 {
				fmt.Fprintln(out, strings.Repeat("─", 72))
			}
			if err := rep.WriteText(out); err != nil {
				return &exitError{code: toolaudit.ExitInvalid, err: err}
			}
		}
	}
	if worst != 0 {
		return &exitError{code: worst}
	}
	return nil
}

func writeReport(out io.Writer, rep *toolaudit.Report, asJSON bool) error {
	var err error
	if asJSON {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out)
	}
	if err != nil {
		return &exitError{code: toolaudit.ExitInvalid, err: err}
	}
	if code := rep.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

func fileSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
