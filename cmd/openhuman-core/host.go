package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/searxng"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

// hostCloseGrace bounds how long closing waits for the runtime: module compiles
// still running in the background cannot be interrupted, and a server whose input
// has ended should exit promptly (the compilation cache writes each entry
// atomically, so leaving mid-compile loses nothing but that compile).
const hostCloseGrace = 500 * time.Millisecond

// openHost opens everything a server command needs to run tool calls: the memory
// tree read-only at cfg.StorePath() (a store that does not exist yet reads as
// empty, with a hint), the SearXNG client when enabled, the operator's policy, the
// embedded first-party modules, and the runtime, which compiles modules in the
// background. The returned function releases all of it.
func openHost(ctx context.Context, cfg *config.Config, log *slog.Logger) (*runtime.Host, func(), error) {
	return openHostHeld(ctx, cfg, log, nil, nil)
}

// openHostHeld is openHost whose background compiles wait until hold is closed
// (nil: they start at once), and whose collections after the start wait until
// afterStart is closed (nil: they do not wait); see runtime.Options.Hold and
// AfterStart.
func openHostHeld(ctx context.Context, cfg *config.Config, log *slog.Logger, hold, afterStart <-chan struct{}) (*runtime.Host, func(), error) {
	start := time.Now()
	store, storeErr, err := openHostStore(cfg)
	if err != nil {
		return nil, nil, err
	}
	// A configured dense embedder makes recall hybrid; when it is unreachable at
	// query time recall falls back to the offline mode and says so in its result.
	// Set before the store opens (a PostgreSQL store hands it on when it has
	// connected).
	if emb, err := embed.New(cfg.MemoryTree, os.Getenv); err != nil {
		log.Warn("dense embedder not usable; recall stays offline", "err", err)
	} else if st, ok := store.(interface{ SetEmbedder(memtree.Embedder) }); ok && emb != nil {
		st.SetEmbedder(emb)
		log.Debug("dense embedder configured", "embedder", cfg.MemoryTree.Embedder, "model", emb.Model())
	}
	// Opening the store (a connection, the schema) runs beside loading the
	// policy, the modules and the runtime, which do not read it (≈ 0.8 ms of a
	// start); its error is reported below as before, and nothing is served
	// before it.
	opening := make(chan struct{})
	var openErr error
	go func() {
		defer close(opening)
		openErr = store.Open(ctx)
	}()
	opened := func() error {
		<-opening
		return openErr
	}
	closeStore := func() {
		opened()
		store.Close()
	}
	tStore := time.Since(start)
	var sx runtime.SearxngClient
	if cfg.SearXNG.Enabled {
		c, err := searxng.New(cfg.SearXNG)
		if err != nil {
			closeStore()
			return nil, nil, fmt.Errorf("SearXNG is enabled but not usable: %w", err)
		}
		sx = c
		log.Debug("searxng enabled", "endpoint", c.Endpoint())
	}
	pol, err := policy.Load(cfg.Tools.Policy)
	if err != nil {
		closeStore()
		return nil, nil, fmt.Errorf("load the tool policy: %w", err)
	}
	tPolicy := time.Since(start)
	mods, err := toolswasm.Modules() // a few kilobytes each, checked against their pinned digests
	if err != nil {
		closeStore()
		return nil, nil, fmt.Errorf("load the embedded tool modules (the binary looks damaged; rebuild or reinstall it): %w", err)
	}
	builtins := make([]runtime.BuiltinModule, 0, len(mods))
	for _, m := range mods {
		builtins = append(builtins, runtime.BuiltinModule{Name: m.Name + ".wasm", SHA256: m.SHA256, Wasm: m.Wasm, SchemasChecked: true})
	}
	tCatalogue := time.Since(start)
	host, err := runtime.New(ctx, runtime.Options{
		Reader:         memory.Default(store),
		SearXNG:        sx,
		SearXNGEnabled: cfg.SearXNG.Enabled,
		Builtins:       builtins,
		ToolsDir:       cfg.Tools.Dir,
		Policy:         pol,
		Autonomy:       cfg.Autonomy.Level,
		Logger:         log,
		Hold:           hold,
		AfterStart:     afterStart,
	})
	if err != nil {
		closeStore()
		return nil, nil, fmt.Errorf("start the tool runtime: %w", err)
	}
	if err := opened(); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostCloseGrace)
		defer cancel()
		host.Close(cctx)
		store.Close()
		return nil, nil, storeErr(err)
	}
	log.Debug("tool host open", "store_ms", ms(tStore), "policy_ms", ms(tPolicy), "catalogue_ms", ms(tCatalogue), "runtime_ms", ms(time.Since(start)))
	// What every first search reads (a connection, the chunk count, the people)
	// loads while the modules compile, not on the first call's path; it starts
	// with the compiles (after the initialize answer when held).
	go func() {
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				return
			}
		}
		t := time.Now()
		if err := store.Warm(ctx); err != nil {
			log.Debug("warming the memory tree", "err", err)
			return
		}
		log.Debug("memory tree warm", "ms", ms(time.Since(t)))
	}()
	// Once every module is warm, a soft Go memory limit of what is in use plus
	// headroom keeps a busy session near its warm footprint (runtime/RATIONALE.md,
	// "Memory: limits and resident size"); GOMEMLIMIT in the environment wins.
	host.LimitGoMemory(64 << 20)
	closeAll := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostCloseGrace)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- host.Close(cctx) }()
		select {
		case err := <-done:
			if err != nil {
				log.Warn("closing the tool runtime", "err", err)
			}
		case <-cctx.Done():
			// Background compiles are still running; the store stays open for them.
			log.Debug("tool runtime still compiling at exit; not waiting", "grace", hostCloseGrace)
			return
		}
		if err := store.Close(); err != nil {
			log.Warn("closing the memory tree", "err", err)
		}
	}
	return host, closeAll, nil
}

// auditRefusedHostCalls writes the capability host calls the runtime refused
// outside any tool call (a warmed instance's start function or _initialize) to
// the audit log: no call's line records them.
func auditRefusedHostCalls(host *runtime.Host, al *audit.Log) {
	host.OnRefusedHostCall(func(ev runtime.RefusedHostCall) {
		al.Record(audit.Entry{Time: ev.Time, Session: "host", Tool: ev.Module, Outcome: audit.OutcomeRefusedHostCall,
			Error: ev.Reason, Capabilities: audit.Capabilities{Refused: map[string]int{ev.Func: 1}}})
	})
}

// openAudit starts the per-call audit log under the workspace, rotated by size as
// configured. Writing it never blocks or fails a call.
func openAudit(cfg *config.Config, log *slog.Logger) *audit.Log {
	return audit.New(audit.Options{
		Dir:          cfg.AuditDir(),
		MaxFileBytes: int64(cfg.Audit.MaxFileMiB) << 20,
		MaxFiles:     cfg.Audit.MaxFiles,
		Logger:       log,
	})
}
