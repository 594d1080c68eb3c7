package rpcserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/audit"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A client that goes away mid-call is a normal end: no WARN line (and no wasm stack
// trace) in the log, and the audit line says "cancelled" and keeps the module digest.
func TestCancelledCallIsQuietAndAudited(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	al := audit.New(audit.Options{Dir: dir, Logger: log})
	e := newRealEnvWith(t, 15000, log, al)

	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"` + stallQuery + `"}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.http.URL+"/rpc", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Cancel once the call is running in its module (the stalling store holds it).
	for !inFlight(e) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	e.http.Close() // waits for the handler, which writes the audit line
	al.Close()
	var entry audit.Entry
	f, err := os.Open(filepath.Join(dir, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Fatal(err)
		}
	}
	if lines != 1 || entry.Outcome != audit.OutcomeCancelled || entry.Tool != "memory.search" {
		t.Fatalf("audit: %d lines, last %+v", lines, entry)
	}
	if want := e.mods["memory.search"].SHA256; entry.ModuleSHA256 != want || want == "" {
		t.Errorf("audit module_sha256 = %q, want the memory module's %q", entry.ModuleSHA256, want)
	}
	out := logs.String()
	if strings.Contains(out, "level=WARN") || strings.Contains(out, "wasm stack trace") {
		t.Errorf("a cancellation was logged as a warning:\n%s", out)
	}
	if !strings.Contains(out, "tool call cancelled") {
		t.Errorf("no debug line about the cancellation:\n%s", out)
	}
}

// inFlight reports whether a memory tool call is running in e's runtime.
func inFlight(e *realEnv) bool {
	for _, c := range e.srv.inflight {
		if len(c) > 0 {
			return true
		}
	}
	return false
}
