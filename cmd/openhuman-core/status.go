package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// StatusSchema identifies the JSON layout of `status --json`.
const StatusSchema = "openhuman.status/1"

// statusReport is `status`'s answer.
type statusReport struct {
	Schema     string              `json:"schema"`
	Version    string              `json:"version"`
	Home       string              `json:"home"`
	ConfigFile string              `json:"config_file"`
	Store      memtree.StoreStatus `json:"store"`
	Embedder   statusEmbedder      `json:"embedder"`
	SearXNG    statusSearXNG       `json:"searxng"`
	Tools      statusTools         `json:"tools"`
	CacheDir   string              `json:"cache_dir"`
	AuditLog   string              `json:"audit_log"`
}

type statusEmbedder struct {
	Embedder string `json:"embedder"` // none | ollama | openai
	Endpoint string `json:"endpoint,omitempty"`
	Model    string `json:"model,omitempty"`
	// Vectors counts the stored vectors of the configured model (any dimension).
	Vectors int `json:"vectors"`
}

type statusSearXNG struct {
	Enabled bool   `json:"enabled"`
	BaseURL string `json:"base_url"`
}

type statusTools struct {
	Dir     string         `json:"dir"`
	Policy  string         `json:"policy"`
	Modules []statusModule `json:"modules"`
	// Error says why the modules could not be listed.
	Error string `json:"error,omitempty"`
}

type statusModule struct {
	Module string   `json:"module"`
	Tools  []string `json:"tools"`
	Origin string   `json:"origin"`
	SHA256 string   `json:"sha256"`
	State  string   `json:"state"`
	Error  string   `json:"error,omitempty"`
}

