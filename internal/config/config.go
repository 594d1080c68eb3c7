// Package config loads openhuman-core's settings from config.toml and OPENHUMAN_*
// environment variables; every setting has a default that works with no file at all.
//
// Precedence: flag > environment > file > default. An invalid environment value is
// reported as a Warning and ignored as a whole (never half-applied); an invalid file
// value is an error naming the file, line and key.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/openhuman/openhuman-core/internal/smallfile"
)

// maxConfigBytes bounds config.toml (a few KiB in practice).
const maxConfigBytes = 1 << 20

// Autonomy levels of the read gate (config `[autonomy] level`).
const (
	AutonomyReadOnly   = "readonly"
	AutonomySupervised = "supervised"
	AutonomyFull       = "full"
)

// Embedder names for `[memory_tree] embedder`.
const (
	EmbedderNone   = "none"
	EmbedderOllama = "ollama"
	EmbedderOpenAI = "openai"
)

// Config is the whole configuration.
type Config struct {
	// Home is $OPENHUMAN_HOME (default ~/.openhuman): config.toml, policy.toml, tools/.
	Home string `toml:"-"`
	// Workspace holds the store and the audit log (default <Home>/workspace).
	Workspace string `toml:"-"`
	// File is the config file that was read ("" when none existed).
	File string `toml:"-"`

	MemoryTree MemoryTree `toml:"memory_tree"`
	SearXNG    SearXNG    `toml:"searxng"`
	Autonomy   Autonomy   `toml:"autonomy"`
	Server     Server     `toml:"server"`
	Tools      Tools      `toml:"tools"`
	Audit      Audit      `toml:"audit"`
	MCP        MCP        `toml:"mcp"`
	// Sources are what `watch` keeps current (sources.go); Watch tunes it.
	Sources []Source `toml:"sources"`
	Watch   Watch    `toml:"watch"`
	Store   Store    `toml:"store"`
}

// Store selects where the memory tree lives.
type Store struct {
	// URL is a PostgreSQL URL (postgres://user@host:port/database; or
	// OPENHUMAN_STORE_URL): the memory tree lives in that database
	// (internal/pgstore). Empty: the embedded SQLite file under the workspace.
	URL string `toml:"url"`
	// Replicas are PostgreSQL URLs of hot standbys of URL's database (or
	// OPENHUMAN_STORE_REPLICAS, comma-separated): the tools' reads go to the
	// first that answers, and to URL when none does; ingest and forget write
	// to URL. A standby lags the primary by its replay delay.
	Replicas []string `toml:"replicas"`
}

// Tool-name spellings an MCP session may be served (config `[mcp] tool_names`).
const (
	// ToolNamesAuto serves the spec's dotted names to the clients known to
	// accept them (mcpserver.Clients) and portable names to every other client,
	// unknown ones included.
	ToolNamesAuto = "auto"
	// ToolNamesSpec serves the spec's names (memory.search, tree.read_chunk, …).
	ToolNamesSpec = "spec"
	// ToolNamesPortable serves names matching ^[a-zA-Z0-9_-]{1,64}$ (memory_search, …).
	ToolNamesPortable = "portable"
)

// MCP configures the MCP servers (stdio `mcp` and serve's /mcp).
type MCP struct {
	// ToolNames is "auto", "spec" or "portable": which spelling of the tool names
	// a session lists. tools/call accepts both spellings whatever it is.
	ToolNames string `toml:"tool_names"`
}

// MemoryTree configures recall's optional dense embedder.
type MemoryTree struct {
	// Embedder is "none" (offline lexical-semantic recall), "ollama" or "openai".
	Embedder string `toml:"embedder"`
	// Endpoint is the embedder's base URL, e.g. http://127.0.0.1:11434.
	Endpoint string `toml:"endpoint"`
	// Model is the embedding model name.
	Model string `toml:"model"`
	// TimeoutMS bounds each embedding request.
	TimeoutMS int `toml:"timeout_ms"`
	// APIKeyEnv names the environment variable holding an OpenAI-compatible API key.
	APIKeyEnv string `toml:"api_key_env"`
	// PivotDictionaries are translating dictionaries in dictd format (paths without
	// .index/.dict.dz, names ending in a pair such as eng-deu) from which ingest
	// derives English paraphrases for offline recall (internal/pivot). Those not
	// installed are skipped; an empty list turns the paraphrases off.
	PivotDictionaries []string `toml:"pivot_dictionaries"`
}

