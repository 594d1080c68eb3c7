package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
)

// The memory tree's backend: the embedded SQLite file under the workspace, or,
// with `[store] url = "postgres://…"` (or OPENHUMAN_STORE_URL), a PostgreSQL
// database (internal/pgstore). The tool host, ingest, forget, status and
// doctor's store check work on both.

// hostStore is the store a tool host reads.
type hostStore interface {
	memory.Store
	Open(ctx context.Context) error
	Warm(ctx context.Context) error
	Close() error
}

// openHostStore returns the store cfg selects, not yet opened, and a sentence
// for errors opening it.
func openHostStore(cfg *config.Config) (hostStore, func(error) error, error) {
	if cfg.Store.URL == "" && len(cfg.Store.Replicas) > 0 {
		return nil, nil, fmt.Errorf("[store] replicas (OPENHUMAN_STORE_REPLICAS) are standbys of a PostgreSQL primary: set [store] url (OPENHUMAN_STORE_URL) to the primary too")
	}
	if cfg.Store.URL != "" {
		return &pgHostStore{url: cfg.Store.URL, replicas: cfg.Store.Replicas, dictionaries: cfg.MemoryTree.PivotDictionaries}, func(err error) error {
			return fmt.Errorf("open the memory tree in PostgreSQL ([store] url / OPENHUMAN_STORE_URL): %w", err)
		}, nil
	}
	wrap := func(err error) error {
		return fmt.Errorf("open the memory tree read-only at %s: %w (check the file's permissions, or move it aside and run openhuman-core ingest again)", cfg.StorePath(), err)
	}
	st, err := memtree.NewReadOnly(cfg.StorePath())
	if err != nil {
		return nil, nil, wrap(err)
	}
	return st, wrap, nil
}

// pgHostStore is a PostgreSQL store opened by Open (the host opens its store
// beside loading the runtime; nothing reads it before Open returns).
type pgHostStore struct {
	url          string
	replicas     []string         // hot standbys the reads go to first
	dictionaries []string         // the paraphrase dictionaries ([memory_tree] pivot_dictionaries)
	embedder     memtree.Embedder // recall's dense embedder (nil: offline only)
	*pgstore.Store
}

// SetEmbedder makes recall hybrid with e once the store is open (called before
// Open).
func (p *pgHostStore) SetEmbedder(e memtree.Embedder) { p.embedder = e }

func (p *pgHostStore) Open(ctx context.Context) error {
	st, err := pgstore.Open(ctx, p.url, p.replicas...)
	if err != nil {
		return err
	}
	// Recall expands with WordNet and this machine's paraphrase table, when an
	// ingest on it has built one (query-side data, never in the database).
	file, err := ingest.MachineParaphraseFile(ctx, p.dictionaries, false)
	if err != nil {
		slog.Warn("recall expands with WordNet alone: the paraphrase table cannot be read", "err", err)
	}
	st.SetParaphraseFile(file)
	if p.embedder != nil {
		st.SetEmbedder(p.embedder)
	}
	p.Store = st
	return nil
}

// Warm reads the generation's counts the first search needs.
func (p *pgHostStore) Warm(ctx context.Context) error {
	if p.Store == nil {
		return nil
	}
	_, err := p.Store.BeginRead(ctx)
	return err
}

func (p *pgHostStore) Close() error {
	if p.Store != nil {
		p.Store.Close()
	}
	return nil
}

// storeStatus is what the store cfg selects holds.
func storeStatus(ctx context.Context, cfg *config.Config) (memtree.StoreStatus, error) {
	if cfg.Store.URL == "" {
		return memtree.Status(ctx, cfg.StorePath())
	}
	st, err := pgstore.Open(ctx, cfg.Store.URL)
	if err != nil {
		return memtree.StoreStatus{}, err
	}
	defer st.Close()
	return st.Status(ctx)
}

