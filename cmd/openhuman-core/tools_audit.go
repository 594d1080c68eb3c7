package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/policy"
)

// toolsGroup returns the `tools` command group. tools.go registers it in its init,
// which runs before the init functions of tools_*.go (files initialise in name
// order); when it is absent a bare group is created so these subcommands still work.
func toolsGroup() *cobra.Command {
	for _, c := range rootCmd.Commands() {
		if c.Name() == "tools" {
			return c
		}
	}
	c := &cobra.Command{Use: "tools", Short: "Inspect, sign and manage tool modules"}
	rootCmd.AddCommand(c)
	return c
}

type auditFlags struct {
	policyFile string
	json       bool
}

func init() {
	var f auditFlags
	cmd := &cobra.Command{
		Use:   "audit FILE.wasm",
		Short: "Show what a tool module can touch and whether the policy would load it (never runs it)",
		Long: `audit reads a tool module without executing it and reports its sha256, ABI, embedded
manifest (tools, schemas, requested capabilities and limits), every import classified
(WASI basic, capability host function, Extism plumbing, or FORBIDDEN with why), every
export, the signature status, and the verdict under the policy in force.

Exit status: 0 the module would load, 1 it would be refused, 2 the file is not a
valid WebAssembly module or cannot be read.`,
		Example: `  openhuman-core tools audit ~/.openhuman/tools/timeline.wasm
  openhuman-core tools audit timeline.wasm --policy ./policy.toml --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAudit(cmd.OutOrStdout(), setupLogging(cmd.ErrOrStderr()), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.policyFile, "policy", "", "policy file (default: the configured policy, $OPENHUMAN_HOME/policy.toml)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the stable JSON report (schema openhuman.audit/1)")
	toolsGroup().AddCommand(cmd)
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
	module, err := os.ReadFile(file)
	if err != nil {
		return &exitError{code: toolaudit.ExitInvalid, err: fmt.Errorf("reading module: %w", err)}
	}
	rep, _ := toolaudit.Audit(module, toolaudit.Options{Name: file, Policy: pol})
	return writeReport(out, rep, f.json)
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
