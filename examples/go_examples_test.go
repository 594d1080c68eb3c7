package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
)

// goExample is a Go-built example module: its package, manifest and tool.
type goExample struct {
	name, pkg, manifest, tool string
}

var goExamples = []goExample{
	{"timeline", "./examples/timeline", "timeline/tool.toml", "memory.timeline"},
	{"activity", "./examples/extism-activity", "extism-activity/tool.toml", "memory.activity"},
}

// buildPacked builds a Go example as a wasip1 module and packs its manifest.
func buildPacked(t *testing.T, e goExample, dir string) []byte {
	t.Helper()
	raw := filepath.Join(dir, e.name+".raw.wasm")
	buildGo(t, e.pkg, raw, true)
	code, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(e.manifest)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := wasmbin.SetCustomSection(code, policy.ManifestSection, man)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestGoExamples builds the Go SDK and Extism PDK examples, audits them (golden JSON
// with the build-dependent digest and size blanked) and runs them in a real runtime
// over a real store.
func TestGoExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two Go wasm modules; run without -short")
	}
	ctx := context.Background()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	os.Mkdir(tools, 0o755)
	var pol strings.Builder
	sizes := map[string]int{}
	for _, e := range goExamples {
		mod := buildPacked(t, e, dir)
		sizes[e.name] = len(mod)
		os.WriteFile(filepath.Join(tools, e.name+".wasm"), mod, 0o644)
		fmt.Fprintf(&pol, "[[module]]\nfile = %q\nsha256 = %q\ngrant = [\"memory.read\"]\n", e.name+".wasm", sum(mod))

		// Audit: would load under a policy that pins it; JSON golden without digests.
		p, _ := policy.Parse([]byte(fmt.Sprintf("[[module]]\nfile = %q\nsha256 = %q\ngrant = [\"memory.read\"]\n", e.name+".wasm", sum(mod))), "policy.toml")
		rep, err := toolaudit.Audit(mod, toolaudit.Options{Name: e.name + ".wasm", Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode() != toolaudit.ExitWouldLoad {
			t.Errorf("%s: audit refuses it: %q", e.name, rep.Verdict.Reasons)
		}
		rep.SHA256, rep.Size, rep.Signature.Digest = "<build-dependent>", 0, "<build-dependent>"
		if rep.Producer == nil || len(rep.Producer.Language) == 0 || rep.Producer.Language[0].Name != "Go" {
			t.Errorf("%s: the audit does not name Go from the producers section: %+v", e.name, rep.Producer)
		} else { // the Go version is the toolchain's
			for _, ps := range [][]wasmbin.Producer{rep.Producer.Language, rep.Producer.ProcessedBy} {
				for i := range ps {
					ps[i].Version = "<build-dependent>"
				}
			}
		}
		var buf bytes.Buffer
		rep.WriteJSON(&buf)
		golden := filepath.Join("testdata", e.name+".audit.golden")
		if *update {
			os.MkdirAll("testdata", 0o755)
			os.WriteFile(golden, buf.Bytes(), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs (run `go test ./examples -run TestGoExamples -update` if intended):\n%s", golden, buf.String())
		}
	}
	t.Logf("packed sizes: timeline %d bytes, activity (Extism) %d bytes", sizes["timeline"], sizes["activity"])

	// A store where alice appears in three months.
	storePath := filepath.Join(dir, "chunks.db")
	w, err := memtree.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []memtree.MessageInput
	for i, m := range []time.Month{time.January, time.March, time.March} {
		msgs = append(msgs, memtree.MessageInput{
			Ref: fmt.Sprintf("m%d@example.com", i), Author: "Alice", AuthorAddr: "alice@example.com", To: []string{"bob@example.com"},
			Subject: "Budget", TimestampMS: time.Date(2026, m, 10+i, 9, 0, 0, 0, time.UTC).UnixMilli(),
			Text: fmt.Sprintf("Message %d about the quarterly budget review and the numbers we still need.", i),
		})
	}
	if _, err := w.Ingest(ctx, memtree.SourceInput{Kind: "email", SourceID: "email:budget", Title: "Budget", Provider: "eml", Messages: msgs, Origin: "test"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	store, err := memtree.OpenReadOnly(storePath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := policy.Parse([]byte(pol.String()), "policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	host, err := runtime.New(ctx, runtime.Options{Reader: memory.Default(store), ToolsDir: tools, Policy: p, CacheDir: filepath.Join(os.TempDir(), "openhuman-examples-test-cache", "wazero")})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(ctx)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := host.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range host.Status() {
		if st.State != runtime.StateReady {
			t.Fatalf("%s: %s %s", st.Module.Name, st.State, st.Error)
		}
	}

	out, err := host.Call(ctx, runtime.Call{Tool: "memory.timeline", Arguments: []byte(`{"entity":"email:alice@example.com","k":2}`)})
	if err != nil || out.ToolError != nil {
		t.Fatalf("memory.timeline: %v %+v", err, out)
	}
	var tl struct {
		Total  int
		Months []struct {
			Month string
			Count int
		}
		Chunks []struct {
			TimestampMS int64 `json:"timestamp_ms"`
		}
	}
	json.Unmarshal(out.Result, &tl)
	if tl.Total < 1 || len(tl.Months) == 0 || len(tl.Chunks) == 0 || len(tl.Chunks) > 2 {
		t.Fatalf("memory.timeline result: %s", out.Result)
	}
	for i := 1; i < len(tl.Chunks); i++ {
		if tl.Chunks[i].TimestampMS < tl.Chunks[i-1].TimestampMS {
			t.Errorf("timeline not in date order: %s", out.Result)
		}
	}
	out, err = host.Call(ctx, runtime.Call{Tool: "memory.activity", Arguments: []byte(`{"entity":"email:alice@example.com"}`)})
	if err != nil || out.ToolError != nil {
		t.Fatalf("memory.activity: %v %+v", err, out)
	}
	var act struct {
		Total, Counted int
		Months         []struct{ Month string }
	}
	json.Unmarshal(out.Result, &act)
	if act.Total != tl.Total || act.Counted != act.Total || len(act.Months) != len(tl.Months) {
		t.Errorf("activity %s disagrees with timeline %s", out.Result, func() string { b, _ := json.Marshal(tl); return string(b) }())
	}
	if out.Usage.HostCalls["chunks_list"] < 1 {
		t.Errorf("activity made no chunks_list call: %+v", out.Usage)
	}
	out, err = host.Call(ctx, runtime.Call{Tool: "memory.activity", Arguments: []byte(`{"entity":"nobody"}`)})
	if err != nil || out.ToolError == nil || out.ToolError.Code != "invalid_params" {
		t.Errorf("activity bad entity: %v %+v", err, out)
	}
	b, _ := json.Marshal(tl)
	t.Logf("memory.timeline for alice: %s", b)
}
