package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/searxng"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Doctor check results.
const (
	checkOK   = "ok"
	checkFail = "FAIL"
	checkWarn = "warn" // worth knowing, not a failure
	checkSkip = "--"   // not applicable here
)

// doctorCheck is one line of `doctor`.
type doctorCheck struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// newDoctorCmd is `openhuman-core doctor`.
func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the set-up and say how to fix what is wrong",
		Long: `doctor checks, one line each with the fix when it fails: the config file and
policy.toml parse; the compilation cache is owned by you, not writable by others, and
writable; the memory tree opens read-only; the tools directory's modules load; SearXNG
and the dense embedder answer (when enabled); openhuman-core is on PATH; and the MCP
client configuration files of Claude Desktop, Cursor, Zed, Windsurf, Codex, Claude Code and
VS Code (where they exist) start openhuman-core mcp as the client starts it: an absolute
command path that exists and answers initialize with a desktop app's environment (not the
shell's PATH) — or, for an entry that reaches serve's /mcp over HTTP (a URL with headers,
or npx mcp-remote URL --header ...), that the URL answers and accepts the entry's token.
Then it prints, for every client of the README's table, the snippet to paste with this
binary's absolute path, and the HTTP snippets (mcp-remote --header, claude mcp add
--transport http --header, VS Code and Cursor "headers"). It changes nothing. Exit status
1 when a check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			checks := runDoctor(cmd.Context(), log)
			failed := writeDoctor(cmd.OutOrStdout(), checks, asJSON)
			if failed > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}

func writeDoctor(out io.Writer, checks []doctorCheck, asJSON bool) int {
	failed := 0
	for _, c := range checks {
		if c.Result == checkFail {
			failed++
		}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"checks": checks, "failed": failed, "snippets": clientSnippets()})
		return failed
	}
	for _, c := range checks {
		fmt.Fprintf(out, "%-4s  %-14s %s\n", c.Result, c.Name, c.Detail)
		if c.Fix != "" && c.Result != checkOK {
			fmt.Fprintf(out, "      %-14s fix: %s\n", "", strings.ReplaceAll(c.Fix, "\n", "\n"+strings.Repeat(" ", 26)))
		}
	}
	if failed > 0 {
		fmt.Fprintf(out, "\n%d check(s) failed.\n", failed)
	} else {
		fmt.Fprintln(out, "\nall checks passed.")
	}
	writeSnippets(out) // doctor_clients.go
	return failed
}

// runDoctor runs every check; it never stops at a failure.
func runDoctor(ctx context.Context, log *slog.Logger) []doctorCheck {
	if ctx == nil {
		ctx = context.Background()
	}
	var out []doctorCheck
	add := func(name, result, detail, fix string) {
		out = append(out, doctorCheck{Name: name, Result: result, Detail: detail, Fix: fix})
	}

	cfg, warnings, err := config.Load(flags.configFile, nil)
	switch {
	case err != nil:
		add("config", checkFail, err.Error(), "correct the key named above in the file (README → Configuration lists every key)")
		home, herr := homeFallback()
		if herr != nil {
			add("home", checkFail, herr.Error(), "set HOME or OPENHUMAN_HOME")
			return out
		}
		cfg = config.Defaults(home) // go on with the defaults, so the other checks still run
	case len(warnings) > 0:
		var ws []string
		for _, w := range warnings {
			ws = append(ws, w.String())
		}
		add("config", checkWarn, strings.Join(ws, "; "), "correct or unset the environment variables named above")
	case cfg.File != "":
		add("config", checkOK, cfg.File+" parses", "")
	default:
		add("config", checkOK, "no config.toml; the defaults apply ("+filepath.Join(cfg.Home, "config.toml")+")", "")
	}

	_, polErr := policy.Load(cfg.Tools.Policy)
	if err := polErr; err != nil {
		add("policy", checkFail, err.Error(), "correct "+cfg.Tools.Policy+" (sdk/AUTHORING.md → policy.toml), or move it aside to serve the first-party tools only")
	} else if _, err := os.Stat(cfg.Tools.Policy); err != nil {
		add("policy", checkOK, "no policy.toml; first-party tools only ("+cfg.Tools.Policy+")", "")
	} else {
		add("policy", checkOK, cfg.Tools.Policy+" parses", "")
	}

	add(checkCache(compileCacheDir()))
	if cfg.Store.URL != "" {
		add(checkPostgresStore(ctx, cfg.Store.URL))
		for i, u := range cfg.Store.Replicas {
			add(checkPostgresReplica(ctx, i, u))
		}
	} else {
		add(checkStore(ctx, cfg.StorePath()))
	}
	add(checkPrincipals(cfg))
	if polErr != nil {
		add("tools", checkSkip, "not checked: the modules load only once policy.toml parses", "")
	} else {
		add(checkToolsDir(ctx, cfg, log))
	}

	if cfg.SearXNG.Enabled {
		add(checkSearXNG(ctx, cfg.SearXNG))
	} else {
		add("searxng", checkSkip, "disabled (optional web search; [searxng] enabled = true turns it on)", "")
	}
	if e := cfg.MemoryTree.Embedder; e != "" && e != config.EmbedderNone {
		add(checkEmbedder(ctx, cfg.MemoryTree))
	} else {
		add("embedder", checkSkip, "none (recall is offline; optional: [memory_tree] embedder)", "")
	}

	if p, err := exec.LookPath("openhuman-core"); err == nil {
		add("PATH", checkOK, "openhuman-core is "+p, "")
	} else {
		add("PATH", checkWarn, "openhuman-core is not on PATH, so clients started with \"command\": \"openhuman-core\" will not find it",
			"go install ./cmd/openhuman-core, then add $(go env GOPATH)/bin to PATH, or put the binary's absolute path in the client's \"command\"")
	}
	for _, c := range clientConfigs() {
		add(checkClient(ctx, c, cfg.TokenPath()))
	}
	return out
}

func homeFallback() (string, error) {
	if h := strings.TrimSpace(os.Getenv("OPENHUMAN_HOME")); h != "" {
		return filepath.Clean(h), nil
	}
	uh, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory: %w", err)
	}
	return filepath.Join(uh, ".openhuman"), nil
}

// checkCache applies the runtime's rules for the compilation cache: owned by this
// user, not writable by group or others, writable by us. A cache that fails them
// costs only speed (modules compile in memory at every start), but says something
// is off.
func checkCache(dir string) (string, string, string, string) {
	if dir == "" {
		return "cache", checkFail, "no user cache directory: tool modules compile in memory at every start", "set HOME (or XDG_CACHE_HOME)"
	}
	fix := "remove it (rm -rf " + dir + "); the next start re-creates it with mode 0700"
	for _, d := range []string{filepath.Dir(dir), dir} {
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			return "cache", checkOK, dir + " does not exist yet; the first start creates it", ""
		}
		if err != nil {
			return "cache", checkFail, err.Error(), fix
		}
		if !fi.IsDir() {
			return "cache", checkFail, d + " is not a directory", fix
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
			return "cache", checkFail, fmt.Sprintf("%s is owned by uid %d, not by you (uid %d): its entries would not be trusted, so modules compile in memory at every start", d, st.Uid, os.Getuid()), fix
		}
		if perm := fi.Mode().Perm(); perm&0o022 != 0 {
			return "cache", checkFail, fmt.Sprintf("%s may be written by other users (mode %04o): its entries would not be trusted, so modules compile in memory at every start", d, perm), "chmod 700 " + d + " after checking its contents, or " + fix
		}
	}
	probe, err := os.CreateTemp(dir, ".doctor-probe-*")
	if err != nil {
		return "cache", checkFail, dir + " is not writable, so modules compile in memory at every start: " + err.Error(), "chmod 700 " + dir + ", or " + fix
	}
	probe.Close()
	os.Remove(probe.Name())
	return "cache", checkOK, dir + " is yours, private and writable", ""
}

func checkStore(ctx context.Context, path string) (string, string, string, string) {
	st, err := memtree.Status(ctx, path)
	if err != nil {
		return "store", checkFail, err.Error(), "check the file's permissions; if it is damaged, move it aside and run openhuman-core ingest again"
	}
	if !st.Exists {
		return "store", checkWarn, path + " does not exist yet: every tool answers empty", "openhuman-core ingest PATH... (README → Ingest)"
	}
	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		return "store", checkFail, err.Error(), "check the file's and its folder's permissions (WAL needs the -shm file beside it)"
	}
	defer ro.Close()
	if _, err := ro.Stats(ctx); err != nil {
		return "store", checkFail, "opens read-only but cannot be read: " + err.Error(), "move it aside and run openhuman-core ingest again"
	}
	return "store", checkOK, fmt.Sprintf("%s opens read-only (%d chunks, schema %d)", path, st.TotalChunks, st.SchemaVersion), ""
}

// checkToolsDir loads the modules as mcp does and fails on any refused or failed one.
func checkToolsDir(ctx context.Context, cfg *config.Config, log *slog.Logger) (string, string, string, string) {
	host, closeHost, err := openHost(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return "tools", checkFail, err.Error(), "see the message; openhuman-core tools list shows every module"
	}
	defer closeHost()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := host.WaitReady(wctx); err != nil {
		log.Debug("doctor: modules", "err", err)
	}
	var bad []string
	third := 0
	for _, st := range host.Status() {
		if st.Module.Origin != runtime.OriginBuiltin {
			third++
		}
		if st.State == runtime.StateRefused || st.State == runtime.StateFailed {
			bad = append(bad, fmt.Sprintf("%s %s: %s", orName(st.Module.File, st.Module.Name), st.State, st.Error))
		}
	}
	if len(bad) > 0 {
		return "tools", checkFail, strings.Join(bad, "; "), "openhuman-core tools audit FILE.wasm --policy " + cfg.Tools.Policy + " says what the module needs; pin its sha256 and grants in policy.toml, or remove it from " + cfg.Tools.Dir
	}
	if _, err := os.Stat(cfg.Tools.Dir); errors.Is(err, fs.ErrNotExist) {
		return "tools", checkOK, "first-party modules load; no tools directory (" + cfg.Tools.Dir + "; mkdir -p it to add third-party modules)", ""
	}
	return "tools", checkOK, fmt.Sprintf("first-party modules and %d module(s) from %s load", third, cfg.Tools.Dir), ""
}

func orName(file, name string) string {
	if file != "" {
		return file
	}
	return name
}

func checkSearXNG(ctx context.Context, sc config.SearXNG) (string, string, string, string) {
	c, err := searxng.New(sc)
	if err != nil {
		return "searxng", checkFail, err.Error(), "correct [searxng] base_url in config.toml (or OPENHUMAN_SEARXNG_BASE_URL)"
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Search(cctx, abi.SearxngRequest{Query: "openhuman doctor", MaxResults: 1}); err != nil {
		return "searxng", checkFail, c.Endpoint() + " does not answer a search: " + err.Error(),
			"start SearXNG, check that its settings.yml has json in search.formats, or set [searxng] enabled = false"
	}
	return "searxng", checkOK, c.Endpoint() + " answers", ""
}

func checkEmbedder(ctx context.Context, mt config.MemoryTree) (string, string, string, string) {
	emb, err := embed.New(mt, os.Getenv)
	if err != nil {
		return "embedder", checkFail, err.Error(), "correct [memory_tree] in config.toml, or set embedder = \"none\""
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := emb.Embed(cctx, []string{"openhuman doctor"}); err != nil {
		return "embedder", checkFail, fmt.Sprintf("%s %s at %s does not embed: %v", mt.Embedder, mt.Model, embed.Redact(mt.Endpoint), err),
			"start it (ollama serve; ollama pull " + mt.Model + "), or set [memory_tree] embedder = \"none\"; recall falls back to offline meanwhile"
	}
	return "embedder", checkOK, fmt.Sprintf("%s %s at %s answers", mt.Embedder, mt.Model, embed.Redact(mt.Endpoint)), ""
}

// clientConfig is an MCP client's configuration file and where servers are listed in it.
type clientConfig struct {
	Client string
	Path   string
	Key    string // "mcpServers", "context_servers" or (TOML) "mcp_servers"
}

// clientConfigs are the configuration files of the clients README documents, for
// this operating system.
func clientConfigs() []clientConfig {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	claude := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	zed := filepath.Join(home, ".config", "zed", "settings.json")
	vscode := filepath.Join(home, ".config", "Code", "User", "mcp.json")
	switch goruntime.GOOS {
	case "darwin":
		claude = filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
		vscode = filepath.Join(home, "Library", "Application Support", "Code", "User", "mcp.json")
	case "windows":
		claude = filepath.Join(os.Getenv("APPDATA"), "Claude", "claude_desktop_config.json")
		zed = filepath.Join(os.Getenv("APPDATA"), "Zed", "settings.json")
		vscode = filepath.Join(os.Getenv("APPDATA"), "Code", "User", "mcp.json")
	}
	return []clientConfig{
		{"Claude Desktop", claude, "mcpServers"},
		{"Cursor", filepath.Join(home, ".cursor", "mcp.json"), "mcpServers"},
		{"Zed", zed, "context_servers"},
		{"Windsurf", filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), "mcpServers"},
		{"Codex", filepath.Join(home, ".codex", "config.toml"), "mcp_servers"},
		{"Claude Code", filepath.Join(home, ".claude.json"), "mcpServers"},
		{"VS Code", vscode, "servers"},
	}
}

// checkClient looks for a server entry that runs openhuman-core mcp in a client's
// configuration file (skipped when the file does not exist) and starts it as the
// client would: its command must be an absolute path (desktop apps do not read
// the shell's PATH) that exists and answers initialize. Failing that, an entry
// that reaches serve's /mcp over HTTP (by URL, or through mcp-remote) is checked:
// the URL answers and accepts the token the entry sends.
func checkClient(ctx context.Context, c clientConfig, tokenPath string) (string, string, string, string) {
	name := strings.ToLower(strings.ReplaceAll(c.Client, " ", "-"))
	data, err := os.ReadFile(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return name, checkSkip, "no " + c.Path, ""
	}
	bin, _ := os.Executable()
	if bin == "" {
		bin = "/absolute/path/to/openhuman-core"
	}
	snippet := fmt.Sprintf(`"%s": { "openhuman": { "command": %q, "args": ["mcp"] } }`, c.Key, bin)
	if strings.HasSuffix(c.Path, ".toml") {
		snippet = fmt.Sprintf("[%s.openhuman] command = %q, args = [\"mcp\"]", c.Key, bin)
	}
	if err != nil {
		return name, checkFail, err.Error(), "check the file's permissions"
	}
	var doc map[string]json.RawMessage
	if strings.HasSuffix(c.Path, ".toml") {
		var t map[string]any
		if err := toml.Unmarshal(data, &t); err != nil {
			return name, checkFail, c.Path + " is not valid TOML: " + err.Error(), "correct the file; the client ignores it as it is"
		}
		j, _ := json.Marshal(t)
		_ = json.Unmarshal(j, &doc)
	} else if err := json.Unmarshal(stripJSONComments(data), &doc); err != nil {
		return name, checkFail, c.Path + " is not valid JSON: " + err.Error(), "correct the file; the client ignores it as it is"
	}
	var servers map[string]serverEntry
	if raw, ok := doc[c.Key]; ok {
		json.Unmarshal(raw, &servers)
	}
	keys := make([]string, 0, len(servers))
	for key := range servers {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		s := servers[key]
		if filepath.Base(s.Command) != "openhuman-core" || len(s.Args) == 0 || s.Args[0] != "mcp" {
			continue
		}
		if err := startsAsClient(ctx, s.Command, s.Args, s.Env); err != nil {
			return name, checkFail, fmt.Sprintf("%s: %q cannot be started as %s starts it: %v", c.Path, key, c.Client, err),
				"use the absolute path: " + snippet
		}
		return name, checkOK, fmt.Sprintf("%s: %q runs %s mcp (answers initialize)", c.Path, key, s.Command), ""
	}
	// An entry that reaches serve's /mcp over HTTP, by URL or through mcp-remote
	// (doctor_http.go).
	for _, key := range keys {
		if e, ok := servers[key].http(); ok && e.ours(key) {
			result, detail, fix := checkHTTPEntry(ctx, c, key, e, tokenPath)
			return name, result, detail, fix
		}
	}
	return name, checkWarn, c.Path + " has no openhuman-core server: no entry runs `openhuman-core mcp` or reaches serve's /mcp (by URL or through mcp-remote)",
		"add " + snippet + " (README → Connect an MCP client; over HTTP: README → HTTP JSON-RPC and the tool registry)"
}

// stripJSONComments removes // and /* */ comments and trailing commas outside
// strings (Zed's settings.json allows them).
func stripJSONComments(b []byte) []byte {
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
				i++
			}
			i++
		case c == ']' || c == '}':
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
