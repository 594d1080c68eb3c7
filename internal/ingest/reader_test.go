package ingest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// collectOutput is an output that keeps what a reader gives it, for tests of one
// reader on its own (the store tests run the whole pipeline into a real store).
type collectOutput struct {
	mu      sync.Mutex
	sources []memtree.SourceInput
	mails   []*readkit.MailMessage
	people  []memtree.ContactInput
}

func (c *collectOutput) Source(src memtree.SourceInput) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, src)
}

func (c *collectOutput) Mail(m *readkit.MailMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mails = append(c.mails, m)
}

// runReader hands path (a file or folder) to r as the runner would, with the folder
// holding it as the ingest root, and returns what r emitted and reported. It fails
// the test when r does not detect path.
func runReader(t *testing.T, r readkit.Reader, path string) (*collectOutput, *readkit.Report) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var head []byte
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		head = b[:min(len(b), readkit.HeadBytes)]
	}
	if !r.Detect(path, st.IsDir(), head) {
		t.Fatalf("%s reader does not detect %s", r.Kind(), path)
	}
	root := filepath.Dir(path)
	out := &collectOutput{}
	rep := readkit.NewReport(nil)
	r.Read(context.Background(), readkit.Input{Path: path, Root: root, Rel: filepath.ToSlash(filepath.Base(path))}, out, rep)
	return out, rep
}
