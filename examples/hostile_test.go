package examples

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tamper signs mod with key and flips a byte in its code section.
func tamper(t *testing.T, mod []byte, key ed25519.PrivateKey) []byte {
	t.Helper()
	signed, err := signature.Sign(mod, key)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wasmbin.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Sections {
		if s.ID == wasmbin.SectionCode {
			out := bytes.Clone(signed)
			out[s.End-2] ^= 0x01
			return out
		}
	}
	t.Fatal("no code section")
	return nil
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

// hostileHost starts a host over the store in dir serving the first-party
// tree.list_sources module and the modules tools holds under policy p (cacheDir
// "-" compiles in memory), closed at the end of the test, and waits up to two
// minutes for its modules; the error is WaitReady's.
func hostileHost(ctx context.Context, t *testing.T, dir, tools string, p *policy.Policy, cacheDir, engine string) (*runtime.Host, error) {
	t.Helper()
	store, err := memtree.OpenReadOnly(filepath.Join(dir, "workspace", "memory_tree", "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	fp, err := toolswasm.Get("tree.list_sources")
	if err != nil {
		t.Fatal(err)
	}
	host, err := runtime.New(ctx, runtime.Options{
		Reader:   memory.Default(store),
		Builtins: []runtime.BuiltinModule{{Name: fp.Name + ".wasm", SHA256: fp.SHA256, Wasm: fp.Wasm}},
		ToolsDir: tools,
		Policy:   p,
		CacheDir: cacheDir,
		Logger:   slog.New(slog.NewTextHandler(newSyncBuffer(), &slog.HandlerOptions{Level: slog.LevelDebug})),
		Engine:   engine,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(ctx) })
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return host, host.WaitReady(wctx)
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.buf.Write(p)
}
func (s *syncBuffer) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.buf.String()
}

// TestHostileModules loads every hostile module into a real runtime next to a
// first-party tool, and proves each is refused at load or contained at run time,
// and that the first-party tool still answers afterwards.
// TestHostileModules runs the hostile modules with the default engine (third-party
// modules compiled) and with every module interpreted: the sandbox does not depend on the
// tier (runtime/tier.go).
func TestHostileModules(t *testing.T) {
	for name, engine := range map[string]string{"default": runtime.EngineTiered, "interpreter": runtime.EngineInterpreter} {
		t.Run(name, func(t *testing.T) { testHostileModules(t, engine) })
	}
}

func testHostileModules(t *testing.T, engine string) {
	ctx := context.Background()
	// Extism's http_request target: count anything that reaches it.
	var hits atomic.Int64
	ln, lnErr := net.Listen("tcp", "127.0.0.1:7788")
	if lnErr == nil {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })}
		go srv.Serve(ln)
		defer srv.Close()
	} else {
		t.Logf("NOTE: 127.0.0.1:7788 is in use (%v): the extism_http call must still fail, but whether a request reached that port is not checked", lnErr)
	}

	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.Mkdir(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	var pol strings.Builder
	_, key, _ := signature.GenerateKey(nil)
	pin := func(file string, mod []byte, grant []string) {
		if err := os.WriteFile(filepath.Join(tools, file), mod, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&pol, "[[module]]\nfile = %q\nsha256 = %q\ngrant = %q\n\n", file, sum(mod), grant)
	}
	hostile := map[string]CModule{}
	var good []byte
	for _, m := range CModules() {
		mod, err := os.ReadFile(m.Wasm())
		if err != nil {
			t.Fatal(err)
		}
		if m.Expected == "" {
			good = mod
		}
		hostile[m.Name] = m
		pin(m.Name+".wasm", mod, m.Grant)
	}
	if good == nil {
		good, _ = os.ReadFile(CModules()[len(CModules())-2].Wasm()) // any well-formed module
	}
	tampered := tamper(t, good, key)
	pin("tampered.wasm", tampered, []string{"memory.read"})
	fmt.Fprintf(&pol, "[trust]\nkeys = [%q]\n", signature.FormatPublicKey(key.Public().(ed25519.PublicKey)))
	p, err := policy.Parse([]byte(pol.String()), filepath.Join(dir, "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}

	host, err := hostileHost(ctx, t, dir, tools, p, filepath.Join(dir, "cache"), engine)
	if err != nil {
		t.Logf("WaitReady: %v", err)
	}

	states := map[string]runtime.ModuleStatus{}
	for _, st := range host.Status() {
		states[st.Module.Name] = st
	}
	refusals := map[string]string{
		"path_open.wasm":    "path_open",
		"ungranted.wasm":    "web.searxng",
		"manifest_lie.wasm": "searxng_search",
		"tampered.wasm":     "changed after signing",
	}
	for file, want := range refusals {
		st, ok := states[file]
		if !ok {
			t.Errorf("%s: not in Status()", file)
			continue
		}
		if st.State != runtime.StateRefused || !strings.Contains(st.Error, want) {
			t.Errorf("%s: state %s error %q, want refused mentioning %q", file, st.State, st.Error, want)
		}
	}
	served := map[string]bool{}
	for _, tl := range host.Tools() {
		served[tl.Name] = true
	}
	for _, m := range CModules() {
		if m.Expected == RefusedAtAudit && served[m.Tool] {
			t.Errorf("%s is served although it must be refused", m.Tool)
		}
		if m.Expected != RefusedAtAudit && !served[m.Tool] {
			t.Errorf("%s is not served (state %s: %s)", m.Tool, states[m.Name+".wasm"].State, states[m.Name+".wasm"].Error)
		}
	}

	firstParty := func(when string) {
		t.Helper()
		out, err := host.Call(ctx, runtime.Call{Tool: "tree.list_sources", Arguments: []byte(`{}`), Client: "mcp:test"})
		if err != nil || out.ToolError != nil || !strings.Contains(string(out.Result), `"sources"`) {
			t.Fatalf("%s: the first-party tool no longer answers: %v %+v", when, err, out)
		}
	}
	firstParty("before the hostile calls")

	// The well-behaved C tool answers and reports argument errors as tool errors.
	out, err := host.Call(ctx, runtime.Call{Tool: "c.hello", Arguments: []byte(`{"name":"Ada"}`), Client: "mcp:test"})
	if err != nil || out.ToolError != nil || string(out.Result) != `{"greeting":"Hello, Ada! Your memory tree has 0 sources.","sources":0}` {
		t.Fatalf("c.hello: %v %+v", err, out)
	}
	if out.Usage.HostCalls["sources_list"] != 1 {
		t.Errorf("c.hello host calls: %+v", out.Usage)
	}
	out, err = host.Call(ctx, runtime.Call{Tool: "c.hello", Arguments: []byte(`{"name":"<script>"}`)})
	if err != nil || out.ToolError == nil || out.ToolError.Code != "invalid_params" {
		t.Fatalf("c.hello bad name: %v %+v", err, out)
	}

	contained := map[string]string{
		"hostile.infinite_loop": "deadline",
		"hostile.alloc_bomb":    "unreachable", // its own trap once memory.grow was refused at the cap
		"hostile.big_result":    "limit",
		"hostile.extism_http":   "is not allowed",
	}
	for tool, want := range contained {
		for round := 0; round < 2; round++ { // a second call gets a fresh instance and is contained again
			out, err := host.Call(ctx, runtime.Call{Tool: tool, Arguments: []byte(`{}`), Client: "mcp:test"})
			if err == nil && (out == nil || out.ToolError == nil) {
				t.Errorf("%s round %d: succeeded (%s); it must fail", tool, round, out.Result)
				continue
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = out.ToolError.Message
			}
			if !strings.Contains(msg, want) {
				t.Errorf("%s round %d: %q does not mention %q", tool, round, msg, want)
			}
			t.Logf("%s round %d contained: %s", tool, round, msg)
		}
		firstParty("after " + tool)
	}
	if lnErr == nil && hits.Load() != 0 {
		t.Errorf("the Extism module reached 127.0.0.1:7788 %d times", hits.Load())
	}
}
