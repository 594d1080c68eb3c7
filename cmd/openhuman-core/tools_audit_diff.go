package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/openhuman/openhuman-core/internal/toolaudit"
)

// runAuditDiff audits two modules under the same policy and prints what changed
// between them. Exit status as diff(1): 0 none, 1 differences, 2 trouble.
func runAuditDiff(out io.Writer, log *slog.Logger, oldFile, newFile string, f auditFlags) error {
	pol, err := loadPolicyFor(log, f.policyFile)
	if err != nil {
		return &exitError{code: toolaudit.ExitInvalid, err: err}
	}
	var reps [2]*toolaudit.Report
	for i, file := range []string{oldFile, newFile} {
		module, err := os.ReadFile(file)
		if err != nil {
			return &exitError{code: toolaudit.ExitInvalid, err: fmt.Errorf("reading module: %w", err)}
		}
		rep, err := toolaudit.Audit(module, toolaudit.Options{Name: file, Policy: pol})
		if err != nil {
			return &exitError{code: toolaudit.ExitInvalid, err: fmt.Errorf("%s is not a valid WebAssembly module: %w", file, err)}
		}
		reps[i] = rep
	}
	d := toolaudit.Compare(reps[0], reps[1])
	if f.json {
		err = d.WriteJSON(out)
	} else {
		err = d.WriteText(out)
	}
	if err != nil {
		return &exitError{code: toolaudit.ExitInvalid, err: err}
	}
	if d.Differs() {
		return &exitError{code: 1}
	}
	return nil
}