// runIngestPostgres is `ingest` into the PostgreSQL store: every source in its
// own transaction, the same readers and summary as the embedded store; the
// machine's paraphrase table is built as for the embedded store (a file beside
// the compile cache, which recall on this machine reads), and the chunks are
// embedded with the configured dense embedder as on the embedded store.
func runIngestPostgres(cmd *cobra.Command, cfg *config.Config, args []string, kind string, log *slog.Logger) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	store, err := pgstore.Open(ctx, cfg.Store.URL)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer store.Close()
	sum, runErr := ingest.Run(ctx, store, args, ingest.Options{Kind: kind, Progress: stderr, Logger: log})
	printInputLines(stderr, cfg, sum, log)
	code := 0
	if runErr != nil {
		fmt.Fprintln(stderr, "ingest:", runErr)
		code = 1
	}
	if runErr == nil && ctx.Err() == nil {
		if file, res, err := ingest.BuildMachineParaphraseFile(ctx, cfg.MemoryTree.PivotDictionaries); err != nil {
			fmt.Fprintf(stderr, "ingest: error: paraphrases from %s: %v (the text is ingested and searchable; recall expands with WordNet alone)\n", strings.Join(cfg.MemoryTree.PivotDictionaries, ", "), err)
			sum.Failures++
		} else if file != "" && res.Words > 0 {
			fmt.Fprintf(stderr, "ingest: paraphrases of %d words pivoted through %s in %.1f s\n", res.Words, strings.Join(res.Dictionaries, " and "), res.Seconds)
		}
		embedAfterIngest(ctx, store, cfg, stderr, sum)
	}
	if sum.Failures > 0 {
		code = 1
	}
	fmt.Fprintln(stderr, sum.Line())
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// checkPostgresStore is doctor's store check on PostgreSQL: the server answers,
// the schema is current, and the chunk count reads.
func checkPostgresStore(ctx context.Context, url string) (string, string, string, string) {
	st, err := pgstore.Open(ctx, url)
	if err != nil {
		return "store", checkFail, err.Error(), "check [store] url / OPENHUMAN_STORE_URL, that the server runs, and the user's rights on the database"
	}
	defer st.Close()
	b, err := st.BeginRead(ctx)
	if err != nil {
		return "store", checkFail, "PostgreSQL answers but the memory tree cannot be read: " + err.Error(), "check the user's rights on the database's tables"
	}
	if b == nil {
		return "store", checkWarn, "PostgreSQL store is empty: every tool answers empty", "openhuman-core ingest PATH... (with the same store url)"
	}
	return "store", checkOK, fmt.Sprintf("PostgreSQL store answers (%d chunks)", b.Stats().Chunks), ""
}

// checkPostgresReplica is doctor's check of replica i ([store] replicas): it
// answers, is a standby, and holds the memory tree.
func checkPostgresReplica(ctx context.Context, i int, url string) (string, string, string, string) {
	name := fmt.Sprintf("replica %d", i+1)
	st, err := pgstore.CheckReplica(ctx, url)
	if err != nil {
		return name, checkWarn, err.Error() + "; reads go to the primary meanwhile", "check [store] replicas / OPENHUMAN_STORE_REPLICAS, that the standby runs and streams from the primary"
	}
	if !st.InRecovery {
		return name, checkWarn, fmt.Sprintf("%s answers but is not a standby (pg_is_in_recovery is false): what it holds may differ from the primary", st.Where), "name hot standbys of the store URL's database (pg_basebackup -R)"
	}
	lag := "no transaction replayed yet"
	if st.Lag != nil {
		lag = fmt.Sprintf("last replayed transaction %s old", st.Lag.Round(time.Millisecond))
	}
	return name, checkOK, fmt.Sprintf("standby %s answers (%d chunks; %s)", st.Where, st.Chunks, lag), ""
}

// forgetter is a store forget deletes from.
type forgetter interface {
	Forget(ctx context.Context, f memtree.ForgetFilter, dryRun bool) (memtree.ForgetResult, error)
	Close() error
}

// pgForgetter is a PostgreSQL store as a forgetter.
type pgForgetter struct{ *pgstore.Store }

func (p pgForgetter) Close() error { p.Store.Close(); return nil }

// openForgetStore opens the store cfg selects for writing (an embedded store
// that does not exist yet is an error: nothing to forget).
func openForgetStore(ctx context.Context, cfg *config.Config) (forgetter, error) {
	if cfg.Store.URL != "" {
		st, err := pgstore.Open(ctx, cfg.Store.URL)
		if err != nil {
			return nil, fmt.Errorf("forget: %w", err)
		}
		return pgForgetter{st}, nil
	}
	st, err := memtree.Status(ctx, cfg.StorePath())
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	if !st.Exists {
		return nil, fmt.Errorf("forget: there is no memory tree at %s yet; nothing to forget", cfg.StorePath())
	}
	store, err := memtree.Open(cfg.StorePath())
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	return store, nil
}
