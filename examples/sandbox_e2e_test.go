//go:build linux

package examples

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

// procKB reads one "Name: N kB" field of /proc/<pid>/status.
func procKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestHostileNestingE2E (issue 29, findings 1 and 3) runs `mcp` with a module
// whose oh_alloc re-enters the host while a reply is delivered and a module of
// 10,000 globals, both pinned with memory.read and memory_mib = 4: each call
// ends within its 1 s deadline plus 1 s, the nesting one with the reason a
// reviewer reads, and mcp's resident size grows by less than 64 MiB + 4 MiB
// over the calls. On 3656465 the nesting call recursed past its deadline to
// gigabytes.
func TestHostileNestingE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short")
	}
	work := t.TempDir()
	bin := os.Getenv("OPENHUMAN_E2E_BINARY")
	if bin == "" {
		bin = filepath.Join(work, "openhuman-core")
		buildGo(t, "./cmd/openhuman-core", bin, false)
	}
	home := filepath.Join(work, "home")
	tools := filepath.Join(home, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	mods := map[string][]byte{"nest": wasmgen.Nesting(wasmgen.FromAllocReply), "globals": wasmgen.Entries(wasmgen.ShapeGlobals, policy.MaxGlobals)}
	var pol strings.Builder
	for name, raw := range mods {
		man := fmt.Sprintf("abi = \"openhuman/1\"\ncapabilities = [\"memory.read\"]\n[[tool]]\nname = %q\ntitle = \"t\"\ndescription = \"hostile\"\ninput_schema = '''{\"type\":\"object\"}'''\noutput_schema = '''{\"type\":\"object\"}'''\nannotations = { readOnlyHint = true, openWorldHint = false }\n[limits]\ntimeout_ms = 1000\nmemory_mib = 4\n", name)
		mod, err := wasmbin.SetCustomSection(raw, policy.ManifestSection, []byte(man))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tools, name+".wasm"), mod, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&pol, "[[module]]\nfile = %q\nsha256 = %q\ngrant = [\"memory.read\"]\n\n", name+".wasm", sum(mod))
	}
	if err := os.WriteFile(filepath.Join(home, "policy.toml"), []byte(pol.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "OPENHUMAN_HOME="+home, "OPENHUMAN_WORKSPACE="+filepath.Join(home, "workspace"),
		"XDG_CACHE_HOME="+filepath.Join(work, "cache"), "OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=")
	c := startMCP(t, bin, env)
	c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "mcp-inspector", "version": "0"}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	c.toolNames()
	pid := c.cmd.Process.Pid
	// Let both compile and warm (the first call of each waits for it otherwise).
	for _, name := range []string{"globals", "nest"} {
		c.request("tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
	}
	before := procKB(t, pid, "VmRSS")
	for i := 0; i < 5; i++ {
		for _, name := range []string{"nest", "globals"} {
			start := time.Now()
			r := c.request("tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s took %v; its deadline is 1 s", name, d)
			}
			if name == "nest" && !strings.Contains(fmt.Sprint(r), "isError:true") && r["error"] == nil {
				t.Errorf("nest: %v", r)
			}
		}
	}
	after := procKB(t, pid, "VmRSS")
	t.Logf("VmRSS %d kB before 10 hostile calls, %d kB after; VmHWM %d kB", before, after, procKB(t, pid, "VmHWM"))
	if grew := after - before; grew > (64+4)<<10 {
		t.Errorf("VmRSS grew by %d kB over 10 calls", grew)
	}
	if !strings.Contains(c.stderr.String(), "called host function memory_search from oh_alloc (while the host delivered a host function's reply)") {
		t.Errorf("the reason is not in the server log:\n%.3000s", c.stderr.String())
	}
	closeAndWait(t, c, 30*time.Second, "mcp after hostile calls")
}
