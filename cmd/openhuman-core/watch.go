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
	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/watch"
)

// newWatchCmd is `openhuman-core watch`.
func newWatchCmd() *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "watch [PATH...]",
		Short: "Ingest files, folders and IMAP mailboxes, then keep the memory tree current with them",
		Long: `watch ingests its paths, then keeps the memory tree in sync with them until it is
stopped (Ctrl-C or SIGTERM end it within a second, the store whole): a new or
changed file is read again (an edited note's old text is gone and its new text
found), a deleted or moved-away file is forgotten, a renamed note is found at its
new path. Maildir deliveries (tmp/ to new/, new/ to cur/ with flags) are one
message each; mail is read again as a whole, so a reply joins its thread.

With no paths it watches the [[sources]] of config.toml: path = "…" (with an
optional kind = "…", as ingest --kind) and url = "imaps://USER@HOST/MAILBOX"
(synced every [watch] imap_interval_seconds, or at once when the server offers
IDLE; see openhuman-core sync).

File events come from the operating system (inotify, kqueue, FSEvents); every
[watch] rescan_seconds (300 by default) each path is compared with what was read
anyway, for file systems that deliver no events (network and container mounts).
What was read is remembered in <workspace>/watch-state.json, written after each
batch is stored: after a crash or kill the next start catches up with what
changed meanwhile and stores nothing twice.

One line per batch of changes goes to stderr (added, changed, deleted, renamed,
sources forgotten, chunks new and removed). The MCP servers stay read-only: watch
is the owner's command, like ingest and forget.`,
		Example: `  openhuman-core watch ~/notes ~/Maildir ~/mail/archive.mbox
  openhuman-core watch            # the [[sources]] of config.toml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			cfg, err := loadConfig(log)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if kind != "" && !ingestKindKnown(kind) {
				return &exitError{code: 2, err: fmt.Errorf("--kind %q: use one of %s, or leave it out to detect", kind, strings.Join(ingest.Kinds, ", "))}
			}
			return runWatch(cmd.Context(), cfg, args, kind, cmd.ErrOrStderr(), nil)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "force the input format of the paths: "+strings.Join(ingest.Kinds, ", "))
	return cmd
}

// watchLogger logs the watch loop's batch lines (info) on stderr, debug with
// --verbose.
func watchLogger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if flags.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// runWatch runs the watch loop over paths (or the [[sources]] of cfg) until ctx
// ends. ready, when set, is closed once the first pass is done.
func runWatch(ctx context.Context, cfg *config.Config, paths []string, kind string, stderr io.Writer, ready chan<- struct{}) error {
	log := watchLogger(stderr)
	var roots []watch.Root
	var pollers []watch.Poller
	for _, p := range paths {
		roots = append(roots, watch.Root{Path: p, Kind: kind})
	}
	if len(paths) == 0 {
		for _, s := range cfg.Sources {
			if s.Path != "" {
				roots = append(roots, watch.Root{Path: expandHome(s.Path), Kind: s.Kind})
			}
		}
		rs, ps, err := imapSources(cfg, log)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		roots = append(roots, rs...)
		pollers = append(pollers, ps...)
	}
	if len(roots) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("watch: nothing to watch: name files or folders, or add [[sources]] (path = \"…\" or url = \"imaps://…\") to %s", configFileName(cfg))}
	}
	for _, r := range roots[:len(roots)-len(pollers)] { // IMAP mirrors are made by their first sync
		if _, err := os.Stat(r.Path); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("watch: %w (name an existing file or folder)", err)}
		}
	}
	store, err := memtree.Open(cfg.StorePath())
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer store.Close()
	// The first pass is an ingest: the same soft heap limit (see ingestHeapLimit).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(ingestMemoryLimit()))
	w, err := watch.New(watch.Options{
		Store: store, Roots: roots, Pollers: pollers,
		StatePath: filepath.Join(cfg.Workspace, "watch-state.json"),
		Debounce:  time.Duration(cfg.Watch.DebounceMS) * time.Millisecond,
		Rescan:    time.Duration(cfg.Watch.RescanSeconds) * time.Second,
		Log:       log, Progress: stderr, Ready: ready,
		AfterBatch: func(ctx context.Context) error {
			return embedMissing(ctx, store, cfg, stderr)
		},
	})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	log.Info("watch: watching " + w.String())
	if err := w.Run(ctx); err != nil {
		return err
	}
	t := w.Total()
	log.Info("watch: stopped", "added", t.Added, "changed", t.Changed, "deleted", t.Deleted, "sources_forgotten", t.Forgotten,
		"chunks_new", t.ChunksNew, "chunks_removed", t.ChunksRemoved, "failures", t.Failures)
	return nil
}

// configFileName names the config file for messages.
func configFileName(cfg *config.Config) string {
	if cfg.File != "" {
		return cfg.File
	}
	return filepath.Join(cfg.Home, "config.toml")
}

// startServeWatch runs the watch loop over the [[sources]] of config.toml beside
// `serve --watch`; stop ends it and waits for its batch to be stored. The
// servers stay read-only to clients: only this loop, driven by the owner's
// configuration, writes.
func startServeWatch(ctx context.Context, stderr io.Writer) (stop func(), err error) {
	cfg, err := loadConfig(setupLogging(stderr))
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	if len(cfg.Sources) == 0 {
		return nil, &exitError{code: 2, err: fmt.Errorf("serve --watch: add [[sources]] (path = \"…\" or url = \"imaps://…\") to %s", configFileName(cfg))}
	}
	// Make the store (its schema) before serve opens it read-only beside the loop.
	store, err := memtree.Open(cfg.StorePath())
	if err != nil {
		return nil, fmt.Errorf("serve --watch: %w", err)
	}
	if err := store.Close(); err != nil {
		return nil, fmt.Errorf("serve --watch: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runWatch(ctx, cfg, nil, "", stderr, nil); err != nil && ctx.Err() == nil {
			fmt.Fprintln(stderr, "serve --watch: the watch loop stopped:", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}
