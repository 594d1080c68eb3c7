package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineSignal is a stderr that closes ready when a line containing want is written.
type lineSignal struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  string
	ready chan struct{}
	once  sync.Once
}

func (l *lineSignal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if strings.Contains(l.buf.String(), l.want) {
		l.once.Do(func() { close(l.ready) })
	}
	return len(p), nil
}

func (l *lineSignal) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// startServe runs `serve` on a free loopback port until it listens, stops it and
// returns what it wrote on stderr.
func startServe(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lineSignal{want: "listening on", ready: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, "127.0.0.1:0", stderr) }()
	select {
	case <-stderr.ready:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended before listening: %v\n%s", err, stderr.String())
	case <-time.After(5 * time.Minute):
		t.Fatalf("serve did not start:\n%s", stderr.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

// The generated bearer token is printed on stderr when it is generated, and
// never again at later starts.
func TestServePrintsTokenOnlyWhenGenerated(t *testing.T) {
	home := t.TempDir()
	t.Setenv("OPENHUMAN_HOME", home)
	t.Setenv("OPENHUMAN_WORKSPACE", "")
	t.Setenv("OPENHUMAN_CORE_TOKEN", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())

	first := startServe(t)
	tokenFile := filepath.Join(home, "workspace", "core.token")
	data, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("no token file after the first start: %v\n%s", err, first)
	}
	token := strings.TrimSpace(string(data))
	if len(token) < 32 || strings.Count(first, token) != 1 || !strings.Contains(first, "generated bearer token") {
		t.Fatalf("first start: the generated token is not printed once:\n%s", first)
	}
	for run := range 2 {
		later := startServe(t)
		if strings.Contains(later, token) {
			t.Errorf("start %d printed the token again:\n%s", run+2, later)
		}
		if !strings.Contains(later, "bearer token in "+tokenFile) {
			t.Errorf("start %d does not say where the token is:\n%s", run+2, later)
		}
	}
}
