//go:build linux

package hostile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

// Bounds every child runs under, whatever the binary does.
const (
	// addressSpaceLimit is the child's RLIMIT_AS (set with prlimit): a runaway
	// allocation fails inside the child instead of taking the machine down.
	addressSpaceLimit = 6 << 30
	// killAboveKB is the resident size at which the sampler kills the child
	// (the base reached 6 GB in 13 s on finding 2).
	killAboveKB = 1536 << 10
	// sampleEvery is how often /proc/<pid>/status is read.
	sampleEvery = 10 * time.Millisecond
)

var (
	binPath  string // the binary under test
	repoRoot string
	cacheDir string // XDG_CACHE_HOME shared by the tests (warm compiled code)
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	tmp, err := os.MkdirTemp("", "openhuman-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	wd, _ := os.Getwd()
	repoRoot = filepath.Clean(filepath.Join(wd, "..", "..", ".."))
	cacheDir = filepath.Join(tmp, "cache")
	binPath = os.Getenv("OPENHUMAN_HOSTILE_BIN")
	if binPath == "" {
		if testing.Short() {
			fmt.Fprintln(os.Stderr, "hostile: -short: not building the binary")
			return m.Run()
		}
		binPath = filepath.Join(tmp, "openhuman-core")
		build := exec.Command("go", "build", "-o", binPath, "./cmd/openhuman-core")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "hostile: building the binary failed: %v\n%s", err, out)
			return 1
		}
		dependOnSources()
	}
	// Warm the compiled-code cache once, so the first-party modules' compile
	// is not inside any test's memory figures.
	h := &home{dir: filepath.Join(tmp, "warm"), cache: cacheDir}
	os.MkdirAll(filepath.Join(h.dir, "tools"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "tools", "list", "--json")
	cmd.Env = h.environ()
	cmd.Run()
	return m.Run()
}

// dependOnSources opens every source file the binary is built from, so Go's
// test cache records them (the binary is built by a child the cache cannot see).
func dependOnSources() {
	filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if name := d.Name(); strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".gz") || name == "go.mod" {
			if f, err := os.Open(path); err == nil {
				f.Close()
			}
		}
		return nil
	})
}

func needBinary(t *testing.T) {
	t.Helper()
	if binPath == "" {
		t.Skip("-short and no OPENHUMAN_HOSTILE_BIN: the black-box suite needs a binary")
	}
}

// home is one isolated OPENHUMAN_HOME: tools/, policy.toml, config.toml and the
// workspace (the audit log is workspace/audit/audit.jsonl).
type home struct {
	dir, cache string
	extra      []string
}

func newHome(t *testing.T) *home {
	t.Helper()
	needBinary(t)
	h := &home{dir: t.TempDir(), cache: cacheDir}
	if err := os.MkdirAll(h.tools(), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *home) tools() string     { return filepath.Join(h.dir, "tools") }
func (h *home) workspace() string { return filepath.Join(h.dir, "workspace") }

func (h *home) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENHUMAN_") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") || strings.HasPrefix(kv, "GOMEMLIMIT=") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "OPENHUMAN_HOME="+h.dir, "OPENHUMAN_WORKSPACE="+h.workspace(), "XDG_CACHE_HOME="+h.cache,
		"OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=")
	return append(out, h.extra...)
}

// manifest is an openhuman/1 manifest serving tool name with caps and limits.
func manifest(name string, caps []string, limits string) string {
	q := make([]string, len(caps))
	for i, c := range caps {
		q[i] = strconv.Quote(c)
	}
	return fmt.Sprintf("abi = \"openhuman/1\"\ncapabilities = [%s]\n[[tool]]\nname = %q\ntitle = \"t\"\ndescription = \"hostile\"\ninput_schema = '''{\"type\":\"object\"}'''\noutput_schema = '''{\"type\":\"object\"}'''\nannotations = { readOnlyHint = true, openWorldHint = false }\n[limits]\n%s\n",
		strings.Join(q, ", "), name, limits)
}

// module is a hostile module placed in tools/ and, when pinned, in the policy.
type module struct {
	file   string
	raw    []byte // before packing
	tool   string
	caps   []string
	limits string // [limits] lines; default timeout_ms = 1000, memory_mib = 4
	pinned bool
	extra  string // further policy entry lines
}

const defaultLimits = "timeout_ms = 1000\nmemory_mib = 4"

