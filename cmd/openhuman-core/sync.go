package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/imapsync"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/watch"
)

// newSyncCmd is `openhuman-core sync`.
func newSyncCmd() *cobra.Command {
	var insecure bool
	var passwordFile string
	cmd := &cobra.Command{
		Use:   "sync imaps://USER@HOST[:PORT]/MAILBOX...",
		Short: "Copy IMAP mailboxes (read-only) into the memory tree",
		Long: `sync reads IMAP mailboxes into the memory tree, never changing the server: each
mailbox is opened with EXAMINE and messages are fetched with BODY.PEEK[], so no
\Seen flag is set, nothing is moved, flagged or expunged.

Messages are copied into a local Maildir mirror (<workspace>/imap/USER@HOST/MAILBOX)
and ingested from there. Each sync fetches only the messages after the highest UID
the mirror holds; a changed UIDVALIDITY reads the mailbox again, without duplicates
(mail is keyed by Message-ID); a message deleted on the server is forgotten. A
connection dropped mid-fetch loses nothing: the next sync resumes after the last
message kept whole. watch syncs the url = "imaps://…" entries of [[sources]] on
an interval, or at once with IDLE.

TLS by default: imaps:// (port 993), or imap:// with STARTTLS (port 143).
--insecure allows plaintext, to a loopback address only. The password comes from
--password-file (mode 0600), OPENHUMAN_IMAP_PASSWORD, or ~/.netrc — never from the
command line. For Gmail and Fastmail, use an app password.`,
		Example: `  OPENHUMAN_IMAP_PASSWORD=… openhuman-core sync imaps://me@gmail.com@imap.gmail.com/INBOX
  openhuman-core sync --password-file ~/.config/openhuman/imap-pass imaps://me@fastmail.com@imap.fastmail.com/INBOX imaps://me@fastmail.com@imap.fastmail.com/Sent`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			cfg, err := loadConfig(log)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			var targets []imapsync.Target
			for _, a := range args {
				t, err := imapsync.ParseURL(a)
				if err != nil {
					return usageError(cmd, err)
				}
				t.Insecure = insecure
				targets = append(targets, t)
			}
			return runSync(cmd.Context(), cfg, targets, passwordFile, cmd)
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "allow plaintext IMAP (imap://) to a loopback address")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "read the IMAP password from this file (mode 0600)")
	return cmd
}

// runSync syncs each target into its mirror, then ingests the mirrors (as watch
// does: forgetting what the server no longer holds).
func runSync(ctx context.Context, cfg *config.Config, targets []imapsync.Target, passwordFile string, cmd *cobra.Command) error {
	stderr := cmd.ErrOrStderr()
	log := watchLogger(stderr)
	home, _ := os.UserHomeDir()
	var roots []watch.Root
	failed := 0
	for _, t := range targets {
		pw, err := imapsync.Password(t, expandHome(passwordFile), os.Getenv, home)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		dir := t.MirrorDir(imapMirrorBase(cfg))
		res, err := imapsync.Sync(ctx, t, dir, imapsync.Options{Password: pw, Log: log})
		rate := 0.0
		if res.Seconds > 0 {
			rate = float64(res.Fetched) / res.Seconds
		}
		fmt.Fprintf(stderr, "sync: %s: %d new messages fetched (%.0f/s), %d removed, %d on the server%s\n",
			t, res.Fetched, rate, res.Removed, res.OnServer, map[bool]string{true: ", UIDVALIDITY changed: read again", false: ""}[res.Revalidated])
		if err != nil {
			fmt.Fprintln(stderr, "sync: error:", err)
			failed++
		}
		roots = append(roots, watch.Root{Path: dir})
	}
	store, err := memtree.Open(cfg.StorePath())
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	defer store.Close()
	w, err := watch.New(watch.Options{Store: store, Roots: roots, Once: true, Log: log, Progress: stderr,
		StatePath: filepath.Join(cfg.Workspace, "watch-state.json")})
	if err != nil {
		return err
	}
	if err := w.Run(ctx); err != nil {
		return err
	}
	if err := embedMissing(ctx, store, cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "sync: error:", err)
		failed++
	}
	t := w.Total()
	fmt.Fprintf(stderr, "sync: stored: %d files read, %d chunks new, %d removed, %d sources forgotten, %d failures\n",
		t.Added+t.Changed, t.ChunksNew, t.ChunksRemoved, t.Forgotten, t.Failures)
	if failed > 0 || t.Failures > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// imapMirrorBase is where the IMAP mirrors live.
func imapMirrorBase(cfg *config.Config) string { return filepath.Join(cfg.Workspace, "imap") }

// imapSources makes the url = "imap…" entries of [[sources]] into watched
// mirrors and the pollers that keep them current.
func imapSources(cfg *config.Config, log *slog.Logger) ([]watch.Root, []watch.Poller, error) {
	home, _ := os.UserHomeDir()
	var roots []watch.Root
	var pollers []watch.Poller
	interval := time.Duration(cfg.Watch.IMAPIntervalSeconds) * time.Second
	for _, s := range cfg.Sources {
		if s.URL == "" {
			continue
		}
		t, err := imapsync.ParseURL(s.URL)
		if err != nil {
			return nil, nil, fmt.Errorf("[[sources]] url: %w", err)
		}
		t.Insecure = s.Insecure
		pw, err := imapsync.Password(t, expandHome(s.PasswordFile), os.Getenv, home)
		if err != nil {
			return nil, nil, err
		}
		dir := t.MirrorDir(imapMirrorBase(cfg))
		roots = append(roots, watch.Root{Path: dir})
		opt := imapsync.Options{Password: pw, Log: log}
		pollers = append(pollers, watch.Poller{Name: "imap " + t.String(), Run: func(ctx context.Context, changed func()) error {
			return imapsync.Follow(ctx, t, dir, opt, interval, changed)
		}})
	}
	return roots, pollers, nil
}

// expandHome replaces a leading ~/ by the home folder.
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}
