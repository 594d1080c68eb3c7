package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var sixTools = []string{"memory.search", "memory.recall", "tree.read_chunk", "tree.browse", "tree.top_entities", "tree.list_sources"}

var smokeInput = lines(
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
)

func toolNames(t *testing.T, msg map[string]any) []string {
	t.Helper()
	res, ok := msg["result"].(map[string]any)
	if !ok {
		t.Fatalf("tools/list answer has no result: %v", msg)
	}
	var names []string
	for _, tl := range res["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

func checkSmoke(t *testing.T, got []map[string]any, wantTools []string) {
	t.Helper()
	if len(got) != 2 {
		t.Fatalf("%d lines on stdout, want exactly 2: %v", len(got), got)
	}
	if got[0]["id"] != 1.0 || got[1]["id"] != 2.0 {
		t.Fatalf("ids %v and %v, want 1 and 2", got[0]["id"], got[1]["id"])
	}
	res := got[0]["result"].(map[string]any)
	if _, ok := res["capabilities"].(map[string]any)["tools"].(map[string]any); !ok {
		t.Errorf("initialize result lacks capabilities.tools: %v", res)
	}
	if name := res["serverInfo"].(map[string]any)["name"]; name != "openhuman-core" {
		t.Errorf("serverInfo.name = %v", name)
	}
	if v, _ := res["serverInfo"].(map[string]any)["version"].(string); v == "" {
		t.Error("serverInfo.version is empty")
	}
	if res["protocolVersion"] != "2025-06-18" {
		t.Errorf("protocolVersion = %v", res["protocolVersion"])
	}
	if names := toolNames(t, got[1]); strings.Join(names, ",") != strings.Join(wantTools, ",") {
		t.Errorf("tools = %v, want %v", names, wantTools)
	}
}

func TestSmokeTest(t *testing.T) {
	e := newEnv(t)
	got, _ := runRaw(t, e, smokeInput)
	checkSmoke(t, got, sixTools)
	// Tool annotations and schemas as DESIGN §10 says.
	for _, tl := range got[1]["result"].(map[string]any)["tools"].([]any) {
		m := tl.(map[string]any)
		ann := m["annotations"].(map[string]any)
		if ann["readOnlyHint"] != true || ann["openWorldHint"] != false {
			t.Errorf("%s annotations %v", m["name"], ann)
		}
		in := m["inputSchema"].(map[string]any)
		if in["type"] != "object" || in["additionalProperties"] != false {
			t.Errorf("%s inputSchema %v", m["name"], in)
		}
		if m["outputSchema"] == nil || m["title"] == "" || m["description"] == "" {
			t.Errorf("%s lacks outputSchema/title/description", m["name"])
		}
	}
}

func TestSmokeTestLoop(t *testing.T) {
	e := newEnv(t)
	const runs = 50
	start := time.Now()
	for i := range runs {
		got, stderr := runRaw(t, e, smokeInput)
		if len(got) != 2 {
			t.Fatalf("run %d: %d lines, want 2\nstderr:\n%s", i, len(got), stderr)
		}
		checkSmoke(t, got, sixTools)
	}
	t.Logf("%d smoke runs: 2 lines every time, %.2f s per run", runs, time.Since(start).Seconds()/runs)
}

func TestSlowCallAsLastLine(t *testing.T) {
	e := storeEnv(t)
	e.cache = t.TempDir() // cold compilation cache: the call waits for its module to compile
	start := time.Now()
	got, stderr := runRaw(t, e, smokeInput+lines(callLine("slow-1", "memory.search", `{"query":"phoenix launch"}`)))
	ids := byID(got)
	if len(got) != 3 || ids["slow-1"] == nil {
		t.Fatalf("got %d lines %v, want the tools/call answered too\nstderr:\n%s", len(got), got, stderr)
	}
	res := ids["slow-1"]["result"].(map[string]any)
	if res["isError"] == true {
		t.Fatalf("slow call failed: %v", res)
	}
	t.Logf("cold-cache tools/call as the last line before EOF answered; process ran %s", time.Since(start).Round(time.Millisecond))
}

func TestSearXNGListedWhenEnabled(t *testing.T) {
	e := newEnv(t).with("OPENHUMAN_SEARXNG_ENABLED=true")
	got, _ := runRaw(t, e, smokeInput)
	checkSmoke(t, got, append(append([]string(nil), sixTools...), "searxng_search"))
	for _, tl := range got[1]["result"].(map[string]any)["tools"].([]any) {
		if m := tl.(map[string]any); m["name"] == "searxng_search" {
			if ann := m["annotations"].(map[string]any); ann["openWorldHint"] != true || ann["readOnlyHint"] != true {
				t.Errorf("searxng_search annotations %v", ann)
			}
		}
	}
	if ins := got[0]["result"].(map[string]any)["instructions"].(string); !strings.Contains(ins, "searxng_search") {
		t.Errorf("instructions do not mention searxng_search: %q", ins)
	}

	// Disabled: not listed, and calling it is a JSON-RPC error -32602.
	off := newEnv(t).with("OPENHUMAN_SEARXNG_ENABLED=off")
	got, _ = runRaw(t, off, smokeInput+lines(callLine(3, "searxng_search", `{"query":"x"}`)))
	if names := toolNames(t, byID(got)["2"]); strings.Contains(strings.Join(names, ","), "searxng") {
		t.Errorf("searxng_search listed while disabled: %v", names)
	}
	if e := byID(got)["3"]["error"].(map[string]any); e["code"] != -32602.0 || !strings.Contains(fmt.Sprint(e["message"]), "unknown tool") {
		t.Errorf("disabled searxng_search call: %v", e)
	}

	// An invalid environment value is reported on stderr and ignored.
	bad := newEnv(t).with("OPENHUMAN_SEARXNG_ENABLED=maybe")
	got, stderr := runRaw(t, bad, smokeInput)
	checkSmoke(t, got, sixTools)
	if !strings.Contains(stderr, "OPENHUMAN_SEARXNG_ENABLED") {
		t.Errorf("no warning about the invalid value on stderr:\n%s", stderr)
	}
}

func TestHelpAndArgs(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"mcp", "--help"}, {"mcp", "--verbose", "--help"}} {
		cmd := e.command(context.Background(), args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if stderr.Len() != 0 || !strings.Contains(stdout.String(), "openhuman-core mcp") {
			t.Errorf("%v: help goes to stdout (it starts no server), nothing to stderr; stderr %q", args, stderr.String())
		}
	}
	cmd := e.command(context.Background(), "mcp", "extra")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("mcp with an argument succeeded: %s", out)
	}
	// --config names a file that must exist.
	cmd = e.command(context.Background(), "mcp", "--config", filepath.Join(e.home, "missing.toml"))
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "missing.toml") {
		t.Errorf("missing --config file: err=%v out=%s", err, out)
	}
	// --config file with [searxng] enables the seventh tool; env still wins.
	cfg := filepath.Join(e.home, "alt.toml")
	os.WriteFile(cfg, []byte("[searxng]\nenabled = true\nbase_url = \"http://127.0.0.1:9\"\n"), 0o600)
	got, _ := runRaw(t, e, smokeInput, "--config", cfg)
	checkSmoke(t, got, append(append([]string(nil), sixTools...), "searxng_search"))
	got, _ = runRaw(t, e.with("OPENHUMAN_SEARXNG_ENABLED=false"), smokeInput, "--config", cfg)
	checkSmoke(t, got, sixTools)
}

