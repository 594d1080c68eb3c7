package toolwatch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
)

// recorder is a Reloader/PolicySetter that records what the watcher asked for.
type recorder struct {
	mu       sync.Mutex
	reloads  int
	policies []*policy.Policy
	err      error
}

func (r *recorder) Reload(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloads++
	return r.err
}

func (r *recorder) SetPolicy(p *policy.Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policies = append(r.policies, p)
}

func (r *recorder) count() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloads, len(r.policies)
}

// reloadOnly has no SetPolicy.
type reloadOnly struct{ n int }

func (r *reloadOnly) Reload(context.Context) error { r.n++; return nil }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newWatcher(t *testing.T, host Reloader) (*Watcher, *poller, *bytes.Buffer, string) {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "tools")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	w := &Watcher{host: host, opt: Options{Dir: dir, PolicyFile: filepath.Join(home, "policy.toml"), Interval: time.Hour},
		log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	return w, &poller{applied: w.snap()}, &logs, dir
}

func TestPollSettlesThenReloads(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	w, p, logs, dir := newWatcher(t, r)

	if w.poll(ctx, p) || w.poll(ctx, p) {
		t.Fatal("reloaded with nothing changed")
	}
	write(t, filepath.Join(dir, "timeline.wasm"), "first")
	write(t, filepath.Join(dir, "notes.txt"), "ignored")
	if w.poll(ctx, p) {
		t.Fatal("reloaded before the change settled")
	}
	// Still being written: the size changes between polls.
	write(t, filepath.Join(dir, "timeline.wasm"), "first, longer")
	if w.poll(ctx, p) {
		t.Fatal("reloaded while the file was still changing")
	}
	if !w.poll(ctx, p) {
		t.Fatal("no reload after the change settled")
	}
	if n, np := r.count(); n != 1 || np != 0 {
		t.Fatalf("reloads %d, policy sets %d; want 1, 0", n, np)
	}
	if !strings.Contains(logs.String(), "added timeline.wasm") {
		t.Errorf("log does not say what changed:\n%s", logs.String())
	}
	if w.poll(ctx, p) || w.poll(ctx, p) {
		t.Fatal("reloaded again without a change")
	}
	// Removal.
	if err := os.Remove(filepath.Join(dir, "timeline.wasm")); err != nil {
		t.Fatal(err)
	}
	w.poll(ctx, p)
	if !w.poll(ctx, p) {
		t.Fatal("removal did not reload")
	}
	if !strings.Contains(logs.String(), "removed timeline.wasm") {
		t.Errorf("log does not name the removal:\n%s", logs.String())
	}
}

func TestPolicyChanges(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	w, p, logs, _ := newWatcher(t, r)
	write(t, w.opt.PolicyFile, "[defaults]\ntimeout_ms = 5000\n")
	w.poll(ctx, p)
	if !w.poll(ctx, p) {
		t.Fatal("policy creation did not reload")
	}
	r.mu.Lock()
	if len(r.policies) != 1 || r.policies[0].Defaults.TimeoutMS != 5000 {
		t.Fatalf("policy not passed on: %+v", r.policies)
	}
	r.mu.Unlock()

	// An invalid policy keeps the old one (no SetPolicy) but still reloads the directory.
	write(t, w.opt.PolicyFile, "[defaults]\ntimeout_ms = \"soon\"\n")
	w.poll(ctx, p)
	if !w.poll(ctx, p) {
		t.Fatal("policy edit did not reload")
	}
	if n, np := r.count(); n != 2 || np != 1 {
		t.Fatalf("reloads %d, policy sets %d; want 2, 1", n, np)
	}
	if !strings.Contains(logs.String(), "the new policy is invalid") {
		t.Errorf("invalid policy not logged:\n%s", logs.String())
	}

	// A host that cannot swap policies is told to restart.
	ro := &reloadOnly{}
	w2, p2, logs2, _ := newWatcher(t, ro)
	write(t, w2.opt.PolicyFile, "[defaults]\n")
	w2.poll(ctx, p2)
	w2.poll(ctx, p2)
	if ro.n != 1 || !strings.Contains(logs2.String(), "restart openhuman-core mcp") {
		t.Errorf("reload-only host: %d reloads, log:\n%s", ro.n, logs2.String())
	}
}

func TestReloadErrorIsLoggedAndKept(t *testing.T) {
	ctx := context.Background()
	r := &recorder{err: errors.New("disk on fire")}
	w, p, logs, dir := newWatcher(t, r)
	write(t, filepath.Join(dir, "a.wasm"), "x")
	w.poll(ctx, p)
	w.poll(ctx, p)
	n, err := w.Reloads()
	if n != 1 || err == nil || !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("reloads %d err %v log:\n%s", n, err, logs.String())
	}
	// A missing directory is not an error and not a change.
	w.opt.Dir = filepath.Join(dir, "nope")
	p.applied = w.snap()
	if w.poll(ctx, p) {
		t.Error("missing directory triggered a reload")
	}
}

// TestStartStop runs the real polling goroutine.
func TestStartStop(t *testing.T) {
	r := &recorder{}
	dir := t.TempDir()
	w := Start(context.Background(), r, Options{Dir: dir, PolicyFile: filepath.Join(dir, "policy.toml"), Interval: 10 * time.Millisecond})
	write(t, filepath.Join(dir, "a.wasm"), "x")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, _ := r.count(); n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher never reloaded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Stop()
	n, _ := r.count()
	write(t, filepath.Join(dir, "b.wasm"), "y")
	time.Sleep(50 * time.Millisecond)
	if m, _ := r.count(); m != n {
		t.Errorf("reloaded after Stop: %d -> %d", n, m)
	}
}

// statusHost also reports module states, like runtime.Host.
type statusHost struct {
	recorder
	states []runtime.ModuleStatus
}

func (s *statusHost) Status() []runtime.ModuleStatus { return s.states }

func TestRefusalsAreLogged(t *testing.T) {
	ctx := context.Background()
	h := &statusHost{}
	w, p, logs, dir := newWatcher(t, h)
	h.states = []runtime.ModuleStatus{
		{Module: runtime.ModuleInfo{Name: "memory.search.wasm", Origin: runtime.OriginBuiltin}, State: runtime.StateReady},
		{Module: runtime.ModuleInfo{Name: "a.wasm", SHA256: "aa", Origin: runtime.OriginDirectory}, State: runtime.StateRefused, Error: "refused a.wasm: no policy entry pins sha256 aa"},
		{Module: runtime.ModuleInfo{Name: "b.wasm", SHA256: "bb", Origin: runtime.OriginDirectory}, State: runtime.StateReady, Tools: []string{"x.y"}},
	}
	write(t, filepath.Join(dir, "a.wasm"), "a")
	w.poll(ctx, p)
	w.poll(ctx, p)
	out := logs.String()
	if !strings.Contains(out, "no policy entry pins sha256 aa") || !strings.Contains(out, "tool module loaded") || strings.Contains(out, "memory.search.wasm") {
		t.Fatalf("status not reported as expected:\n%s", out)
	}
	// Unchanged states are not logged again; a removal is.
	logs.Reset()
	h.states = h.states[:2]
	write(t, filepath.Join(dir, "a.wasm"), "aa")
	w.poll(ctx, p)
	w.poll(ctx, p)
	out = logs.String()
	if strings.Contains(out, "no policy entry") || !strings.Contains(out, "tool module removed") {
		t.Fatalf("second report:\n%s", out)
	}
}
