// Package toolwatch polls the third-party tools directory and policy.toml while the
// MCP server runs, and asks the runtime to re-audit and swap in the module set when
// either changes.
//
// It stats the files about once a second (no file-notification dependency, and it
// works the same on every filesystem); a change is acted on only once the directory
// has stopped changing for one poll interval, so a module still being copied is not
// judged half-written.
package toolwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
)

// DefaultInterval is how often the directory and the policy are polled.
const DefaultInterval = time.Second

// Reloader re-scans the tools directory and swaps the served module set
// atomically (runtime.Host implements it). A refused module must not disturb the
// tools already served.
type Reloader interface {
	Reload(ctx context.Context) error
}

// PolicySetter is implemented by hosts that can take a new policy without a
// restart. When the host does not implement it, a policy change is logged with a
// note that it takes effect on restart.
type PolicySetter interface {
	SetPolicy(p *policy.Policy)
}

// StatusReporter is implemented by hosts that report per-module load state
// (runtime.Host). After each reload the watcher logs every third-party module
// that is newly refused or failed, with the reason, and every newly served one.
type StatusReporter interface {
	Status() []runtime.ModuleStatus
}

// Options configure a watcher.
type Options struct {
	Dir        string        // the tools directory, e.g. $OPENHUMAN_HOME/tools
	PolicyFile string        // policy.toml
	Interval   time.Duration // 0 = DefaultInterval
	Logger     *slog.Logger  // nil = discard
}

// Watcher polls until its context ends or Stop is called.
type Watcher struct {
	host    Reloader
	opt     Options
	log     *slog.Logger
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	reloads int
	lastErr error
	// reported is the last logged state of each directory module ("sha256 state error").
	reported map[string]string
}

// fileState is what a poll compares: enough to notice a replaced, edited, added
// or removed file without reading it.
type fileState struct {
	size    int64
	modTime time.Time
	mode    fs.FileMode
}

type snapshot struct {
	dirErr string
	files  map[string]fileState // *.wasm in Dir by name
	policy *fileState           // nil when the policy file does not exist
}

