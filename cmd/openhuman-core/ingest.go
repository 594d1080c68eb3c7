package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// newIngestCmd is `openhuman-core ingest`.
func newIngestCmd() *cobra.Command {
	var kind, reportPath string
	cmd := &cobra.Command{
		Use:   "ingest PATH...",
		Short: "Ingest mail, chat and document exports into the memory tree",
		Long: `ingest reads mail (mbox, .eml and other single-message files, Maildir
folders), chat (Slack export folders, Telegram Desktop JSON and HTML, WhatsApp
"Export chat" text, DiscordChatExporter JSON, CSV and HTML, Signal, iMessage,
LINE, Hangouts, Teams/Skype, Mattermost, Zulip, Matrix/Element, IRC logs, chat
batch JSON), the reference JSON shapes (ChatBatch, EmailThread, DocumentInput),
notes and documents (Markdown/text/Org, Evernote, Google Keep, Day One, Roam) and
address books (vCard, Google Contacts CSV: people, not documents), detecting the
format per file or folder (--kind forces one), and writes them into the memory
tree. Re-ingesting the same input adds nothing; a later export of a chat adds its
messages to the earlier one's and removes none.

A document's source_ref is its path relative to the folder named on the command
line (or to the folder holding a file named directly).

Each input that cannot be kept whole is reported on one line (error: what was
lost; warning: what was repaired or guessed), as is each path named here that
yields nothing; everything else is still ingested. The summary line comes last.
The exit status is 1 when any input failed. --report FILE writes every file read,
skipped or failed, with its format, what it yielded and every warning, as JSON.

With a dense embedder configured ([memory_tree] embedder, or
OPENHUMAN_MEMORY_EMBEDDER), ingest then embeds every chunk that has no vector of
the model yet, in batches; when the embedder cannot be reached the text stays
ingested and searchable, recall stays offline, and a later ingest embeds the rest.

When translating dictionaries are installed ([memory_tree] pivot_dictionaries;
by default Debian's dict-freedict-eng-deu and dict-freedict-deu-eng), the first
ingest derives English paraphrases from them for offline recall ("guideline" and
"policy" both translate to "Richtlinie"), and rebuilds them only when the
dictionary files change.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := setupLogging(os.Stderr)
			cfg, err := loadConfig(log)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if kind != "" && !ingestKindKnown(kind) {
				return &exitError{code: 2, err: fmt.Errorf("--kind %q: use one of %s, or leave it out to detect", kind, strings.Join(ingest.Kinds, ", "))}
			}
			if cfg.Store.URL != "" {
				return runIngestPostgres(cmd, cfg, args, kind, log)
			}
			store, err := memtree.Open(cfg.StorePath())
			if err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			defer store.Close()
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			prevLimit := debug.SetMemoryLimit(ingestMemoryLimit())
			sum, runErr := ingest.Run(ctx, store, args, ingest.Options{Kind: kind, Progress: stderr, Logger: log, Report: reportPath != ""})
			debug.SetMemoryLimit(prevLimit) // ingest.Paraphrases below sets its own limit
			// Every line about one input first, the summary line last: also after
			// Ctrl-C and after a paraphrase or embedder failure, which count as
			// failures so that "0 failures" never goes with exit status 1.
			printInputLines(stderr, cfg, sum, log)
			if reportPath != "" {
				if err := writeIngestReport(reportPath, sum); err != nil {
					fmt.Fprintln(stderr, "ingest: error:", err)
					sum.Failures++
				} else {
					fmt.Fprintln(stderr, "ingest: every file and what happened to it is listed in", reportPath)
				}
			}
			code := 0
			if runErr != nil {
				fmt.Fprintln(stderr, "ingest:", runErr)
				code = 1
			} else {
				if err := buildParaphrases(ctx, store, cfg, stderr); err != nil {
					fmt.Fprintln(stderr, "ingest: error:", err)
					sum.Failures++
				}
				embedAfterIngest(ctx, store, cfg, stderr, sum)
			}
			if sum.Failures > 0 {
				code = 1
			}
			fmt.Fprintln(stderr, sum.Line())
			// What status shows as the last ingest: one meta row, written even after
			// Ctrl-C (with a fresh context) so the record says the run was cut short.
			rec := memtree.IngestRecord{Time: time.Now().UTC(), Roots: absRoots(args), Summary: sum.Line(), Interrupted: ctx.Err() != nil}
			if err := store.RecordIngest(context.WithoutCancel(ctx), rec); err != nil {
				log.Warn("ingest: could not record the run for status", "err", err)
			}
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "force the input format: "+strings.Join(ingest.Kinds, ", "))
	cmd.Flags().StringVar(&reportPath, "report", "", "write a JSON report of every file read, skipped or failed, with what happened to it, to this file")
	return cmd
}

// printInputLines writes ingest's lines about single inputs to stderr, on
// every backend: the errors, the warnings, the skipped files (whose full list
// goes to the workspace's last-ingest-skipped.txt) and the unread inputs.
func printInputLines(stderr io.Writer, cfg *config.Config, sum *ingest.Summary, log *slog.Logger) {
	for _, fe := range sum.Errors {
		fmt.Fprintln(stderr, "ingest: error:", fe.Error())
	}
	for _, n := range sum.Notes {
		fmt.Fprintln(stderr, "ingest: warning:", n.Error())
	}
	skips, skipErr := sum.SkipLines(filepath.Join(cfg.Workspace, "last-ingest-skipped.txt"))
	for _, l := range skips {
		fmt.Fprintln(stderr, "ingest:", l)
	}
	if skipErr != nil {
		log.Warn("ingest: could not list the skipped files", "err", skipErr)
	}
	for _, u := range sum.Unread {
		fmt.Fprintln(stderr, "ingest:", u.Error())
	}
}

// ingestHeapLimit is the Go heap's soft limit while ingest.Run runs. Its live heap
// stays under ~100 MiB whatever the input's size (the pipeline, parse pool and chat
// coalescing are bounded), but by default the heap grows to twice the live heap
// before a collection; the limit makes the collector run earlier instead, so the
// peak RSS stays under 300 MB (measured on a 1M-record -scale corpus). A soft limit:
// a larger live heap (one huge chat month) is still allowed, at more GC work.
const ingestHeapLimit = 160 << 20

// ingestMemoryLimit is the memory limit for ingest.Run: ingestHeapLimit, unless
// GOMEMLIMIT sets one.
func ingestMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	return ingestHeapLimit
}

// absRoots makes the paths named on the command line absolute, for the record.
func absRoots(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		out[i] = p
	}
	return out
}

func ingestKindKnown(s string) bool {
	for _, x := range ingest.Kinds {
		if x == s {
			return true
		}
	}
	return false
}

// buildParaphrases builds the store's bilingual paraphrase table from the
// configured dictionaries when they are installed and the table was not built from
// these files yet, and reports it.
func buildParaphrases(ctx context.Context, store *memtree.Store, cfg *config.Config, stderr io.Writer) error {
	res, err := ingest.Paraphrases(ctx, store, cfg.MemoryTree.PivotDictionaries)
	switch {
	case err != nil:
		return fmt.Errorf("paraphrases from %s: %w (the text is ingested and searchable; recall keeps the paraphrase table it had, or expands with WordNet alone)", strings.Join(cfg.MemoryTree.PivotDictionaries, ", "), err)
	case res.Removed:
		fmt.Fprintln(stderr, "ingest: no paraphrase dictionary is installed any more: removed the paraphrase table; recall expands with WordNet alone")
	case res.Words > 0:
		fmt.Fprintf(stderr, "ingest: paraphrases of %d words pivoted through %s in %.1f s\n", res.Words, strings.Join(res.Dictionaries, " and "), res.Seconds)
	}
	return nil
}

// vectorStore is a store that keeps vectors of the dense embedder (both
// backends).
type vectorStore interface {
	EmbedMissing(ctx context.Context, emb memtree.Embedder) (int, error)
}

// embedAfterIngest is ingest's last step on either backend: embedMissing, its
// failure told and counted in sum.
func embedAfterIngest(ctx context.Context, store vectorStore, cfg *config.Config, stderr io.Writer, sum *ingest.Summary) {
	if err := embedMissing(ctx, store, cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "ingest: error:", err)
		sum.Failures++
	}
}

// embedMissing embeds the chunks (and, on the embedded store, the summaries)
// that have no vector of the configured dense embedder's model yet (nothing when
// none is configured) and reports how many.
func embedMissing(ctx context.Context, store vectorStore, cfg *config.Config, stderr io.Writer) error {
	emb, err := embed.New(cfg.MemoryTree, os.Getenv)
	if err != nil || emb == nil {
		return err
	}
	what := "chunks" // PostgreSQL keeps no summary tree
	if _, ok := store.(*memtree.Store); ok {
		what = "chunks and summaries"
	}
	start := time.Now()
	n, err := store.EmbedMissing(ctx, emb)
	if err != nil {
		return fmt.Errorf("%w (%d %s embedded before it failed; the text is ingested and searchable, and recall stays offline for the rest until ingest runs again with the embedder reachable)", err, n, what)
	}
	fmt.Fprintf(stderr, "ingest: embedded %d %s with %s in %.1f s\n", n, what, emb.Model(), time.Since(start).Seconds())
	return nil
}

// writeIngestReport writes the run's per-file report (ingest --report FILE).
func writeIngestReport(p string, sum *ingest.Summary) error {
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := sum.WriteReport(f); err != nil {
		f.Close()
		return fmt.Errorf("--report %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--report %s: %w", p, err)
	}
	return nil
}