// newStatusCmd is `openhuman-core status`.
func newStatusCmd() *cobra.Command {
	var asJSON bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what the memory tree holds and how the server is set up",
		Long: `status reports, without changing anything: the store (path, size, schema
version, sources per kind, chunks, summaries, entities, vectors per embedding model,
the last ingest run), the dense embedder and SearXNG settings, the tool modules
(digest and load state), the compilation cache directory and the audit log path.`,
		Example: `  openhuman-core status
  openhuman-core status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			cfg, err := loadConfig(log)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			rep, err := buildStatus(cmd.Context(), cfg, log, wait)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			writeStatusText(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema "+StatusSchema+")")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the tool modules to compile")
	return cmd
}

// buildStatus gathers the report; only an unreadable store is an error.
func buildStatus(ctx context.Context, cfg *config.Config, log *slog.Logger, wait time.Duration) (*statusReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := storeStatus(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	rep := &statusReport{
		Schema: StatusSchema, Version: Version(), Home: cfg.Home, ConfigFile: cfg.File, Store: st,
		Embedder: statusEmbedder{Embedder: cfg.MemoryTree.Embedder},
		SearXNG:  statusSearXNG{Enabled: cfg.SearXNG.Enabled, BaseURL: cfg.SearXNG.BaseURL},
		Tools:    statusTools{Dir: cfg.Tools.Dir, Policy: cfg.Tools.Policy, Modules: []statusModule{}},
		CacheDir: compileCacheDir(),
		AuditLog: filepath.Join(cfg.AuditDir(), audit.FileName),
	}
	if cfg.MemoryTree.Embedder != config.EmbedderNone && cfg.MemoryTree.Embedder != "" {
		rep.Embedder.Endpoint, rep.Embedder.Model = embed.Redact(cfg.MemoryTree.Endpoint), cfg.MemoryTree.Model
		for k, n := range st.Vectors {
			if strings.HasPrefix(k, cfg.MemoryTree.Model+"/") {
				rep.Embedder.Vectors += n
			}
		}
	}
	host, closeHost, err := openHost(ctx, cfg, log)
	if err != nil {
		rep.Tools.Error = err.Error()
		return rep, nil
	}
	defer closeHost()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := host.WaitReady(wctx); err != nil {
		log.Debug("status: some modules did not load", "err", err) // each is listed with its state
	}
	for _, m := range host.Status() {
		tools := m.Tools
		if tools == nil {
			tools = []string{}
		}
		rep.Tools.Modules = append(rep.Tools.Modules, statusModule{Module: m.Module.Name, Tools: tools,
			Origin: m.Module.Origin, SHA256: m.Module.SHA256, State: m.State, Error: m.Error})
	}
	return rep, nil
}

// compileCacheDir is where the runtime keeps compiled modules by default (its
// CacheDir option left empty), or "" when there is no user cache directory.
func compileCacheDir() string {
	ucd, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(ucd, "openhuman", "wazero")
}

// humanBytes formats n as B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 2; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMG"[exp])
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writeStatusText(out io.Writer, r *statusReport) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	s := r.Store
	p("version", "%s", r.Version)
	cfgFile := r.ConfigFile
	if cfgFile == "" {
		cfgFile = "(none; defaults) " + filepath.Join(r.Home, "config.toml")
	}
	p("config", "%s", cfgFile)
	if !s.Exists {
		p("store", "%s (not created yet: run openhuman-core ingest PATH...)", s.Path)
	} else {
		p("store", "%s (%s, schema %d)", s.Path, humanBytes(s.Bytes), s.SchemaVersion)
		var kinds []string
		for _, k := range sortedKeys(s.Sources) {
			kinds = append(kinds, fmt.Sprintf("%s %d (%d chunks)", k, s.Sources[k], s.Chunks[k]))
		}
		if len(kinds) == 0 {
			kinds = []string{"none"}
		}
		p("sources", "%s", strings.Join(kinds, ", "))
		p("chunks", "%d, %d summaries, %d entities", s.TotalChunks, s.Summaries, s.Entities)
		var vecs []string
		for _, k := range sortedKeys(s.Vectors) {
			vecs = append(vecs, fmt.Sprintf("%s %d", k, s.Vectors[k]))
		}
		if len(vecs) == 0 {
			vecs = []string{"none"}
		}
		p("vectors", "%s", strings.Join(vecs, ", "))
		if s.Paraphrases > 0 {
			p("paraphrases", "%d words", s.Paraphrases)
		}
		if li := s.LastIngest; li != nil {
			p("last ingest", "%s: %s", li.Time.Local().Format("2006-01-02 15:04"), strings.Join(li.Roots, " "))
			p("", "%s", li.Summary)
		} else {
			p("last ingest", "not recorded")
		}
	}
	if r.Embedder.Embedder == config.EmbedderNone || r.Embedder.Embedder == "" {
		p("embedder", "none (recall is offline: bm25 + WordNet)")
	} else {
		p("embedder", "%s %s at %s (%d vectors of this model)", r.Embedder.Embedder, r.Embedder.Model, r.Embedder.Endpoint, r.Embedder.Vectors)
	}
	if r.SearXNG.Enabled {
		p("searxng", "enabled, %s", r.SearXNG.BaseURL)
	} else {
		p("searxng", "disabled")
	}
	p("tools dir", "%s", r.Tools.Dir)
	p("policy", "%s", r.Tools.Policy)
	if r.Tools.Error != "" {
		p("modules", "not listed: %s", r.Tools.Error)
	}
	for i, m := range r.Tools.Modules {
		k := ""
		if i == 0 {
			k = "modules"
		}
		short := m.SHA256
		if len(short) > 16 {
			short = short[:16] + "…"
		}
		line := fmt.Sprintf("%s %s %s (%s: %s)", m.Module, m.State, short, m.Origin, strings.Join(m.Tools, ", "))
		if m.Error != "" {
			line += ": " + m.Error
		}
		p(k, "%s", line)
	}
	cache := r.CacheDir
	if cache == "" {
		cache = "(no user cache directory: modules compile in memory)"
	}
	p("cache", "%s", cache)
	p("audit log", "%s", r.AuditLog)
	tw.Flush()
}