func TestHostileInput(t *testing.T) {
	e := newEnv(t)
	ls := startLive(t, e)
	type tc struct {
		name, line string
		wantID     any
		wantCode   float64
	}
	before := []tc{{"tools/call before initialize", callLine("early", "memory.search", `{"query":"x"}`), "early", -32600}}
	after := []tc{
		{"invalid JSON", `{not-json`, nil, -32700},
		{"a non-object message", `[1,2,3]`, nil, -32600},
		{"a string message", `"hello"`, nil, -32600},
		{"a 2 MB line", `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`, "big", -32600}, // the id is read from the line's first 4 KiB
		{"a request with a missing method", `{"jsonrpc":"2.0","id":"nomethod"}`, "nomethod", -32600},
		{"a string where params must be an object", `{"jsonrpc":"2.0","id":"strparams","method":"tools/call","params":"memory.search"}`, "strparams", -32602},
		{"non-UTF-8 bytes", "{\"jsonrpc\":\"2.0\",\"id\":\"utf\",\"method\":\"ping\",\"params\":{\"x\":\"\xc3\x28\"}}", nil, -32700},
		{"a fractional id", `{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, nil, -32600},
		{"an unknown method", `{"jsonrpc":"2.0","id":"um","method":"no/such"}`, "um", -32601},
		{"arguments that are a string", callLine("argstr", "memory.search", `"phoenix"`), "argstr", 0},
	}
	check := func(c tc, i int) {
		ls.send(c.line)
		m := ls.next()
		errObj, _ := m["error"].(map[string]any)
		if c.wantCode == 0 {
			res, _ := m["result"].(map[string]any)
			if m["id"] != c.wantID || res["isError"] != true {
				t.Errorf("%s: got %v", c.name, m)
			}
			t.Logf("%-42s → isError result: %v", c.name, res["content"])
		} else {
			if m["id"] != c.wantID || errObj["code"] != c.wantCode {
				t.Errorf("%s: got %v, want id %v code %v", c.name, m, c.wantID, c.wantCode)
			}
			t.Logf("%-42s → id %v error %v %v: %v", c.name, m["id"], errObj["code"], errObj["message"], errObj["data"])
		}
		ls.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`, i))
		if p := ls.next(); p["id"] != fmt.Sprintf("ping-%d", i) || p["result"] == nil {
			t.Fatalf("%s: the session did not survive: %v", c.name, p)
		}
	}
	for i, c := range before {
		check(c, i)
	}
	ls.send(initLine(1, "hostile"))
	if m := ls.next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize after hostile input: %v", m)
	}
	ls.send(initialized)
	for i, c := range after {
		check(c, 100+i)
	}
	if err := ls.close(); err != nil {
		t.Errorf("exit after EOF: %v\nstderr:\n%s", err, ls.errb.String())
	}
}

