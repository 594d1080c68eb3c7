package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
)

// pgBackend is set while TestBackendPostgres runs the store-backed tests over
// PostgreSQL: storeEnv and sourcesEnv then hand out homes whose store is a
// database of its cluster (OPENHUMAN_STORE_URL) instead of a SQLite file.
var pgBackend struct {
	cluster *pgtest.Cluster
	url     string         // the database holding the ingested corpus
	sources map[int]string // databases holding n paging sources, by n
	empty   int            // empty databases handed out so far
}

// TestBackendPostgres runs the end-to-end tests of the tools that read a store
// again with the store in PostgreSQL: the same corpus ingested by the binary
// (`openhuman-core ingest` with OPENHUMAN_STORE_URL), the same MCP and HTTP
// clients, the same assertions. Without PostgreSQL it is skipped saying so
// (failed under CI=true, where .ci/run installs it), as pgtest does.
//
// Not run here: the tests that need no store at all (protocol, SearXNG). The
// empty-store hint, the dense embedder's and the paraphrases' tests run on new
// databases nothing was ingested into (emptyStoreEnv).
func TestBackendPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the PostgreSQL variant of the store-backed end-to-end tests ingests the corpus again")
	}
	cluster := pgtest.Start(t)
	ingestedWorkspace(t) // generates the corpus (and names its folders) once per run
	url := cluster.Database(t, "corpus")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newEnv(t).with("OPENHUMAN_STORE_URL=" + url)
	start := time.Now()
	out, err := e.command(ctx, append([]string{"ingest"}, corpusIn...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("openhuman-core ingest into PostgreSQL: %v\n%s", err, out)
	}
	t.Logf("%s ingested into PostgreSQL in %.1f s", corpusKind, time.Since(start).Seconds())
	// The answers below come from PostgreSQL: the ingest wrote no SQLite file.
	if _, err := os.Stat(filepath.Join(e.workspace, "memory_tree", "chunks.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ingest with OPENHUMAN_STORE_URL left a SQLite store in the workspace (stat: %v)", err)
	}

	pgBackend.cluster, pgBackend.url, pgBackend.sources = cluster, url, map[int]string{}
	t.Cleanup(func() { pgBackend.cluster, pgBackend.url, pgBackend.sources = nil, "", nil })
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"Tools", TestToolsAgainstIngestedStore},
		{"HitsCarryTheirMessages", TestHitsCarryTheirMessages},
		{"Provenance", TestProvenance},
		{"SlowCallAsLastLine", TestSlowCallAsLastLine},
		{"ListSourcesPagedOverMCP", TestListSourcesPagedOverMCP},
		{"ListSourcesPagedOverHTTP", TestListSourcesPagedOverHTTP},
		{"EmptyStoreGivesHint", TestEmptyStoreGivesHint},
		{"StartupFigures", TestStartupFigures},
		{"DenseEmbedder", TestDenseEmbedderEndToEnd},
		{"IngestBuildsParaphrases", TestIngestBuildsParaphrasesForRecall},
	} {
		t.Run(c.name, c.test)
	}
}

// emptyStoreEnv is a fresh home with no store at all; within TestBackendPostgres
// its store is a new, empty database (nothing ingested into it yet), which a
// test may ingest into.
func emptyStoreEnv(t *testing.T) *env {
	t.Helper()
	if pgBackend.url == "" {
		return newEnv(t)
	}
	pgBackend.empty++
	return newEnv(t).with("OPENHUMAN_STORE_URL=" + pgBackend.cluster.Database(t, fmt.Sprintf("empty_%d", pgBackend.empty)))
}

// pgSourcesEnv is sourcesEnv over PostgreSQL: a fresh home whose store is a
// database holding the n paging sources, written once per n through the
// backend's own writer (the tests only read it).
func pgSourcesEnv(t *testing.T, n int) *env {
	t.Helper()
	url, ok := pgBackend.sources[n]
	if !ok {
		url = pgBackend.cluster.Database(t, fmt.Sprintf("sources_%d", n))
		ctx := context.Background()
		st, err := pgstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		start := time.Now()
		for i := 0; i < n; i++ {
			p, err := memtree.Prepare(pagingSource(i))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.IngestPrepared(ctx, p); err != nil {
				t.Fatalf("write source %d into PostgreSQL: %v", i, err)
			}
		}
		t.Logf("%d sources written into PostgreSQL in %.1f s", n, time.Since(start).Seconds())
		pgBackend.sources[n] = url
	}
	return newEnv(t).with("OPENHUMAN_STORE_URL=" + url)
}
