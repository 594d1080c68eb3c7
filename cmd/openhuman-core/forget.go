package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// newForgetCmd is `openhuman-core forget`.
func newForgetCmd() *cobra.Command {
	var root, before string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "forget [SOURCE_ID...]",
		Short: "Delete ingested sources from the memory tree (the writers are ingest, watch, sync and forget)",
		Long: `forget deletes whole sources — a mail thread, a chat channel's month, a document —
with everything derived from them: chunks and their full-text index rows, summaries,
vectors, entity links (entity counts are recomputed; entities nothing else mentions are
deleted) and stored chat messages, in one transaction. Ingesting the same files again
brings them back.

Select sources by id (the source_id that tree.list_sources and every search hit
give, or a chat conversation without its month, slack:#general, for all its
months, as the tools' source_ids take it), by the file or folder they were ingested from (--root), and/or by age
(--before: sources whose newest message is older than the date). --root and ids add
up; --before narrows them (alone, it selects every source older than the date).
--dry-run lists what would go and changes nothing.

Each run that deletes something is written to the audit log
(<workspace>/audit/audit.jsonl, tool "forget"). forget is a command-line action
only: no MCP tool or HTTP method can delete.`,
		Example: `  openhuman-core forget --dry-run --root ~/exports/old-mail.mbox
  openhuman-core forget 'email:CA+abc@mail.example' 'doc:/home/me/notes/draft.md'
  openhuman-core forget --dry-run 'slack:#general'
  openhuman-core forget --before 2019-01-01`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := memtree.ForgetFilter{SourceIDs: args, Root: root}
			if before != "" {
				t, err := parseDate(before)
				if err != nil {
					return usageError(cmd, fmt.Errorf("--before %q: %w", before, err))
				}
				f.Before = t
			}
			if len(args) == 0 && root == "" && before == "" {
				return usageError(cmd, fmt.Errorf("forget: name the sources to delete: SOURCE_ID..., --root PATH or --before DATE"))
			}
			return runForget(cmd, f, dryRun, asJSON)
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "forget the sources ingested from this file or folder")
	cmd.Flags().StringVar(&before, "before", "", "forget only sources whose newest message is before this date (YYYY-MM-DD or RFC 3339)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted; change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// parseDate reads YYYY-MM-DD (midnight UTC) or an RFC 3339 time.
func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("not a date: use YYYY-MM-DD or RFC 3339 (2019-01-01T00:00:00Z)")
}

func runForget(cmd *cobra.Command, f memtree.ForgetFilter, dryRun, asJSON bool) error {
	log := setupLogging(cmd.ErrOrStderr())
	cfg, err := loadConfig(log)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	ctx := cmd.Context()
	store, err := openForgetStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	start := time.Now()
	res, err := store.Forget(ctx, f, dryRun)
	if err != nil {
		return err
	}
	if !dryRun && len(res.Sources) > 0 {
		al := openAudit(cfg, log)
		al.Record(forgetAuditEntry(start, f, res))
		if err := al.Close(); err != nil {
			log.Warn("forget: writing the audit log", "err", err)
		}
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		writeForgetText(out, res)
	}
	if len(res.NotFound) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "forget: no stored source has the id %s (tree.list_sources lists them)\n", strings.Join(res.NotFound, ", "))
		return &exitError{code: 1}
	}
	return nil
}

// forgetAuditEntry is the audit line of a forget run.
func forgetAuditEntry(start time.Time, f memtree.ForgetFilter, res memtree.ForgetResult) audit.Entry {
	args := map[string]any{"source_ids": f.SourceIDs}
	if f.Root != "" {
		args["root"] = f.Root
	}
	if !f.Before.IsZero() {
		args["before"] = f.Before.UTC().Format(time.RFC3339)
	}
	ids := make([]string, len(res.Sources))
	for i, s := range res.Sources {
		ids[i] = s.SourceID
	}
	return audit.Entry{Time: start, Session: "cli", RequestID: fmt.Sprintf("forget-%d", start.UnixNano()), Tool: "forget",
		Arguments: args, Outcome: audit.OutcomeOK, DurationMS: float64(time.Since(start).Microseconds()) / 1000,
		Details: map[string]any{"sources": ids, "chunks": res.Chunks, "summaries": res.Summaries, "vectors": res.Vectors,
			"messages": res.Messages, "entities_updated": res.EntitiesUpdated, "entities_dropped": res.EntitiesDropped}}
}

func writeForgetText(out io.Writer, res memtree.ForgetResult) {
	verb := "forgot"
	if res.DryRun {
		verb = "would forget"
	}
	for _, s := range res.Sources {
		last := "-"
		if s.LastMS > 0 {
			last = time.UnixMilli(s.LastMS).UTC().Format("2006-01-02")
		}
		fmt.Fprintf(out, "%s %s\t%s\t%q\t%d chunks\tlast %s\n", verb, s.Kind, s.SourceID, s.Title, s.Chunks, last)
	}
	fmt.Fprintf(out, "forget: %s %d sources: %d chunks, %d summaries, %d vectors, %d stored messages; %d entities lowered, %d removed\n",
		verb, len(res.Sources), res.Chunks, res.Summaries, res.Vectors, res.Messages, res.EntitiesUpdated, res.EntitiesDropped)
}