func (s snapshot) equal(o snapshot) bool {
	if s.dirErr != o.dirErr || len(s.files) != len(o.files) || (s.policy == nil) != (o.policy == nil) {
		return false
	}
	if s.policy != nil && *s.policy != *o.policy {
		return false
	}
	for k, v := range s.files {
		if w, ok := o.files[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (s snapshot) policyEqual(o snapshot) bool {
	if (s.policy == nil) != (o.policy == nil) {
		return false
	}
	return s.policy == nil || *s.policy == *o.policy
}

// describe lists what differs between two snapshots, for the log.
func describe(old, cur snapshot) string {
	var parts []string
	for name, st := range cur.files {
		if o, ok := old.files[name]; !ok {
			parts = append(parts, "added "+name)
		} else if o != st {
			parts = append(parts, "changed "+name)
		}
	}
	for name := range old.files {
		if _, ok := cur.files[name]; !ok {
			parts = append(parts, "removed "+name)
		}
	}
	if !old.policyEqual(cur) {
		parts = append(parts, "policy changed")
	}
	if old.dirErr != cur.dirErr {
		if cur.dirErr == "" {
			parts = append(parts, "directory readable again")
		} else {
			parts = append(parts, "directory unreadable: "+cur.dirErr)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (w *Watcher) snap() snapshot {
	s := snapshot{files: map[string]fileState{}}
	if w.opt.Dir != "" {
		entries, err := os.ReadDir(w.opt.Dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.dirErr = err.Error()
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".wasm") {
				continue
			}
			fi, err := os.Stat(filepath.Join(w.opt.Dir, e.Name()))
			if err != nil {
				continue // removed between ReadDir and Stat: the next poll sees it gone
			}
			s.files[e.Name()] = fileState{size: fi.Size(), modTime: fi.ModTime(), mode: fi.Mode()}
		}
	}
	if w.opt.PolicyFile != "" {
		if fi, err := os.Stat(w.opt.PolicyFile); err == nil {
			s.policy = &fileState{size: fi.Size(), modTime: fi.ModTime(), mode: fi.Mode()}
		}
	}
	return s
}

// Start polls opt.Dir and opt.PolicyFile in a goroutine and calls host.Reload
// after each settled change (and SetPolicy first when the policy changed and the
// host supports it). The first snapshot is taken before Start returns, so only
// changes made after it count. Stop it with Stop or by cancelling ctx.
func Start(ctx context.Context, host Reloader, opt Options) *Watcher {
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{host: host, opt: opt, log: log.With("component", "toolwatch"), cancel: cancel, done: make(chan struct{})}
	first := w.snap()
	w.reportStatus() // what the host loaded at start, so start-up refusals are logged too
	go w.loop(ctx, first)
	return w
}

// poller holds the state between polls: the snapshot last acted on and a change
// seen but not yet settled.
type poller struct {
	applied snapshot
	pending *snapshot
}

func (w *Watcher) loop(ctx context.Context, first snapshot) {
	defer close(w.done)
	t := time.NewTicker(w.opt.Interval)
	defer t.Stop()
	p := &poller{applied: first}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.poll(ctx, p)
	}
}

// poll takes one snapshot and reloads when a change has settled (looked the same
// on two consecutive polls). It reports whether it reloaded.
func (w *Watcher) poll(ctx context.Context, p *poller) bool {
	cur := w.snap()
	switch {
	case p.pending == nil && cur.equal(p.applied):
		return false
	case p.pending == nil || !cur.equal(*p.pending):
		p.pending = &cur // new or still changing: wait one more interval
		return false
	}
	w.apply(ctx, p.applied, cur)
	p.applied, p.pending = cur, nil
	return true
}

func (w *Watcher) apply(ctx context.Context, old, cur snapshot) {
	w.log.Info("tools changed; re-auditing", "dir", w.opt.Dir, "changes", describe(old, cur))
	if !old.policyEqual(cur) {
		if ps, ok := w.host.(PolicySetter); ok {
			p, err := policy.Load(w.opt.PolicyFile)
			if err != nil {
				// Keep serving under the old policy: a typo must not unload every tool.
				w.log.Error("policy change ignored: the new policy is invalid; still serving under the previous one", "file", w.opt.PolicyFile, "err", err)
			} else {
				ps.SetPolicy(p)
			}
		} else {
			w.log.Warn("policy.toml changed, but this host cannot swap policies live; restart openhuman-core mcp to apply it", "file", w.opt.PolicyFile)
		}
	}
	err := w.host.Reload(ctx)
	if err != nil {
		w.log.Error("reloading tools failed; the tools already served are unchanged", "dir", w.opt.Dir, "err", err)
	}
	w.mu.Lock()
	w.reloads++
	w.lastErr = err
	w.mu.Unlock()
	w.reportStatus()
}

// reportStatus logs directory modules whose state changed since the last report:
// refusals and failures at error level with the runtime's reason (what to add to
// the policy, which name collides, that a signature is invalid), new ones at info.
func (w *Watcher) reportStatus() {
	sr, ok := w.host.(StatusReporter)
	if !ok {
		return
	}
	seen := map[string]string{}
	for _, st := range sr.Status() {
		if st.Module.Origin != runtime.OriginDirectory {
			continue
		}
		key := st.Module.Name
		val := st.Module.SHA256 + " " + st.State + " " + st.Error
		seen[key] = val
		if w.reported[key] == val {
			continue
		}
		switch st.State {
		case runtime.StateRefused, runtime.StateFailed:
			w.log.Error("tool module not loaded", "module", st.Module.Name, "state", st.State, "reason", st.Error)
		case runtime.StateDisabled:
			w.log.Warn("tool module disabled", "module", st.Module.Name, "reason", st.Error)
		default:
			w.log.Info("tool module loaded", "module", st.Module.Name, "tools", strings.Join(st.Tools, ","), "sha256", st.Module.SHA256, "state", st.State)
		}
	}
	for key := range w.reported {
		if _, ok := seen[key]; !ok {
			w.log.Info("tool module removed", "module", key)
		}
	}
	w.reported = seen
}

// Reloads reports how many reloads the watcher has triggered and the last error.
func (w *Watcher) Reloads() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reloads, w.lastErr
}

// Stop ends polling and waits for the goroutine (and any reload in progress) to finish.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

// String describes the watcher for logs.
func (w *Watcher) String() string {
	return fmt.Sprintf("toolwatch(dir=%s, policy=%s, every %s)", w.opt.Dir, w.opt.PolicyFile, w.opt.Interval)
}
