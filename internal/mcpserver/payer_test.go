package mcpserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
)

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestNewSessionsShareTheTokensAuditBudget (issue 29, finding 6's gap): over
// HTTP a client that opens a new session under a new clientInfo.name for
// every few calls is charged to its bearer token, so its lines stop at one
// budget. Keyed on the name (or on the session, which it mints at will), each
// session had a fresh budget and all 60 lines were written.
func TestNewSessionsShareTheTokensAuditBudget(t *testing.T) {
	dir := t.TempDir()
	al := audit.New(audit.Options{Dir: dir, MaxFileBytes: 1 << 20, MaxFiles: 2, SessionBytesPerHour: 4 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f := newFake()
	s, _, _, _ := newServer(t, f, func(o *Options) { o.Audit = al })
	hs := httptest.NewServer(s.HTTPHandler(HTTPOptions{}))
	defer hs.Close()
	for i := 0; i < 20; i++ {
		c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("renamed-%d", i), Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{"tok"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "x"}}); err != nil {
				t.Fatal(err)
			}
		}
		cs.Close()
	}
	al.Close()
	data, err := os.ReadFile(filepath.Join(dir, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(data), `"session":"mcp:renamed-`)
	t.Logf("%d of 60 calls from 20 renamed sessions written under a 4 KiB budget", n)
	if n == 0 || n >= 40 {
		t.Errorf("%d of 60 lines written; want the token's one budget to stop them", n)
	}
}