// pack embeds m's manifest.
func pack(t *testing.T, m module) []byte {
	t.Helper()
	limits := m.limits
	if limits == "" {
		limits = defaultLimits
	}
	out, err := wasmbin.SetCustomSection(m.raw, policy.ManifestSection, []byte(manifest(m.tool, m.caps, limits)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// install writes the modules into tools/ and the pinned ones into policy.toml
// (mode 0600), returning each packed file by name.
func (h *home) install(t *testing.T, mods ...module) map[string][]byte {
	t.Helper()
	var pol strings.Builder
	out := map[string][]byte{}
	for _, m := range mods {
		b := pack(t, m)
		out[m.file] = b
		if err := os.WriteFile(filepath.Join(h.tools(), m.file), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if m.pinned {
			q := make([]string, len(m.caps))
			for i, c := range m.caps {
				q[i] = strconv.Quote(c)
			}
			fmt.Fprintf(&pol, "[[module]]\nfile = %q\nsha256 = %q\ngrant = [%s]\n%s\n", m.file, sum(b), strings.Join(q, ", "), m.extra)
		}
	}
	h.writePolicy(t, pol.String())
	return out
}

func (h *home) writePolicy(t *testing.T, text string) {
	t.Helper()
	p := filepath.Join(h.dir, "policy.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o600)
}

func (h *home) writeConfig(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// auditLines reads every audit file (the live one and the rotated ones).
func (h *home) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.workspace(), "audit", "audit.jsonl*"))
	var out []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				t.Errorf("audit line of %d bytes is not JSON: %v", len(l), err)
				continue
			}
			out = append(out, m)
		}
	}
	return out
}

// child is a running binary under RLIMIT_AS, its resident size sampled and
// bounded, killed at its time limit.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *lockedBuffer // raw stdout when not framed
	lines  chan map[string]any
	stderr *lockedBuffer
	start  time.Time

	peakRSS atomic.Int64 // kB, sampled
	hwm     atomic.Int64 // kB, VmHWM at the last sample
	killed  atomic.Value // string: why the harness killed it
	done    chan struct{}
	waitErr error
	nextID  int
	pending map[string]map[string]any // answers read while awaiting another id
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Keep at most 4 MiB: a misbehaving child cannot fill the test's memory.
	if l.b.Len() < 4<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// spawn starts the binary with args in h, killed after limit. With framed,
// stdout is read as JSON lines into c.lines.
func spawn(t *testing.T, h *home, limit time.Duration, framed bool, args ...string) *child {
	t.Helper()
	argv := append([]string{fmt.Sprintf("--as=%d", addressSpaceLimit), "--", binPath}, args...)
	cmd := exec.Command("prlimit", argv...)
	cmd.Env = h.environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &child{t: t, cmd: cmd, stderr: &lockedBuffer{}, stdout: &lockedBuffer{}, done: make(chan struct{}), lines: make(chan map[string]any, 4096)}
	cmd.Stderr = c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdin = stdin
	var stdout io.Reader
	if framed {
		stdout, err = cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
	} else {
		cmd.Stdout = c.stdout
	}
	// The child's ru_maxrss includes the test process's resident size at the
	// fork: give memory back first so that figure is the child's.
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // our VmHWM restarts from our size now
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.start = time.Now()
	if framed {
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					m = map[string]any{"_bad_line": sc.Text()}
				}
				select {
				case c.lines <- m:
				default: // nobody reads: drop rather than block the child
				}
			}
			io.Copy(io.Discard, stdout)
			close(c.lines)
		}()
	}
	go func() { c.waitErr = cmd.Wait(); close(c.done) }()
	go c.watch(limit)
	t.Cleanup(func() { c.kill("test over"); <-c.done })
	return c
}

// watch samples the child's memory until it exits, killing it past
// killAboveKB or limit.
func (c *child) watch(limit time.Duration) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	deadline := time.After(limit)
	pid := c.cmd.Process.Pid
	for {
		select {
		case <-c.done:
			return
		case <-deadline:
			c.kill(fmt.Sprintf("still running after %s", limit))
			return
		case <-tick.C:
			rss, hwm := procStatus(pid)
			if rss > c.peakRSS.Load() {
				c.peakRSS.Store(rss)
			}
			if hwm > 0 {
				c.hwm.Store(hwm)
			}
			if rss > killAboveKB {
				c.kill(fmt.Sprintf("resident size %d MiB passed the harness's %d MiB bound after %s", rss>>10, killAboveKB>>10, time.Since(c.start).Round(time.Millisecond)))
				return
			}
		}
	}
}

func (c *child) kill(why string) {
	select {
	case <-c.done:
		return
	default:
	}
	c.killed.CompareAndSwap(nil, why)
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
}

// killedFor is why the harness killed the child, or "".
func (c *child) killedFor() string {
	s, _ := c.killed.Load().(string)
	return s
}

// peakMiB is the child's peak resident size: the larger of the sampled VmRSS
// and the kernel's VmHWM.
func (c *child) peakMiB() float64 {
	kb := max(c.peakRSS.Load(), c.hwm.Load())
	select {
	case <-c.done: // the kernel's figure for the whole run (ru_maxrss, kB)
		if c.cmd.ProcessState != nil {
			if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				kb = max(kb, ru.Maxrss)
			}
		}
	default:
	}
	return float64(kb) / 1024
}

