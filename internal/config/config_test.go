package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func envMap(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaultsWithoutFile(t *testing.T) {
	home := t.TempDir()
	cfg, ws, err := Load("", envMap(map[string]string{"OPENHUMAN_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 0 {
		t.Fatalf("warnings: %v", ws)
	}
	if cfg.File != "" {
		t.Fatalf("File = %q, want none", cfg.File)
	}
	if got, want := cfg.StorePath(), filepath.Join(home, "workspace", "memory_tree", "chunks.db"); got != want {
		t.Fatalf("StorePath = %q, want %q", got, want)
	}
	if cfg.SearXNG.Enabled || cfg.SearXNG.BaseURL != "http://localhost:8080" || cfg.SearXNG.MaxResults != 10 ||
		cfg.SearXNG.DefaultLanguage != "en" || cfg.SearXNG.TimeoutSeconds != 10 {
		t.Fatalf("searxng defaults: %+v", cfg.SearXNG)
	}
	if cfg.Autonomy.Level != AutonomySupervised || cfg.MemoryTree.Embedder != EmbedderNone {
		t.Fatalf("defaults: %+v %+v", cfg.Autonomy, cfg.MemoryTree)
	}
	if cfg.Tools.Dir != filepath.Join(home, "tools") || cfg.Tools.Policy != filepath.Join(home, "policy.toml") {
		t.Fatalf("tools: %+v", cfg.Tools)
	}
}

func TestWorkspaceEnv(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	cfg, _, err := Load("", envMap(map[string]string{"OPENHUMAN_HOME": home, "OPENHUMAN_WORKSPACE": ws}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AuditDir() != filepath.Join(ws, "audit") {
		t.Fatalf("AuditDir = %q", cfg.AuditDir())
	}
}

func writeFile(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFileThenEnvPrecedence(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home, `
[searxng]
enabled = false
base_url = "http://127.0.0.1:9999"
max_results = 20
timeout_seconds = 5

[tools]
dir = "mytools"
`)
	cfg, ws, err := Load("", envMap(map[string]string{
		"OPENHUMAN_HOME":                     home,
		"OPENHUMAN_SEARXNG_ENABLED":          "YES",
		"OPENHUMAN_SEARXNG_MAX_RESULTS":      "25",
		"OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE": "zh-CN",
		"OPENHUMAN_SEARXNG_TIMEOUT_SECONDS":  "12",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 0 {
		t.Fatalf("warnings: %v", ws)
	}
	s := cfg.SearXNG
	if !s.Enabled || s.BaseURL != "http://127.0.0.1:9999" || s.MaxResults != 25 || s.DefaultLanguage != "zh-CN" || s.TimeoutSeconds != 12 {
		t.Fatalf("searxng = %+v", s)
	}
	if cfg.Tools.Dir != filepath.Join(home, "mytools") {
		t.Fatalf("relative tools dir not resolved against the config folder: %q", cfg.Tools.Dir)
	}
}

func TestInvalidEnvIsReportedAndIgnored(t *testing.T) {
	home := t.TempDir()
	cfg, ws, err := Load("", envMap(map[string]string{
		"OPENHUMAN_HOME":                    home,
		"OPENHUMAN_SEARXNG_ENABLED":         "maybe",
		"OPENHUMAN_SEARXNG_MAX_RESULTS":     "51",
		"OPENHUMAN_SEARXNG_BASE_URL":        "ftp://x",
		"OPENHUMAN_SEARXNG_TIMEOUT_SECONDS": "0",
		"OPENHUMAN_MEMORY_EMBEDDER":         "ollama", // no endpoint/model: ignored as a whole
	}))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, w := range ws {
		keys[w.Key] = true
		if !strings.Contains(w.String(), w.Key) {
			t.Errorf("warning text %q does not name its key", w.String())
		}
	}
	for _, k := range []string{"OPENHUMAN_SEARXNG_ENABLED", "OPENHUMAN_SEARXNG_MAX_RESULTS", "OPENHUMAN_SEARXNG_BASE_URL", "OPENHUMAN_SEARXNG_TIMEOUT_SECONDS", "OPENHUMAN_MEMORY_EMBEDDER"} {
		if !keys[k] {
			t.Errorf("no warning for %s (got %v)", k, ws)
		}
	}
	if cfg.SearXNG != Defaults(home).SearXNG {
		t.Fatalf("invalid env values were applied: %+v", cfg.SearXNG)
	}
	if cfg.MemoryTree.Embedder != EmbedderNone {
		t.Fatalf("half-valid embedder env applied: %+v", cfg.MemoryTree)
	}
}

func TestEmbedderEnvAppliedWhole(t *testing.T) {
	cfg, ws, err := Load("", envMap(map[string]string{
		"OPENHUMAN_HOME":                  t.TempDir(),
		"OPENHUMAN_MEMORY_EMBEDDER":       "ollama",
		"OPENHUMAN_MEMORY_EMBED_ENDPOINT": "http://127.0.0.1:11434",
		"OPENHUMAN_MEMORY_EMBED_MODEL":    "nomic-embed-text",
	}))
	if err != nil || len(ws) != 0 {
		t.Fatalf("err=%v warnings=%v", err, ws)
	}
	if cfg.MemoryTree.Embedder != EmbedderOllama || cfg.MemoryTree.Model != "nomic-embed-text" {
		t.Fatalf("memory_tree = %+v", cfg.MemoryTree)
	}
}

func TestFileErrorsNameFileLineAndKey(t *testing.T) {
	home := t.TempDir()
	cases := []struct{ body, want string }{
		{"[searxng]\nmax_results = \"ten\"\n", "config.toml:2:15: searxng.max_results: expected a whole number, got a string"},
		{"[searxng]\nenabled = \"yes\"\n", "config.toml:2:11: searxng.enabled: expected true or false, got a string"},
		{"[server]\nallowed_hosts = \"x\"\n", "server.allowed_hosts: expected an array of quoted strings"},
		{"[memory_tree]\nmodel = 3\n", "memory_tree.model: expected a quoted string, got a number"},
		{"[searxng]\nmaxresults = 10\n", `unknown key "searxng.maxresults"`},
		{"[searxng]\nmax_results = 99\n", "searxng.max_results: must be 1..50, got 99"},
		{"[autonomy]\nlevel = \"godmode\"\n", "autonomy.level"},
		{"[searxng\n", "config.toml:1"},
	}
	for _, c := range cases {
		p := writeFile(t, home, c.body)
		_, _, err := Load("", envMap(map[string]string{"OPENHUMAN_HOME": home}))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "struct field") {
			t.Errorf("body %q: err = %v, want it to name %s and contain %q", c.body, err, p, c.want)
		}
	}
}

func TestExplicitMissingFileIsAnError(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "nope.toml"), envMap(map[string]string{"OPENHUMAN_HOME": t.TempDir()}))
	if err == nil || !strings.Contains(err.Error(), "nope.toml") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{"1": true, "TRUE": true, " yes ": true, "On": true, "0": false, "false": false, "No": false, "off": false} {
		got, err := ParseBool(in)
		if err != nil || got != want {
			t.Errorf("ParseBool(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseBool("y"); err == nil {
		t.Error("ParseBool(y) accepted")
	}
}

func TestPivotDictionaries(t *testing.T) {
	home := t.TempDir()
	cfg, _, err := Load("", envMap(map[string]string{"OPENHUMAN_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.MemoryTree.PivotDictionaries, DefaultPivotDictionaries) {
		t.Fatalf("default pivot_dictionaries = %q, want %q", cfg.MemoryTree.PivotDictionaries, DefaultPivotDictionaries)
	}

	f := writeFile(t, t.TempDir(), "[memory_tree]\npivot_dictionaries = []\n")
	if cfg, _, err = Load(f, envMap(map[string]string{"OPENHUMAN_HOME": home})); err != nil {
		t.Fatal(err)
	}
	if len(cfg.MemoryTree.PivotDictionaries) != 0 {
		t.Fatalf("pivot_dictionaries = [] in the file left %q", cfg.MemoryTree.PivotDictionaries)
	}

	f = writeFile(t, t.TempDir(), "[memory_tree]\npivot_dictionaries = [\"/opt/dict/freedict-eng-fra\"]\n")
	env := map[string]string{"OPENHUMAN_HOME": home}
	if cfg, _, err = Load(f, envMap(env)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.MemoryTree.PivotDictionaries, []string{"/opt/dict/freedict-eng-fra"}) {
		t.Fatalf("file pivot_dictionaries = %q", cfg.MemoryTree.PivotDictionaries)
	}
	env["OPENHUMAN_MEMORY_PIVOT_DICTIONARIES"] = " /a/freedict-eng-deu , /a/freedict-deu-eng ,"
	if cfg, _, err = Load(f, envMap(env)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.MemoryTree.PivotDictionaries, []string{"/a/freedict-eng-deu", "/a/freedict-deu-eng"}) {
		t.Fatalf("env pivot dictionaries = %q", cfg.MemoryTree.PivotDictionaries)
	}
	env["OPENHUMAN_MEMORY_PIVOT_DICTIONARIES"] = ""
	if cfg, _, err = Load(f, envMap(env)); err != nil {
		t.Fatal(err)
	}
	if len(cfg.MemoryTree.PivotDictionaries) != 0 {
		t.Fatalf("empty env left %q", cfg.MemoryTree.PivotDictionaries)
	}
}
