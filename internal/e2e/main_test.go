// Package e2e drives the built openhuman-core binary the way MCP clients do: as a
// child process speaking newline-delimited JSON-RPC on stdin/stdout, with raw
// NDJSON and with the go-sdk client.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	binPath     string // the built binary
	sharedCache string // XDG_CACHE_HOME shared by tests (warm compilation cache)
	repoRoot    string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "openhuman-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	wd, _ := os.Getwd()
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	binPath = filepath.Join(tmp, "openhuman-core")
	build := exec.Command(goTool(), "build", "-o", binPath, "./cmd/openhuman-core")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building the binary failed: %v\n%s", err, out)
		return 1
	}
	sharedCache = filepath.Join(tmp, "cache")
	return m.Run()
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// env is one isolated OPENHUMAN_HOME with its workspace.
type env struct {
	home, workspace, cache string
	extra                  []string
}

// dependOnSources opens every source file the binary is built from while tests
// are running, so Go's test cache records them: the binary is built in a child
// process the cache cannot see, and without this a change elsewhere in the
// repository would leave a stale cached result here.
var dependOnSources = sync.OnceFunc(func() {
	filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "examples") {
				return filepath.SkipDir
			}
			return nil
		}
		if name := d.Name(); strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".gz") || name == "go.mod" || name == "go.sum" {
			if f, err := os.Open(path); err == nil {
				f.Close()
			}
		}
		return nil
	})
})

func newEnv(t *testing.T) *env {
	t.Helper()
	dependOnSources()
	home := t.TempDir()
	return &env{home: home, workspace: filepath.Join(home, "workspace"), cache: sharedCache}
}

func (e *env) with(kv ...string) *env {
	c := *e
	c.extra = append(append([]string(nil), e.extra...), kv...)
	return &c
}

func (e *env) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENHUMAN_") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") || strings.HasPrefix(kv, "SEARXNG_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "OPENHUMAN_HOME="+e.home, "OPENHUMAN_WORKSPACE="+e.workspace, "XDG_CACHE_HOME="+e.cache)
	// No bilingual paraphrase table unless a test asks for one (with): building it
	// from the installed FreeDict dictionaries takes seconds per store, and the
	// tests' results then do not depend on what the machine has installed.
	out = append(out, "OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=")
	return append(out, e.extra...)
}

func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = e.environ()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (e *env) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.workspace, "audit", "audit.jsonl"))
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// runRaw pipes input into `openhuman-core mcp` and returns the stdout lines
// (each checked to be compact single-line JSON) and stderr.
func runRaw(t *testing.T, e *env, input string, args ...string) ([]map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := e.command(ctx, append([]string{"mcp"}, args...)...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openhuman-core mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	return parseLines(t, stdout.String()), stderr.String()
}

func parseLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var res []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(l)); err != nil || buf.String() != l {
			t.Fatalf("stdout line is not compact JSON: %q (%v)", l, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		res = append(res, m)
	}
	return res
}

func byID(msgs []map[string]any) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, msg := range msgs {
		if id, ok := msg["id"]; ok {
			m[fmt.Sprint(id)] = msg
		}
	}
	return m
}

func lines(in ...string) string { return strings.Join(in, "\n") + "\n" }

func initLine(id any, name string) string {
	idj, _ := json.Marshal(id)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":%q,"version":"0"}}}`, idj, name)
}

const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

func callLine(id any, tool string, args string) string {
	idj, _ := json.Marshal(id)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, idj, tool, args)
}

// liveSession is `openhuman-core mcp` with stdin kept open.
type liveSession struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin interface{ Write([]byte) (int, error) }
	out   chan map[string]any
	start time.Time
	errb  *syncBuf
	close func() error
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func startLive(t *testing.T, e *env, args ...string) *liveSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := e.command(ctx, append([]string{"mcp"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &syncBuf{}
	cmd.Stderr = errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ls := &liveSession{t: t, cmd: cmd, stdin: stdin, out: make(chan map[string]any, 64), start: start, errb: errb}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"_bad": sc.Text()}
			}
			ls.out <- m
		}
		close(ls.out)
	}()
	var once sync.Once
	var waitErr error
	ls.close = func() error {
		once.Do(func() {
			stdin.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case waitErr = <-done:
			case <-time.After(2 * time.Minute):
				cancel()
				waitErr = fmt.Errorf("mcp did not exit after stdin closed: %w", <-done)
			}
			cancel()
		})
		return waitErr
	}
	t.Cleanup(func() { ls.close() })
	return ls
}

func (ls *liveSession) send(line string) {
	ls.t.Helper()
	if _, err := ls.stdin.Write([]byte(line + "\n")); err != nil {
		ls.t.Fatalf("write to mcp: %v", err)
	}
}

func (ls *liveSession) next() map[string]any {
	ls.t.Helper()
	select {
	case m, ok := <-ls.out:
		if !ok {
			ls.t.Fatalf("mcp closed stdout; stderr:\n%s", ls.errb.String())
		}
		if b, bad := m["_bad"]; bad {
			ls.t.Fatalf("non-JSON line on stdout: %q", b)
		}
		return m
	case <-time.After(2 * time.Minute):
		ls.t.Fatalf("no answer within 2 minutes; stderr:\n%s", ls.errb.String())
	}
	return nil
}