// DefaultPivotDictionaries are where Debian's dict-freedict-eng-deu and
// dict-freedict-deu-eng install FreeDict's English-German dictionaries.
var DefaultPivotDictionaries = []string{
	"/usr/share/dictd/freedict-eng-deu",
	"/usr/share/dictd/freedict-deu-eng",
}

// SearXNG configures the optional web search tool.
type SearXNG struct {
	Enabled         bool   `toml:"enabled"`
	BaseURL         string `toml:"base_url"`
	MaxResults      int    `toml:"max_results"`
	DefaultLanguage string `toml:"default_language"`
	TimeoutSeconds  int    `toml:"timeout_seconds"`
}

// Autonomy is the read gate's level.
type Autonomy struct {
	Level string `toml:"level"`
}

// Server configures `openhuman-core serve`.
type Server struct {
	Host string `toml:"host"`
	Port int    `toml:"port"`
	// AllowedHosts are further names (host or host:port; a bare host means on
	// the port serve listens on) that the Host and Origin headers of a request
	// may carry, besides 127.0.0.1, localhost and [::1] on that port. Others are
	// refused with 403, which keeps web pages on other sites out (DNS rebinding).
	AllowedHosts []string `toml:"allowed_hosts"`
}

// Tools configures third-party tool modules.
type Tools struct {
	// Dir is the third-party tools directory (default <Home>/tools).
	Dir string `toml:"dir"`
	// Policy is the policy file (default <Home>/policy.toml).
	Policy string `toml:"policy"`
}

// Audit configures the per-call audit log.
type Audit struct {
	// MaxFileMiB rotates the audit log when it passes this size.
	MaxFileMiB int `toml:"max_file_mib"`
	// MaxFiles is how many rotated files are kept.
	MaxFiles int `toml:"max_files"`
}

// Warning is a setting that was reported and ignored.
type Warning struct {
	Key     string // e.g. OPENHUMAN_SEARXNG_MAX_RESULTS
	Value   string
	Message string
}

func (w Warning) String() string {
	return fmt.Sprintf("ignoring %s=%q: %s", w.Key, w.Value, w.Message)
}

// Defaults returns the configuration used when nothing is set, rooted at home.
func Defaults(home string) *Config {
	return &Config{
		Home:      home,
		Workspace: filepath.Join(home, "workspace"),
		MemoryTree: MemoryTree{
			Embedder:  EmbedderNone,
			TimeoutMS: 10000,
			APIKeyEnv: "OPENAI_API_KEY",

			PivotDictionaries: slices.Clone(DefaultPivotDictionaries),
		},
		SearXNG: SearXNG{
			Enabled:         false,
			BaseURL:         "http://localhost:8080",
			MaxResults:      10,
			DefaultLanguage: "en",
			TimeoutSeconds:  10,
		},
		Autonomy: Autonomy{Level: AutonomySupervised},
		Server:   Server{Host: "127.0.0.1", Port: 7788},
		Tools: Tools{
			Dir:    filepath.Join(home, "tools"),
			Policy: filepath.Join(home, "policy.toml"),
		},
		Audit: Audit{MaxFileMiB: 16, MaxFiles: 5},
		MCP:   MCP{ToolNames: ToolNamesAuto},
		Watch: defaultWatch(),
	}
}

// Env is the environment lookup used by Load (os.LookupEnv in production).
type Env func(key string) (string, bool)

// Load reads configuration. file may be "" for <home>/config.toml; a missing default
// file is not an error, a missing explicit file is.
func Load(file string, env Env) (*Config, []Warning, error) {
	if env == nil {
		env = os.LookupEnv
	}
	home, err := homeDir(env)
	if err != nil {
		return nil, nil, err
	}
	cfg := Defaults(home)
	if ws, ok := env("OPENHUMAN_WORKSPACE"); ok && strings.TrimSpace(ws) != "" {
		cfg.Workspace = filepath.Clean(strings.TrimSpace(ws))
	}

	explicit := file != ""
	if !explicit {
		file = filepath.Join(home, "config.toml")
	}
	data, err := smallfile.Read(file, maxConfigBytes) // a FIFO or /dev/zero neither hangs nor fills memory
	switch {
	case err == nil:
		if err := decodeFile(file, data, cfg); err != nil {
			return nil, nil, err
		}
		cfg.File = file
	case errors.Is(err, os.ErrNotExist) && !explicit:
	default:
		return nil, nil, fmt.Errorf("read config %s: %w", file, err)
	}
	if err := cfg.validate(file); err != nil {
		return nil, nil, err
	}
	warnings := applyEnv(cfg, env)
	return cfg, warnings, nil
}

