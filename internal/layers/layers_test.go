package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/openhuman/openhuman-core/"

// deps lists the packages pkg links (go list -deps, not its tests').
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v %s", pkg, err, msg)
	}
	set := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		set[l] = true
	}
	return set
}

// TestLayers: the sandbox and the servers link no store, the store no engine,
// the engine no store and no read API (see doc.go).
func TestLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the layering test reads `go list -deps`: %v", err)
	}
	forbidden := []struct {
		pkg    string
		links  []string
		reason string
	}{
		{"runtime", []string{"modernc.org/sqlite", mod + "internal/memtree", mod + "internal/lexicon", mod + "internal/retrieval", mod + "internal/memory"}, "the sandbox consumes runtime.Reader and links no store"},
		{"internal/mcpserver", []string{"modernc.org/sqlite", mod + "internal/memtree", mod + "internal/lexicon"}, "the MCP servers link no store"},
		{"internal/rpcserver", []string{"modernc.org/sqlite", mod + "internal/memtree", mod + "internal/lexicon"}, "the /rpc server links no store"},
		{"internal/toolwatch", []string{"modernc.org/sqlite", mod + "internal/memtree", mod + "internal/lexicon"}, "the tool watcher links no store"},
		{"internal/memtree", []string{mod + "internal/retrieval", mod + "internal/memory"}, "the SQLite backend imports analysis and index, never the engine or the read API"},
		{"internal/retrieval", []string{mod + "internal/memtree", mod + "internal/memory", "modernc.org/sqlite"}, "the engine ranks over index.Backend and links no backend"},
		{"internal/memory", []string{mod + "internal/memtree", "modernc.org/sqlite"}, "the read API runs over any backend"},
		{"internal/retrieval/index", []string{mod + "internal/retrieval", mod + "internal/memtree", "modernc.org/sqlite"}, "the contract depends on neither side"},
		{"internal/ingest/readkit", []string{mod + "internal/ingest", mod + "internal/ingest/mail", mod + "internal/ingest/chat", mod + "internal/ingest/notes"}, "the readers' core imports no format family and not the runner"},
		{"internal/ingest/mail", []string{mod + "internal/ingest", mod + "internal/ingest/chat", mod + "internal/ingest/notes"}, "a format family imports only readkit, never another family"},
		{"internal/ingest/chat", []string{mod + "internal/ingest", mod + "internal/ingest/mail", mod + "internal/ingest/notes"}, "a format family imports only readkit, never another family"},
		{"internal/ingest/notes", []string{mod + "internal/ingest", mod + "internal/ingest/mail", mod + "internal/ingest/chat"}, "a format family imports only readkit, never another family"},
	}
	for _, f := range forbidden {
		d := deps(t, f.pkg)
		for _, l := range f.links {
			if d[l] {
				t.Errorf("%s links %s: %s", f.pkg, l, f.reason)
			}
		}
	}
	// The wiring still reaches every layer (the test would pass vacuously if a
	// package were renamed).
	all := deps(t, "cmd/openhuman-core")
	for _, p := range []string{"internal/memtree", "internal/memory", "internal/retrieval", "internal/retrieval/index", "internal/analysis", "runtime", "internal/ingest/readkit", "internal/ingest/mail", "internal/ingest/chat", "internal/ingest/notes"} {
		if !all[mod+p] {
			t.Errorf("cmd/openhuman-core does not link %s: the layering test names a package that moved", p)
		}
	}
}
