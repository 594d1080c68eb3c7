package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/policy"
)

// helloVersion writes examples/c-hello/hello.wasm without its manifest and a
// tool.toml whose description says which version it is, into dir.
func helloVersion(t *testing.T, dir, version string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile("../../examples/c-hello/hello.toml")
	if err != nil {
		t.Fatal(err)
	}
	man = bytes.Replace(man, []byte(`description = "Greets the caller`), []byte(`description = "`+version+`: Greets the caller`), 1)
	if err := os.WriteFile(filepath.Join(dir, "tool.toml"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../examples/c-hello/hello.wasm")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello.wasm")
	if err := os.WriteFile(out, mod, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestToolsInstallPinsAndUpdates(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	f := installFlags{policyFile: filepath.Join(dir, "home", "policy.toml"), toolsDir: filepath.Join(dir, "home", "tools")}
	// Fresh: the folder and the policy are made, the pin grants what it asks.
	// (hello.wasm carries a manifest; --manifest packs tool.toml over it.)
	v1 := helloVersion(t, filepath.Join(dir, "v1"), "v1")
	f.manifest = filepath.Join(dir, "v1", "tool.toml")
	var out bytes.Buffer
	if err := runInstall(&out, quiet, v1, f); err != nil {
		t.Fatal(err)
	}
	installed, _ := os.ReadFile(filepath.Join(f.toolsDir, "hello.wasm"))
	pol, err := policy.Load(f.policyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Modules) != 1 || pol.Modules[0].SHA256 != fileSHA256(installed) || strings.Join(pol.Modules[0].Grant, ",") != "memory.read" {
		t.Fatalf("policy after install: %+v", pol.Modules)
	}
	if fi, _ := os.Stat(f.policyFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("new policy mode %v, want 0600", fi.Mode().Perm())
	}
	if !strings.HasPrefix(out.String(), "installed ") {
		t.Errorf("output: %s", out.String())
	}
	// The operator narrows the agents and adds a comment and a [trust] table.
	text, _ := os.ReadFile(f.policyFile)
	text = bytes.Replace(text, []byte("grant = [\"memory.read\"]\n"), []byte("grant = [\"memory.read\"]\nallowed_agents = [\"mcp:*\"]\ntimeout_ms = 1500\n"), 1)
	text = append([]byte("# my policy\n"), text...)
	text = append(text, []byte("\n[trust]\nrequire_signature = false\n")...)
	os.WriteFile(f.policyFile, text, 0o600)
	// Update: one pin, the new digest, the operator's settings kept.
	v2 := helloVersion(t, filepath.Join(dir, "v2"), "v2")
	f.manifest = filepath.Join(dir, "v2", "tool.toml")
	out.Reset()
	if err := runInstall(&out, quiet, v2, f); err != nil {
		t.Fatal(err)
	}
	installed, _ = os.ReadFile(filepath.Join(f.toolsDir, "hello.wasm"))
	pol, err = policy.Load(f.policyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Modules) != 1 || pol.Modules[0].SHA256 != fileSHA256(installed) || pol.Modules[0].AllowedAgents[0] != "mcp:*" || pol.Modules[0].TimeoutMS != 1500 {
		t.Fatalf("policy after update: %+v %+v", pol.Modules, pol.Trust)
	}
	text, _ = os.ReadFile(f.policyFile)
	if !bytes.HasPrefix(text, []byte("# my policy\n")) || !bytes.Contains(text, []byte("[trust]\nrequire_signature = false")) {
		t.Errorf("the update lost the operator's text:\n%s", text)
	}
	if !strings.HasPrefix(out.String(), "updated ") {
		t.Errorf("output: %s", out.String())
	}
	// An update that asks for more is refused until --grant-new.
	v3 := helloVersion(t, filepath.Join(dir, "v3"), "v3")
	man3, _ := os.ReadFile(filepath.Join(dir, "v3", "tool.toml"))
	man3 = bytes.Replace(man3, []byte(`capabilities = ["memory.read"]`), []byte(`capabilities = ["memory.read", "web.searxng"]`), 1)
	os.WriteFile(filepath.Join(dir, "v3", "tool.toml"), man3, 0o644)
	f.manifest = filepath.Join(dir, "v3", "tool.toml")
	err = runInstall(&out, quiet, v3, f)
	if err == nil || !strings.Contains(err.Error(), "now requests web.searxng") || !strings.Contains(err.Error(), "--grant-new") {
		t.Errorf("new capability: %v", err)
	}
	// Another tool under the same file name (issue 39, finding 9): refused
	// without --replace, nothing changed; with it, nothing of the old pin
	// (agents, limits) carries over.
	more := filepath.Join(dir, "more", "hello.wasm")
	os.MkdirAll(filepath.Dir(more), 0o755)
	ungranted, _ := os.ReadFile("../../examples/hostile/ungranted.wasm")
	os.WriteFile(more, ungranted, 0o644)
	f.manifest = ""
	before, _ := os.ReadFile(f.policyFile)
	err = runInstall(&out, quiet, more, f)
	if exitCodeOf(err) != 2 || !strings.Contains(err.Error(), "holds another tool (tools c.hello), not hostile.ungranted") || !strings.Contains(err.Error(), "--replace") {
		t.Errorf("another tool, same file name: exit %d: %v", exitCodeOf(err), err)
	}
	if after, _ := os.ReadFile(f.policyFile); !bytes.Equal(before, after) {
		t.Error("a refused replacement changed the policy")
	}
	if cur, _ := os.ReadFile(filepath.Join(f.toolsDir, "hello.wasm")); !bytes.Equal(cur, installed) {
		t.Error("a refused replacement changed the installed module")
	}
	f.replace = true
	out.Reset()
	if err := runInstall(&out, quiet, more, f); err != nil {
		t.Fatalf("--replace: %v", err)
	}
	f.replace = false
	pol, err = policy.Load(f.policyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Modules) != 1 || slices.Contains(pol.Modules[0].AllowedAgents, "mcp:*") || pol.Modules[0].TimeoutMS != 0 || strings.Join(pol.Modules[0].Grant, ",") != "web.searxng" {
		t.Errorf("after --replace: %+v; want the new tool's own pin, nothing carried over", pol.Modules)
	}
	if !strings.Contains(out.String(), "replacing hello.wasm (tools c.hello)") {
		t.Errorf("--replace output: %s", out.String())
	}
	// Never loadable: refused with exit 3; nothing changes.
	before, _ = os.ReadFile(f.policyFile)
	f.manifest = ""
	err = runInstall(&out, quiet, "../../examples/hostile/path_open.wasm", f)
	if exitCodeOf(err) != 3 || !strings.Contains(err.Error(), "path_open") {
		t.Errorf("path_open: exit %d: %v", exitCodeOf(err), err)
	}
	after, _ := os.ReadFile(f.policyFile)
	if !bytes.Equal(before, after) {
		t.Error("a refused install changed the policy")
	}
	if _, err := os.Stat(filepath.Join(f.toolsDir, "path_open.wasm")); err == nil {
		t.Error("a refused install copied the module")
	}
}

// TestToolsInstallWhileServing: a running `openhuman-core mcp` and an official
// go-sdk client listing tools without pause while `tools install` updates the
// served module: every listing has the tool, and the new version is served.
func TestToolsInstallWhileServing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary as an MCP server; run without -short")
	}
	e := newCLIEnv(t)
	dir := t.TempDir()
	v1 := helloVersion(t, filepath.Join(dir, "v1"), "v1")
	if out, errOut, code := e.run("", "tools", "install", v1, "--manifest", filepath.Join(dir, "v1", "tool.toml")); code != 0 {
		t.Fatalf("install v1: exit %d\n%s%s", code, out, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.Command(e.bin, "mcp", "--verbose")
	cmd.Env = e.environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-inspector", Version: "1"}, nil) // the spec's names
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	description := func() (string, bool, error) {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return "", false, err
		}
		for _, tl := range res.Tools {
			if tl.Name == "c.hello" {
				return tl.Description, true, nil
			}
		}
		return "", false, nil
	}
	waitFor := func(prefix string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			d, ok, err := description()
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if ok && strings.HasPrefix(d, prefix) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("c.hello %q never served\nstderr:\n%s", prefix, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("v1:")

	var mu sync.Mutex
	lists, missing := 0, 0
	var listErr error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, ok, err := description()
			mu.Lock()
			lists++
			if !ok {
				missing++
			}
			if err != nil && listErr == nil {
				listErr = err
			}
			mu.Unlock()
		}
	}()
	v2 := helloVersion(t, filepath.Join(dir, "v2"), "v2")
	if out, errOut, code := e.run("", "tools", "install", v2, "--manifest", filepath.Join(dir, "v2", "tool.toml")); code != 0 || !strings.HasPrefix(out, "updated ") {
		close(stop)
		<-done
		t.Fatalf("install v2: exit %d\n%s%s", code, out, errOut)
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()
	waitFor("v2:")
	// A few more listings after the swap, then stop.
	mu.Lock()
	seen := lists
	mu.Unlock()
	for {
		mu.Lock()
		n := lists
		mu.Unlock()
		if n >= seen+20 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if listErr != nil {
		t.Errorf("tools/list failed during the update: %v", listErr)
	}
	t.Logf("%d tools/list during the update", lists)
	if missing > 0 {
		t.Errorf("%d of %d listings during the update lacked c.hello\nstderr:\n%s", missing, lists, stderr.String())
	}
}

// TestToolsCallShowsSchemaViolation: `tools call` on a third-party tool whose
// result breaks its output_schema prints the result, the JSON path of the
// violation and the host calls, and exits 1.
func TestToolsCallShowsSchemaViolation(t *testing.T) {
	e := newCLIEnv(t)
	dir := filepath.Join(t.TempDir(), "v")
	mod := helloVersion(t, dir, "bad")
	man, _ := os.ReadFile(filepath.Join(dir, "tool.toml"))
	man = bytes.Replace(man, []byte(`"sources":{"type":"integer"}`), []byte(`"sources":{"type":"string"}`), 1)
	os.WriteFile(filepath.Join(dir, "tool.toml"), man, 0o644)
	if out, errOut, code := e.run("", "tools", "install", mod, "--manifest", filepath.Join(dir, "tool.toml")); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := e.run("", "tools", "call", "c.hello", `{"name":"Ada"}`)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{`"greeting": "Hello, Ada!`, `"sources": 0`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"output_schema: DOES NOT MATCH at $.sources", "host calls: sources_list ×1", "the author of hello.wasm must make the result match"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if _, errOut, code := e.run("", "tools", "call", "nope.tool"); code != 2 || !strings.Contains(errOut, "no loaded module serves tool") {
		t.Errorf("unknown tool: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := e.run("", "tools", "call", "c.hello", `[1]`); code != 2 || !strings.Contains(errOut, "one JSON object") {
		t.Errorf("bad arguments: exit %d\n%s", code, errOut)
	}
}

// TestToolsInstallSigns: --sign packs first, then signs; the installed file is
// the signed one and its pin is the signed bytes' digest.
func TestToolsInstallSigns(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	key := filepath.Join(dir, "keys", "signing.key")
	if err := runKeygen(io.Discard, key, false); err != nil {
		t.Fatal(err)
	}
	src := helloVersion(t, filepath.Join(dir, "src"), "signed")
	f := installFlags{manifest: filepath.Join(dir, "src", "tool.toml"), signKey: key,
		policyFile: filepath.Join(dir, "home", "policy.toml"), toolsDir: filepath.Join(dir, "home", "tools")}
	if err := runInstall(io.Discard, quiet, src, f); err != nil {
		t.Fatal(err)
	}
	installed, err := os.ReadFile(filepath.Join(f.toolsDir, "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := signature.Verify(installed, nil)
	if err != nil || st.State != signature.StateValid {
		t.Fatalf("installed module signature: %v %v", st, err)
	}
	man, err := policy.ReadManifest(installed)
	if err != nil || !strings.HasPrefix(man.Tools[0].Description, "signed:") {
		t.Fatalf("installed manifest: %v", err)
	}
	pol, _ := policy.Load(f.policyFile)
	if len(pol.Modules) != 1 || pol.Modules[0].SHA256 != fileSHA256(installed) {
		t.Errorf("pin: %+v", pol.Modules)
	}
	// Installing the same bytes again changes nothing.
	var out bytes.Buffer
	f.manifest, f.signKey = "", ""
	if err := runInstall(&out, quiet, filepath.Join(f.toolsDir, "hello.wasm"), f); err != nil || !strings.Contains(out.String(), "already installed") {
		t.Errorf("reinstall: %v\n%s", err, out.String())
	}
}