func homeDir(env Env) (string, error) {
	if h, ok := env("OPENHUMAN_HOME"); ok && strings.TrimSpace(h) != "" {
		return filepath.Clean(strings.TrimSpace(h)), nil
	}
	uh, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory (set OPENHUMAN_HOME): %w", err)
	}
	return filepath.Join(uh, ".openhuman"), nil
}

func decodeFile(file string, data []byte, cfg *Config) error {
	// Remember path-valued keys relative to the file's folder.
	dec := toml.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		var se *toml.StrictMissingError
		if errors.As(err, &se) {
			var keys []string
			for _, e := range se.Errors {
				row, _ := e.Position()
				keys = append(keys, fmt.Sprintf("%s:%d: unknown key %q", file, row, strings.Join(e.Key(), ".")))
			}
			return fmt.Errorf("%s", strings.Join(keys, "; "))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			if msg := typeMismatch(de); msg != "" {
				return fmt.Errorf("%s:%d:%d: %s", file, row, col, msg)
			}
			return fmt.Errorf("%s:%d:%d: %s", file, row, col, de.Error())
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	base := filepath.Dir(file)
	if cfg.Tools.Dir != "" && !filepath.IsAbs(cfg.Tools.Dir) {
		cfg.Tools.Dir = filepath.Join(base, cfg.Tools.Dir)
	}
	if cfg.Tools.Policy != "" && !filepath.IsAbs(cfg.Tools.Policy) {
		cfg.Tools.Policy = filepath.Join(base, cfg.Tools.Policy)
	}
	cfg.resolveSources(base)
	return nil
}

// reTypeMismatch matches go-toml's wording of a value of the wrong type.
var reTypeMismatch = regexp.MustCompile(`cannot decode TOML (\w+) into (?:struct field )?\S+? of type (\S+)`)

// typeMismatch rewrites a wrong-type error in the file's own terms: the key and
// the type it takes ("searxng.enabled: expected true or false, got a string"),
// or "" when de is another error.
func typeMismatch(de *toml.DecodeError) string {
	m := reTypeMismatch.FindStringSubmatch(de.Error())
	if m == nil {
		return ""
	}
	key := strings.Join(de.Key(), ".")
	if key == "" {
		key = "a key"
	}
	want := map[string]string{
		"bool": "true or false", "int": "a whole number", "int64": "a whole number",
		"string": "a quoted string", "[]string": `an array of quoted strings (["a", "b"])`,
	}[m[2]]
	if want == "" {
		want = "a value of type " + m[2]
	}
	got := map[string]string{"string": "a string", "integer": "a number", "float": "a number", "boolean": "true/false",
		"array": "an array", "table": "a table", "inline": "a table"}[strings.ToLower(m[1])]
	if got == "" {
		got = "a " + strings.ToLower(m[1])
	}
	return fmt.Sprintf("%s: expected %s, got %s", key, want, got)
}

func (c *Config) validate(file string) error {
	var errs []string
	bad := func(key, msg string) { errs = append(errs, fmt.Sprintf("%s: %s: %s", file, key, msg)) }
	if c.SearXNG.MaxResults < 1 || c.SearXNG.MaxResults > 50 {
		bad("searxng.max_results", fmt.Sprintf("must be 1..50, got %d", c.SearXNG.MaxResults))
	}
	if c.SearXNG.TimeoutSeconds < 1 || c.SearXNG.TimeoutSeconds > 300 {
		bad("searxng.timeout_seconds", fmt.Sprintf("must be 1..300, got %d", c.SearXNG.TimeoutSeconds))
	}
	if err := CheckBaseURL(c.SearXNG.BaseURL); err != nil {
		bad("searxng.base_url", err.Error())
	}
	switch c.Autonomy.Level {
	case AutonomyReadOnly, AutonomySupervised, AutonomyFull:
	default:
		bad("autonomy.level", fmt.Sprintf("must be readonly, supervised or full, got %q", c.Autonomy.Level))
	}
	switch c.MemoryTree.Embedder {
	case EmbedderNone, EmbedderOllama, EmbedderOpenAI:
	default:
		bad("memory_tree.embedder", fmt.Sprintf("must be none, ollama or openai, got %q", c.MemoryTree.Embedder))
	}
	if c.MemoryTree.Embedder != EmbedderNone && (c.MemoryTree.Endpoint == "" || c.MemoryTree.Model == "") {
		bad("memory_tree", "an embedder needs both endpoint and model")
	}
	if c.MemoryTree.TimeoutMS < 1 {
		bad("memory_tree.timeout_ms", "must be positive")
	}
	if c.Server.Port < 0 || c.Server.Port > 65535 {
		bad("server.port", fmt.Sprintf("must be 0..65535, got %d", c.Server.Port))
	}
	for _, h := range c.Server.AllowedHosts {
		if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, "/ ,") {
			bad("server.allowed_hosts", fmt.Sprintf("each entry must be a host or host:port such as \"myhost.local:7788\", got %q", h))
		}
	}
	if c.Audit.MaxFileMiB < 1 || c.Audit.MaxFiles < 1 {
		bad("audit", "max_file_mib and max_files must be positive")
	}
	if !validToolNames(c.MCP.ToolNames) {
		bad("mcp.tool_names", fmt.Sprintf("must be auto, spec or portable, got %q", c.MCP.ToolNames))
	}
	c.validateSources(bad)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// CheckBaseURL reports whether s is a usable SearXNG base URL (http or https, with a host).
// Its messages never repeat a password the URL holds.
func CheckBaseURL(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return errors.New("SearXNG base_url cannot be empty")
	}
	shown := RedactURL(s)
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the raw URL
		}
		return fmt.Errorf("invalid SearXNG base_url %q: %w", shown, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid SearXNG base_url %q: scheme must be http or https", shown)
	}
	if u.Host == "" {
		return fmt.Errorf("invalid SearXNG base_url %q: no host", shown)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("invalid SearXNG base_url %q: no credentials, query or fragment allowed", shown)
	}
	return nil
}

