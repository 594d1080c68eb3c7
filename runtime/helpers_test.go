package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

var (
	guestDir  string // built guest modules, one temp dir per test run
	cacheDir  string // wazero compilation cache shared by the tests of one run
	guestMu   sync.Mutex
	guestErrs = map[string]error{}
)

func TestMain(m *testing.M) {
	var err error
	guestDir, err = os.MkdirTemp("", "openhuman-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = filepath.Join(guestDir, "cache")
	code := m.Run()
	os.RemoveAll(guestDir)
	os.Exit(code)
}

// guest builds runtime/testdata/guests/<name> once per test run and returns the
// unpacked module bytes.
func guest(tb testing.TB, name string) []byte {
	tb.Helper()
	guestMu.Lock()
	defer guestMu.Unlock()
	out := filepath.Join(guestDir, name+".wasm")
	if err, ok := guestErrs[name]; ok && err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(out); err != nil {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./testdata/guests/"+name)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := cmd.CombinedOutput(); err != nil {
			guestErrs[name] = fmt.Errorf("building guest %s: %v\n%s", name, err, b)
			tb.Fatal(guestErrs[name])
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// tool is one [[tool]] for a test manifest.
type tool struct{ name, export string }

func manifest(abiVersion string, caps []string, limits string, tools ...tool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "abi = %q\ncapabilities = [", abiVersion)
	for i, c := range caps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", c)
	}
	b.WriteString("]\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "\n[[tool]]\nname = %q\ntitle = %q\ndescription = \"test tool %s\"\n", t.name, t.name, t.name)
		if t.export != "" {
			fmt.Fprintf(&b, "export = %q\n", t.export)
		}
		b.WriteString("input_schema = '''{\"type\":\"object\"}'''\noutput_schema = '''{\"type\":\"object\"}'''\nannotations = { readOnlyHint = true, openWorldHint = false }\n")
	}
	if limits != "" {
		b.WriteString("\n[limits]\n" + limits + "\n")
	}
	return b.String()
}

func pack(tb testing.TB, mod []byte, man string) []byte {
	tb.Helper()
	out, err := wasmbin.SetCustomSection(mod, policy.ManifestSection, []byte(man))
	if errors.Is(err, wasmbin.ErrTooManyEntries) {
		// A module the parser refuses from a count (the loader's test of it):
		// its sections are intact, so the manifest is appended unparsed.
		return wasmbin.AppendCustomSection(mod, policy.ManifestSection, []byte(man))
	}
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func builtinModule(name string, wasm []byte) BuiltinModule {
	return BuiltinModule{Name: name, SHA256: digest(wasm), Wasm: wasm}
}

var echoTools = []tool{{name: "echo"}, {name: "search"}, {name: "host"}, {name: "log"}, {name: "loop"},
	{name: "alloc"}, {name: "big"}, {name: "garbage"}, {name: "panic"}, {name: "fail"}}

// echoModule is the echo guest packed with a memory.read manifest.
func echoModule(tb testing.TB, limits string) []byte {
	return pack(tb, guest(tb, "echo"), manifest(abi.Version, []string{abi.CapMemoryRead}, limits, echoTools...))
}

// logBuffer is a concurrency-safe slog sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testEngine is the engine newHost gives a host whose options set none
// (TestSandboxUnderTheInterpreter sets it).
var testEngine string

func newHost(tb testing.TB, opt Options) (*Host, *logBuffer) {
	tb.Helper()
	logs := &logBuffer{}
	if opt.Reader == nil {
		opt.Reader = newFakeReader()
	}
	if opt.CacheDir == "" {
		opt.CacheDir = cacheDir
	}
	if opt.Engine == "" {
		opt.Engine = testEngine
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h, err := New(context.Background(), opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(context.Background()) })
	return h, logs
}

// fakeReader is a small in-memory Reader for unit tests.
type fakeReader struct {
	mu     sync.Mutex
	chunks []abi.ChunkHit
	calls  map[string]int
	fail   error
}

func newFakeReader() *fakeReader {
	r := &fakeReader{calls: map[string]int{}}
	for i := 0; i < 30; i++ {
		r.chunks = append(r.chunks, abi.ChunkHit{
			ID: fmt.Sprintf("%032x", i+1), SourceKind: "email", SourceID: fmt.Sprintf("thread-%d", i%3),
			TimestampMS: int64(1700000000000 + i), Snippet: fmt.Sprintf("budget meeting number %d", i), Score: float64(30 - i), Seq: i,
		})
	}
	return r
}

func (r *fakeReader) count(fn string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[fn]++
	return r.fail
}

func (r *fakeReader) Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error) {
	if err := r.count("search"); err != nil {
		return nil, err
	}
	if req.K < 1 || req.K > 50 {
		return nil, fmt.Errorf("%w: k must be between 1 and 50, got %d", memtree.ErrInvalid, req.K)
	}
	var out []abi.ChunkHit
	for _, c := range r.chunks {
		if strings.Contains(c.Snippet, req.Query) && len(out) < req.K {
			out = append(out, c)
		}
	}
	return &abi.SearchResult{Chunks: out}, nil
}

func (r *fakeReader) Recall(ctx context.Context, req abi.RecallRequest) (*abi.RecallResult, error) {
	if err := r.count("recall"); err != nil {
		return nil, err
	}
	return &abi.RecallResult{Chunks: r.chunks[:min(req.K, len(r.chunks))], Mode: abi.ModeLexical}, nil
}

func (r *fakeReader) GetChunk(ctx context.Context, req abi.ChunkGetRequest) (*abi.ChunkResult, error) {
	if err := r.count("get"); err != nil {
		return nil, err
	}
	for _, c := range r.chunks {
		if c.ID == req.ID {
			return &abi.ChunkResult{Chunk: abi.Chunk{ID: c.ID, SourceKind: c.SourceKind, SourceID: c.SourceID, Text: "full text of " + c.Snippet}}, nil
		}
	}
	return nil, fmt.Errorf("%w: no chunk has id %q", memtree.ErrNotFound, req.ID)
}

func (r *fakeReader) ListChunks(ctx context.Context, req abi.ChunksListRequest) (*abi.ListResult, error) {
	if err := r.count("list"); err != nil {
		return nil, err
	}
	return &abi.ListResult{Chunks: r.chunks[:min(req.K, len(r.chunks))], Total: len(r.chunks)}, nil
}

func (r *fakeReader) TopEntities(ctx context.Context, req abi.EntitiesTopRequest) (*abi.EntitiesResult, error) {
	if err := r.count("entities"); err != nil {
		return nil, err
	}
	return &abi.EntitiesResult{Entities: []abi.Entity{{EntityID: "person:alice", Kind: "person", Surface: "Alice", Count: 3}}}, nil
}

func (r *fakeReader) ListSources(ctx context.Context, req abi.SourcesListRequest) (*abi.SourcesResult, error) {
	if err := r.count("sources"); err != nil {
		return nil, err
	}
	return &abi.SourcesResult{Sources: []abi.Source{{SourceKind: "email", SourceID: "thread-0", DisplayName: "Thread 0", ChunkCount: 10}}}, nil
}

var errStoreDown = errors.New("database is locked")
