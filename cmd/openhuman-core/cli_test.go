package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/audit"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the binary builtBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// builtBinary builds openhuman-core once per test run (go build, as a user does).
func builtBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "openhuman-cli-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "openhuman-core")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// cliEnv is a fresh user: HOME, OPENHUMAN_HOME and the cache in temp folders.
type cliEnv struct {
	t     *testing.T
	bin   string
	home  string // $HOME
	ohome string // $OPENHUMAN_HOME
	cache string // $XDG_CACHE_HOME
	extra []string
}

func newCLIEnv(t *testing.T) *cliEnv {
	home := t.TempDir()
	e := &cliEnv{t: t, bin: builtBinary(t), home: home, ohome: filepath.Join(home, ".openhuman"), cache: filepath.Join(home, ".cache")}
	return e
}

func (e *cliEnv) environ() []string {
	env := []string{"HOME=" + e.home, "OPENHUMAN_HOME=" + e.ohome, "XDG_CACHE_HOME=" + e.cache,
		"PATH=" + filepath.Dir(e.bin) + string(os.PathListSeparator) + os.Getenv("PATH")}
	return append(env, e.extra...)
}

// run runs the binary and returns stdout, stderr and the exit status.
func (e *cliEnv) run(stdin string, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Env = e.environ()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// writeCorpus writes a small known corpus: two Markdown notes and an mbox with one
// two-message thread.
func writeCorpus(t *testing.T, dir string) (notes, mbox string) {
	t.Helper()
	notes = filepath.Join(dir, "notes")
	os.MkdirAll(notes, 0o755)
	os.WriteFile(filepath.Join(notes, "lisbon.md"), []byte("---\ntitle: Lisbon trip\ndate: 2026-01-20\n---\nFlights booked for April. Hotel near Alfama, three nights with Alice Martin.\n"), 0o644)
	os.WriteFile(filepath.Join(notes, "garden.md"), []byte("# Garden\n\nPlant tomatoes in May. Ask Bob Stone about the fence.\n"), 0o644)
	mbox = filepath.Join(dir, "mail.mbox")
	os.WriteFile(mbox, []byte(`From alice@kestrel.example Tue Feb  3 09:00:00 2026
From: Alice Martin <alice@kestrel.example>
To: Bob Stone <bob@garage.example>
Subject: Brake repair quote
Date: Tue, 3 Feb 2026 09:00:00 +0000
Message-ID: <brakes-1@kestrel.example>

Hi Bob, the car makes a grinding noise when braking. Could you send a quote?

From bob@garage.example Wed Feb  4 10:30:00 2026
From: Bob Stone <bob@garage.example>
To: Alice Martin <alice@kestrel.example>
Subject: Re: Brake repair quote
Date: Wed, 4 Feb 2026 10:30:00 +0000
Message-ID: <brakes-2@garage.example>
In-Reply-To: <brakes-1@kestrel.example>
References: <brakes-1@kestrel.example>

Pads and rotors come to 420 EUR including labour.
`), 0o644)
	return notes, mbox
}

type statusJSON struct {
	Schema  string `json:"schema"`
	Version string `json:"version"`
	Store   struct {
		Path                string         `json:"path"`
		Exists              bool           `json:"exists"`
		Bytes               int64          `json:"bytes"`
		SchemaVersion       int            `json:"schema_version"`
		BinarySchemaVersion int            `json:"binary_schema_version"`
		Sources             map[string]int `json:"sources"`
		Chunks              map[string]int `json:"chunks"`
		TotalChunks         int            `json:"total_chunks"`
		Summaries           int            `json:"summaries"`
		Entities            int            `json:"entities"`
		Vectors             map[string]int `json:"vectors"`
		LastIngest          *struct {
			Time    time.Time `json:"time"`
			Roots   []string  `json:"roots"`
			Summary string    `json:"summary"`
		} `json:"last_ingest"`
	} `json:"store"`
	Embedder struct {
		Embedder string `json:"embedder"`
	} `json:"embedder"`
	SearXNG struct {
		Enabled bool `json:"enabled"`
	} `json:"searxng"`
	Tools struct {
		Dir     string `json:"dir"`
		Modules []struct {
			Module string   `json:"module"`
			Tools  []string `json:"tools"`
			SHA256 string   `json:"sha256"`
			State  string   `json:"state"`
		} `json:"modules"`
	} `json:"tools"`
	CacheDir string `json:"cache_dir"`
	AuditLog string `json:"audit_log"`
}

func (e *cliEnv) status() statusJSON {
	e.t.Helper()
	out, errOut, code := e.run("", "status", "--json")
	if code != 0 {
		e.t.Fatalf("status --json: exit %d\n%s", code, errOut)
	}
	var s statusJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		e.t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	return s
}

// TestStatusForgetReingest runs ingest, status --json, forget and ingest again
// through the built binary on a known corpus.
func TestStatusForgetReingest(t *testing.T) {
	e := newCLIEnv(t)
	before := e.status()
	if before.Store.Exists || before.Store.TotalChunks != 0 || before.Store.LastIngest != nil {
		t.Errorf("status before any ingest: %+v", before.Store)
	}
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	s := e.status()
	store := filepath.Join(e.ohome, "workspace", "memory_tree", "chunks.db")
	fi, err := os.Stat(store)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != StatusSchema || s.Version == "" || s.Store.Path != store || !s.Store.Exists || s.Store.Bytes < fi.Size() || s.Store.SchemaVersion != s.Store.BinarySchemaVersion || s.Store.SchemaVersion < 4 {
		t.Errorf("store fields: %+v", s.Store)
	}
	if fmt.Sprint(s.Store.Sources) != "map[document:2 email:1]" || s.Store.TotalChunks < 3 || s.Store.Summaries < 3 || s.Store.Entities == 0 {
		t.Errorf("counts: sources %v chunks %d summaries %d entities %d", s.Store.Sources, s.Store.TotalChunks, s.Store.Summaries, s.Store.Entities)
	}
	li := s.Store.LastIngest
	if li == nil || strings.Join(li.Roots, "|") != notes+"|"+mbox || !strings.HasPrefix(li.Summary, "ingest: 3 files, 3 sources") || time.Since(li.Time) > time.Hour {
		t.Errorf("last ingest: %+v", li)
	}
	mem, err := toolswasm.Get("memory.search")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range s.Tools.Modules {
		if m.SHA256 == mem.SHA256 && m.State == "ready" && len(m.Tools) == 6 {
			found = true
		}
	}
	if !found || s.Embedder.Embedder != "none" || s.SearXNG.Enabled || s.Tools.Dir != filepath.Join(e.ohome, "tools") {
		t.Errorf("modules %+v embedder %+v searxng %+v", s.Tools.Modules, s.Embedder, s.SearXNG)
	}
	if s.CacheDir != filepath.Join(e.cache, "openhuman", "wazero") || s.AuditLog != filepath.Join(e.ohome, "workspace", "audit", "audit.jsonl") {
		t.Errorf("cache %s audit %s", s.CacheDir, s.AuditLog)
	}
	// The text form names the same things.
	text, _, _ := e.run("", "status")
	for _, want := range []string{store, "document 2", "email 1", "last ingest", "memory.wasm ready", "audit log"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}

	// forget one document by path: a dry run first changes nothing.
	garden := filepath.Join(notes, "garden.md")
	out, errOut, code := e.run("", "forget", "--dry-run", "--root", garden)
	if code != 0 || !strings.Contains(out, "would forget document\tdoc:"+garden) {
		t.Fatalf("forget --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	if after := e.status(); after.Store.TotalChunks != s.Store.TotalChunks {
		t.Fatalf("dry run changed the store")
	}
	out, errOut, code = e.run("", "forget", "--root", garden)
	if code != 0 || !strings.Contains(out, "forgot 1 sources") {
		t.Fatalf("forget: exit %d\n%s%s", code, out, errOut)
	}
	gone := e.status()
	if fmt.Sprint(gone.Store.Sources) != "map[document:1 email:1]" || gone.Store.TotalChunks >= s.Store.TotalChunks {
		t.Errorf("after forget: %v, %d chunks", gone.Store.Sources, gone.Store.TotalChunks)
	}
	// The audit log says what forget did.
	data, err := os.ReadFile(s.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	var entry audit.Entry
	if err := json.Unmarshal(bytes.TrimSpace(data), &entry); err != nil || entry.Tool != "forget" || entry.Session != "cli" ||
		fmt.Sprint(entry.Details["sources"]) != "[doc:"+garden+"]" {
		t.Errorf("audit line: %s (%v)", data, err)
	}
	// An unknown id is named and exits 1; no selector at all is a usage error.
	if _, errOut, code := e.run("", "forget", "email:nope"); code != 1 || !strings.Contains(errOut, "email:nope") {
		t.Errorf("forget unknown id: exit %d %s", code, errOut)
	}
	if _, _, code := e.run("", "forget"); code != 2 {
		t.Errorf("forget with no selector: exit %d, want 2", code)
	}
	// Ingesting the same files again brings the document back.
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("re-ingest: exit %d\n%s", code, errOut)
	}
	again := e.status()
	if fmt.Sprint(again.Store.Sources) != fmt.Sprint(s.Store.Sources) || again.Store.TotalChunks != s.Store.TotalChunks ||
		again.Store.Entities != s.Store.Entities || again.Store.Summaries != s.Store.Summaries {
		t.Errorf("re-ingest: %+v, want %+v", again.Store, s.Store)
	}
}

// TestDoctor: a healthy set-up passes; a cache others may write and a policy that
// does not parse each fail with a fix, and the exit status is 1.
func TestDoctor(t *testing.T) {
	e := newCLIEnv(t)
	// A Cursor config that starts this binary, a Claude Desktop config without it.
	os.MkdirAll(filepath.Join(e.home, ".cursor"), 0o755)
	os.WriteFile(filepath.Join(e.home, ".cursor", "mcp.json"), []byte(`{"mcpServers":{"openhuman":{"command":"`+e.bin+`","args":["mcp"]}}}`), 0o644)
	os.MkdirAll(filepath.Join(e.home, ".config", "Claude"), 0o755)
	os.WriteFile(filepath.Join(e.home, ".config", "Claude", "claude_desktop_config.json"), []byte(`{"mcpServers":{}}`), 0o644)
	// Zed allows comments and trailing commas.
	os.MkdirAll(filepath.Join(e.home, ".config", "zed"), 0o755)
	os.WriteFile(filepath.Join(e.home, ".config", "zed", "settings.json"), []byte("// zed\n{\"context_servers\": {\"openhuman\": {\"command\": \""+e.bin+"\", \"args\": [\"mcp\"],},},}\n"), 0o644)

	out, errOut, code := e.run("", "doctor")
	if code != 0 {
		t.Fatalf("doctor on a fresh set-up: exit %d\n%s%s", code, out, errOut)
	}
	for _, re := range []string{`(?m)^ok +config`, `(?m)^ok +policy`, `(?m)^ok +cache`, `(?m)^warn +store .*does not exist yet`, `(?m)^ok +tools`,
		`(?m)^-- +searxng +disabled`, `(?m)^ok +PATH`, `(?m)^ok +cursor .*runs .*openhuman-core mcp`, `(?m)^warn +claude-desktop .*has no openhuman-core server`, `(?m)^ok +zed`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("doctor output lacks %s:\n%s", re, out)
		}
	}

	// Break the cache (writable by others) and the policy.
	// (mcp serving only the first-party modules, which run on the interpreter,
	// never creates it: the runtime opens the cache for a module it compiles.)
	cache := filepath.Join(e.cache, "openhuman", "wazero")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(e.ohome, 0o700)
	if err := os.WriteFile(filepath.Join(e.ohome, "policy.toml"), []byte("[[module]\nfile = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = e.run("", "doctor")
	if code != 1 {
		t.Errorf("doctor with a broken cache and policy: exit %d, want 1\n%s", code, out)
	}
	for _, re := range []string{`(?m)^FAIL +cache .*may be written by other users`, `(?m)^ +fix: chmod 700 `, `(?m)^FAIL +policy .*policy.toml`,
		// The clients' entries cannot start either: mcp refuses a broken policy.
		`(?m)^FAIL +cursor .*load the tool policy`, `4 check\(s\) failed`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("doctor output lacks %s:\n%s", re, out)
		}
	}
	// SearXNG and the embedder are checked only when enabled: a SearXNG that does not
	// answer fails, an Ollama-style embedder that answers passes.
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/embed" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"toy","embeddings":[[0.1,0.2,0.3]]}`)
	}))
	defer ollama.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there any more
	e.extra = []string{"OPENHUMAN_SEARXNG_ENABLED=true", "OPENHUMAN_SEARXNG_BASE_URL=" + deadURL,
		"OPENHUMAN_MEMORY_EMBEDDER=ollama", "OPENHUMAN_MEMORY_EMBED_ENDPOINT=" + ollama.URL, "OPENHUMAN_MEMORY_EMBED_MODEL=toy"}
	out, _, code = e.run("", "doctor")
	for _, re := range []string{`(?m)^FAIL +searxng .*does not answer`, `(?m)^ +fix: start SearXNG`, `(?m)^ok +embedder +ollama toy at http://127\.0\.0\.1:\d+ answers`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("doctor output lacks %s:\n%s", re, out)
		}
	}
	if code != 1 {
		t.Errorf("doctor with SearXNG down: exit %d, want 1", code)
	}
	e.extra = nil

	// --json carries the same verdicts.
	out, _, _ = e.run("", "doctor", "--json")
	var rep struct {
		Checks []doctorCheck `json:"checks"`
		Failed int           `json:"failed"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Failed != 4 {
		t.Errorf("doctor --json: %v %s", err, out)
	}
}

// TestVersionEverywhere: `version`, the MCP serverInfo and /health carry one string.
func TestVersionEverywhere(t *testing.T) {
	e := newCLIEnv(t)
	out, _, code := e.run("", "version")
	v := strings.TrimPrefix(strings.TrimSpace(out), "openhuman-core ")
	if code != 0 || v == "" || !regexp.MustCompile(`^\d+\.\d+\.\d+(-dev(\+[0-9a-f]{12})?)?$`).MatchString(v) {
		t.Fatalf("version: %q exit %d", out, code)
	}
	if rev, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil && len(rev) >= 12 {
		if want := "0.1.0-dev+" + string(rev[:12]); v != want {
			t.Errorf("version of a build of this checkout = %q, want %q", v, want)
		}
	}
	mcpOut, _, _ := e.run(mcpSmoke, "mcp")
	var init struct {
		Result struct {
			ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(mcpOut, "\n", 2)[0]), &init); err != nil || init.Result.ServerInfo.Version != v {
		t.Errorf("serverInfo = %+v (%v), want version %q", init.Result.ServerInfo, err, v)
	}

	cmd := exec.Command(e.bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(e.environ(), "OPENHUMAN_CORE_TOKEN=test-token-0123456789abcdef")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	go io.Copy(io.Discard, stderr)
	if addr == "" {
		t.Fatal("serve did not say where it listens")
	}
	resp, err := http.Get(addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Version string }
	json.NewDecoder(resp.Body).Decode(&h)
	if h.Version != v {
		t.Errorf("/health version %q, want %q", h.Version, v)
	}
}

// TestHelpAndUsageExitCodes: help on stdout with exit 0, every usage mistake exit 2.
func TestHelpAndUsageExitCodes(t *testing.T) {
	e := newCLIEnv(t)
	for _, args := range [][]string{{"--help"}, {"mcp", "--help"}, {"serve", "--help"}, {"tools", "sign", "--help"}, {"status", "--help"}, {"forget", "--help"}, {"doctor", "--help"}} {
		out, errOut, code := e.run("", args...)
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, code, len(out), errOut)
		}
	}
	if out, _, _ := e.run("", "tools", "sign", "--help"); !strings.Contains(out, "-o timeline.packed.wasm") || !strings.Contains(out, "--key") {
		t.Errorf("tools sign --help example lacks -o:\n%s", out)
	}
	if out, _, _ := e.run("", "serve", "--help"); !strings.Contains(out, "/mcp") || !strings.Contains(out, "--header \"Authorization: Bearer <token>\"") || !strings.Contains(out, "no OAuth") {
		t.Errorf("serve --help does not document /mcp and its token header:\n%s", out)
	}
	if out, _, _ := e.run("", "tools", "audit", "--help"); !strings.Contains(out, "--builtin string") {
		t.Errorf("tools audit --builtin is not a NAME flag:\n%s", out)
	}
	for _, args := range [][]string{{"--bogus"}, {"mcp", "--bogus"}, {"mcp", "extra"}, {"nosuch"}, {"tools", "nosuch"}, {"tools", "audit"}, {"tools", "pack", "x.wasm"},
		{"forget", "--before", "someday"}, {"status", "extra"}, {"ingest"}} {
		_, errOut, code := e.run("", args...)
		if code != 2 || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, want 2; stderr %q", args, code, errOut)
		}
	}
	if _, errOut, code := e.run("", "tools", "audit", "--builtin", "all"); code != 0 {
		t.Errorf("tools audit --builtin all: exit %d %s", code, errOut)
	}
	// A config value of the wrong type names the key and the type.
	os.MkdirAll(e.ohome, 0o700)
	os.WriteFile(filepath.Join(e.ohome, "config.toml"), []byte("[searxng]\nenabled = \"yes\"\n"), 0o644)
	_, errOut, code := e.run("", "status")
	if code != 2 || !strings.Contains(errOut, "searxng.enabled: expected true or false, got a string") || strings.Contains(errOut, "struct field") {
		t.Errorf("bad config: exit %d %s", code, errOut)
	}
}