// RedactURL is s with any password in it replaced by "xxxxx", for messages
// and logs (issue 39: passwords in [memory_tree] endpoint and searxng
// base_url were printed by doctor, status and ingest).
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if strings.Contains(s, "@") {
			return "(an unparsable URL with credentials)"
		}
		return s
	}
	return u.Redacted()
}

// applyEnv overlays OPENHUMAN_* variables. Each invalid value becomes a Warning and
// leaves the setting as it was.
func applyEnv(c *Config, env Env) []Warning {
	var ws []Warning
	get := func(key string) (string, bool) {
		v, ok := env(key)
		if !ok {
			return "", false
		}
		return strings.TrimSpace(v), true
	}
	warn := func(key, val, msg string) { ws = append(ws, Warning{Key: key, Value: val, Message: msg}) }

	if v, ok := get("OPENHUMAN_SEARXNG_ENABLED"); ok {
		if b, err := ParseBool(v); err != nil {
			warn("OPENHUMAN_SEARXNG_ENABLED", v, err.Error())
		} else {
			c.SearXNG.Enabled = b
		}
	}
	if v, ok := get("OPENHUMAN_SEARXNG_BASE_URL"); ok {
		if err := CheckBaseURL(v); err != nil {
			warn("OPENHUMAN_SEARXNG_BASE_URL", v, err.Error())
		} else {
			c.SearXNG.BaseURL = v
		}
	}
	if v, ok := get("OPENHUMAN_SEARXNG_MAX_RESULTS"); ok {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 50 {
			warn("OPENHUMAN_SEARXNG_MAX_RESULTS", v, "must be an integer 1..50")
		} else {
			c.SearXNG.MaxResults = n
		}
	}
	if v, ok := get("OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE"); ok {
		if v == "" || len(v) > 35 || strings.ContainsAny(v, " &?#/=") {
			warn("OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE", v, "must be a language tag such as en or zh-CN")
		} else {
			c.SearXNG.DefaultLanguage = v
		}
	}
	if v, ok := get("OPENHUMAN_SEARXNG_TIMEOUT_SECONDS"); ok {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 300 {
			warn("OPENHUMAN_SEARXNG_TIMEOUT_SECONDS", v, "must be an integer 1..300")
		} else {
			c.SearXNG.TimeoutSeconds = n
		}
	}
	if v, ok := get("OPENHUMAN_AUTONOMY_LEVEL"); ok {
		switch v {
		case AutonomyReadOnly, AutonomySupervised, AutonomyFull:
			c.Autonomy.Level = v
		default:
			warn("OPENHUMAN_AUTONOMY_LEVEL", v, "must be readonly, supervised or full")
		}
	}
	if v, ok := get("OPENHUMAN_STORE_URL"); ok {
		c.Store.URL = v
	}
	if v, ok := get("OPENHUMAN_STORE_REPLICAS"); ok {
		c.Store.Replicas = nil
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				c.Store.Replicas = append(c.Store.Replicas, u)
			}
		}
	}
	if v, ok := get("OPENHUMAN_MEMORY_PIVOT_DICTIONARIES"); ok {
		c.MemoryTree.PivotDictionaries = nil
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				c.MemoryTree.PivotDictionaries = append(c.MemoryTree.PivotDictionaries, p)
			}
		}
	}
	// The embedder is applied as a whole: a half-valid set is ignored entirely.
	emb, embOK := get("OPENHUMAN_MEMORY_EMBEDDER")
	ep, epOK := get("OPENHUMAN_MEMORY_EMBED_ENDPOINT")
	model, modelOK := get("OPENHUMAN_MEMORY_EMBED_MODEL")
	if embOK || epOK || modelOK {
		next := c.MemoryTree
		if embOK {
			next.Embedder = emb
		}
		if epOK {
			next.Endpoint = ep
		}
		if modelOK {
			next.Model = model
		}
		switch {
		case next.Embedder != EmbedderNone && next.Embedder != EmbedderOllama && next.Embedder != EmbedderOpenAI:
			warn("OPENHUMAN_MEMORY_EMBEDDER", emb, "must be none, ollama or openai")
		case next.Embedder != EmbedderNone && (next.Endpoint == "" || next.Model == ""):
			warn("OPENHUMAN_MEMORY_EMBEDDER", emb, "an embedder needs both OPENHUMAN_MEMORY_EMBED_ENDPOINT and OPENHUMAN_MEMORY_EMBED_MODEL (or the config keys)")
		default:
			c.MemoryTree = next
		}
	}
	if v, ok := get("OPENHUMAN_MEMORY_EMBED_TIMEOUT_MS"); ok {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			warn("OPENHUMAN_MEMORY_EMBED_TIMEOUT_MS", v, "must be a positive integer")
		} else {
			c.MemoryTree.TimeoutMS = n
		}
	}
	if v, ok := get("OPENHUMAN_CORE_HOST"); ok && v != "" {
		c.Server.Host = v
	}
	if v, ok := get("OPENHUMAN_CORE_PORT"); ok {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 65535 {
			warn("OPENHUMAN_CORE_PORT", v, "must be a port number 0..65535")
		} else {
			c.Server.Port = n
		}
	}
	if v, ok := get("OPENHUMAN_MCP_TOOL_NAMES"); ok {
		if v = strings.ToLower(strings.TrimSpace(v)); validToolNames(v) {
			c.MCP.ToolNames = v
		} else {
			warn("OPENHUMAN_MCP_TOOL_NAMES", v, "must be auto, spec or portable")
		}
	}
	if v, ok := get("OPENHUMAN_TOOLS_DIR"); ok && v != "" {
		c.Tools.Dir = v
	}
	if v, ok := get("OPENHUMAN_POLICY"); ok && v != "" {
		c.Tools.Policy = v
	}
	return ws
}

// ParseBool accepts 1/true/yes/on and 0/false/no/off, case-insensitively.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, errors.New("must be one of 1/true/yes/on or 0/false/no/off")
}

// StorePath is the memory tree database file.
func (c *Config) StorePath() string {
	return filepath.Join(c.Workspace, "memory_tree", "chunks.db")
}

// AuditDir is the folder of the per-call audit log.
func (c *Config) AuditDir() string { return filepath.Join(c.Workspace, "audit") }

// TokenPath is where `serve` keeps its generated bearer token.
func (c *Config) TokenPath() string { return filepath.Join(c.Workspace, "core.token") }

func validToolNames(v string) bool {
	return v == ToolNamesAuto || v == ToolNamesSpec || v == ToolNamesPortable
}
