package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	corpusOnce sync.Once
	corpusWS   string // a workspace holding an ingested store
	corpusKind string // "generated corpus" or "fixture"
	corpusErr  error
	// corpusIn are the folders the store was ingested from (TestBackendPostgres
	// ingests them into PostgreSQL too).
	corpusIn []string
)

// sharedDataDir is ../shared/data beside the repository, or "".
func sharedDataDir() string {
	d := filepath.Join(repoRoot, "..", "shared", "data", "gencorpus")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return filepath.Dir(d)
	}
	return ""
}

// ingestedWorkspace returns a workspace with a store ingested once per test run:
// from the generated corpus when ../shared/data is present, else from a small
// fixture written here.
func ingestedWorkspace(t testing.TB) string {
	t.Helper()
	corpusOnce.Do(func() {
		root, err := os.MkdirTemp("", "openhuman-e2e-store-")
		if err != nil {
			corpusErr = err
			return
		}
		corpusWS = filepath.Join(root, "workspace")
		input := filepath.Join(root, "input")
		var paths []string
		if data := sharedDataDir(); data != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			gen := exec.CommandContext(ctx, goTool(), "run", "-C", filepath.Join(data, "gencorpus"), ".", "-out", input)
			if out, err := gen.CombinedOutput(); err != nil {
				corpusErr = fmt.Errorf("gencorpus: %v\n%s", err, out)
				return
			}
			corpusKind = "generated corpus"
			paths = []string{filepath.Join(input, "mail"), filepath.Join(input, "chat"), filepath.Join(input, "docs")}
		} else {
			corpusKind = "fixture"
			paths, corpusErr = writeFixture(input)
			if corpusErr != nil {
				return
			}
		}
		corpusIn = paths
		e := &env{home: root, workspace: corpusWS, cache: sharedCache}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := e.command(ctx, append([]string{"ingest"}, paths...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			corpusErr = fmt.Errorf("openhuman-core ingest: %v\n%s", err, out)
		}
	})
	if corpusErr != nil {
		t.Fatal(corpusErr)
	}
	t.Logf("store ingested from the %s", corpusKind)
	return corpusWS
}

// writeFixture writes a few documents and a chat batch that mention "phoenix".
func writeFixture(dir string) ([]string, error) {
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{
		"phoenix-launch.md": "# Phoenix launch\n\nThe Phoenix launch slipped two weeks because the payment integration failed review.\nContact ann@kestrel.example for the new date.\n",
		"budget.md":         "# Quarterly budget\n\nThe quarterly budget review moved to Thursday. #budget\n",
		"lisbon-trip.txt":   "Trip to Lisbon: flights booked, hotel near Alfama, ask bob@home.example about the car.\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	chat := filepath.Join(dir, "chat")
	if err := os.MkdirAll(chat, 0o755); err != nil {
		return nil, err
	}
	batch := `{"platform":"slack","channel_label":"#phoenix","messages":[` +
		`{"author":"ann","timestamp":1767700000000,"text":"Phoenix status: launch moved, see the doc","source_ref":"slack:phoenix:1"},` +
		`{"author":"bob","timestamp":1767700060000,"text":"ok, I will tell the customer @carol","source_ref":"slack:phoenix:2"}]}`
	if err := os.WriteFile(filepath.Join(chat, "phoenix.json"), []byte(batch), 0o644); err != nil {
		return nil, err
	}
	return []string{docs, chat}, nil
}

// storeEnv is a fresh home whose workspace is the shared ingested store. The
// audit log is shared too: tests find their lines by their own request ids.
// Within TestBackendPostgres it is a fresh home whose store is the corpus
// ingested into PostgreSQL (OPENHUMAN_STORE_URL).
func storeEnv(t *testing.T) *env {
	t.Helper()
	if pgBackend.url != "" {
		return newEnv(t).with("OPENHUMAN_STORE_URL=" + pgBackend.url)
	}
	ws := ingestedWorkspace(t)
	e := newEnv(t)
	e.workspace = ws
	return e
}

// auditFor returns the audit lines whose request_id starts with prefix.
func auditFor(t *testing.T, e *env, prefix string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range e.auditLines(t) {
		if id, _ := l["request_id"].(string); strings.HasPrefix(id, prefix) {
			out = append(out, l)
		}
	}
	return out
}