// rssKB is the child's resident size now.
func (c *child) rssKB() int64 {
	rss, _ := procStatus(c.cmd.Process.Pid)
	return rss
}

// procStatus reads VmRSS and VmHWM (kB) of pid; 0 when it is gone.
func procStatus(pid int) (rss, hwm int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rss, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			hwm, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
	}
	return rss, hwm
}

// exited waits up to d for the child to exit; false if it did not.
func (c *child) exited(d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(d):
		return false
	}
}

// exitCode is the child's exit status after it exited (-1 when killed).
func (c *child) exitCode() int {
	<-c.done
	if c.cmd.ProcessState == nil {
		return -1
	}
	return c.cmd.ProcessState.ExitCode()
}

// describe says how the child ended, for failure messages.
func (c *child) describe() string {
	select {
	case <-c.done:
	default:
		return fmt.Sprintf("still running after %s, peak %.0f MiB", time.Since(c.start).Round(time.Millisecond), c.peakMiB())
	}
	if k := c.killedFor(); k != "" {
		return fmt.Sprintf("killed by the harness: %s (peak %.0f MiB)", k, c.peakMiB())
	}
	return fmt.Sprintf("exited %v after %s, peak %.0f MiB", c.waitErr, time.Since(c.start).Round(time.Millisecond), c.peakMiB())
}

func (c *child) logTail() string {
	s := c.stderr.String()
	if len(s) > 3000 {
		s = "…" + s[len(s)-3000:]
	}
	return s
}

// send writes one JSON-RPC frame; false when the child is gone.
func (c *child) send(v any) bool {
	b, _ := json.Marshal(v)
	_, err := c.stdin.Write(append(b, '\n'))
	return err == nil
}

// await returns the frame with id, or nil (with why) when it does not come within d.
func (c *child) await(id any, d time.Duration) (map[string]any, string) {
	want, _ := json.Marshal(id)
	if m, ok := c.pending[string(want)]; ok {
		delete(c.pending, string(want))
		return m, ""
	}
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.exited(5 * time.Second)
				return nil, "the child's stdout closed: " + c.describe()
			}
			got, _ := json.Marshal(m["id"])
			if m["id"] != nil && bytes.Equal(got, want) {
				return m, ""
			}
			if m["id"] != nil {
				if c.pending == nil {
					c.pending = map[string]map[string]any{}
				}
				c.pending[string(got)] = m
			}
		case <-timeout:
			return nil, fmt.Sprintf("no answer within %s: %s", d, c.describe())
		}
	}
}

// call sends a request and awaits its answer.
func (c *child) call(method string, params any, d time.Duration) (map[string]any, string) {
	c.nextID++
	id := c.nextID
	if !c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}) {
		return nil, "writing to the child failed: " + c.describe()
	}
	return c.await(id, d)
}

// startMCP spawns `mcp` and initializes it as clientName; the answer must come
// within initWithin.
func startMCP(t *testing.T, h *home, limit, initWithin time.Duration, clientName string) (*child, string) {
	t.Helper()
	c := spawn(t, h, limit, true, "mcp", "--verbose")
	r, why := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": clientName, "version": "0"}}, initWithin)
	if r == nil {
		return c, "initialize: " + why
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c, ""
}

// toolCall calls tool with args and returns the frame, how long it took and
// why it failed to come.
func (c *child) toolCall(tool string, args any, d time.Duration) (map[string]any, time.Duration, string) {
	start := time.Now()
	r, why := c.call("tools/call", map[string]any{"name": tool, "arguments": args}, d)
	return r, time.Since(start), why
}

// failedText is the error text of a tools/call answer (a JSON-RPC error or an
// isError result), "" when it succeeded.
func failedText(r map[string]any) string {
	if e, ok := r["error"].(map[string]any); ok {
		b, _ := json.Marshal(e)
		return string(b)
	}
	if res, ok := r["result"].(map[string]any); ok && res["isError"] == true {
		b, _ := json.Marshal(res["content"])
		return string(b)
	}
	return ""
}

// runCLI runs the binary with args to completion (or limit) under the
// harness's bounds.
func runCLI(t *testing.T, h *home, limit time.Duration, args ...string) *child {
	t.Helper()
	c := spawn(t, h, limit, false, args...)
	c.stdin.Close()
	<-c.done
	return c
}

// mib formats kB as MiB.
func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

// resetPeak starts a new peak measurement: the sampled peak and the kernel's
// VmHWM (clear_refs 5) both restart from the resident size now.
func (c *child) resetPeak() int64 {
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.cmd.Process.Pid), []byte("5"), 0)
	rss := c.rssKB()
	c.peakRSS.Store(rss)
	c.hwm.Store(0)
	return rss
}