func TestProvenance(t *testing.T) {
	e := storeEnv(t)
	cases := []struct{ clientInfo, want string }{
		{`{"name":"Claude Desktop","version":"1"}`, "mcp:claude-desktop"},
		{`{"name":"Cursor","version":"1"}`, "mcp:cursor"},
		{`{"name":"  Zed: Nightly  ","version":"1"}`, "mcp:zed-nightly"},
		{`{"name":"VS-Code__Insiders","version":"1"}`, "mcp:vs-code-insiders"},
		{`{"name":"会议记录","version":"1"}`, "mcp"},
		{`{"name":"","version":"1"}`, "mcp"},
		{``, "mcp"}, // clientInfo missing
	}
	prefix := fmt.Sprintf("prov-%d-", time.Now().UnixNano())
	want := map[string]string{}
	for i, c := range cases {
		params := `"protocolVersion":"2025-06-18","capabilities":{}`
		if c.clientInfo != "" {
			params += `,"clientInfo":` + c.clientInfo
		}
		id := fmt.Sprintf("%s%d", prefix, i)
		want[id] = c.want
		got, stderr := runRaw(t, e, lines(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{`+params+`}}`,
			initialized,
			// A second initialize with another name keeps the first label.
			`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"Someone Else","version":"2"}}}`,
			callLine(id, "tree.list_sources", `{}`)))
		ids := byID(got)
		if len(got) != 3 || ids[id] == nil || ids["2"]["result"] == nil {
			t.Fatalf("%s: got %v\nstderr:\n%s", c.clientInfo, got, stderr)
		}
		if pv := ids["2"]["result"].(map[string]any)["protocolVersion"]; pv != "2025-06-18" {
			t.Errorf("second initialize renegotiated the version: %v", pv)
		}
	}
	lines := auditFor(t, e, prefix)
	if len(lines) != len(cases) {
		t.Fatalf("%d audit lines for this test, want %d", len(lines), len(cases))
	}
	for _, l := range lines {
		id := l["request_id"].(string)
		if l["session"] != want[id] {
			t.Errorf("audit %s: session %v, want %s", id, l["session"], want[id])
		}
		if l["tool"] != "tree.list_sources" || l["outcome"] != "ok" || l["module_sha256"] == "" {
			t.Errorf("audit line %v", l)
		}
		if hc := l["capabilities"].(map[string]any)["host_calls"].(map[string]any); hc["sources_list"] != 1.0 {
			t.Errorf("audit capabilities %v", l["capabilities"])
		}
	}
}

func TestAuditLogUnwritable(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.workspace, 0o700); err != nil {
		t.Fatal(err)
	}
	// A regular file where the audit directory should be: every audit write fails.
	if err := os.WriteFile(filepath.Join(e.workspace, "audit"), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, stderr := runRaw(t, e, smokeInput+lines(
		callLine("a1", "tree.list_sources", `{}`),
		callLine("a2", "memory.search", `{"query":"x"}`),
		callLine("a3", "memory.search", `{"query":"x","k":0}`)))
	ids := byID(got)
	for _, id := range []string{"a1", "a2", "a3"} {
		if ids[id] == nil || ids[id]["result"] == nil {
			t.Errorf("call %s not answered while the audit log is unwritable: %v", id, ids[id])
		}
	}
	if n := strings.Count(stderr, "cannot write the audit log"); n != 1 {
		t.Errorf("%d audit warnings on stderr, want exactly 1:\n%s", n, stderr)
	}
}
