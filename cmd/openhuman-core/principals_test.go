package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/mcpserver"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
)

// bearer adds a bearer token to every request of an HTTP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mintToken runs `tokens add` and returns the token, the last line of stdout.
func (e *cliEnv) mintToken(t *testing.T, name string, flags ...string) string {
	t.Helper()
	out, stderr, code := e.run("", append([]string{"tokens", "add", name}, flags...)...)
	if code != 0 {
		t.Fatalf("tokens add %s %v: exit %d\n%s", name, flags, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	tok := lines[len(lines)-1]
	if !strings.HasPrefix(tok, "ohp_") || len(tok) != 4+64 {
		t.Fatalf("tokens add: the last line is not a token:\n%s", out)
	}
	return tok
}

// rpcCall posts one JSON-RPC request to /rpc with token and returns the
// result, or the error message, and the HTTP status.
func rpcCall(t *testing.T, base, token, method string, params any) (json.RawMessage, string, int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, base+"/rpc", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /rpc %s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, string(raw), resp.StatusCode
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("POST /rpc %s: %v\n%s", method, err, raw)
	}
	if r.Error != nil {
		return nil, r.Error.Message, resp.StatusCode
	}
	return r.Result, "", resp.StatusCode
}

// scopeView is what one principal sees through the six memory tools.
type scopeView struct {
	searchKinds, browseKinds, sourceIDs, entityIDs, recallKinds []string
	browseTotal                                                 int
	readOther, readUnknown                                      string // the answers for another source's chunk id and an unknown one
}

// viewOf reads the tools' results (one JSON object each, by MCP tool name).
func viewOf(t *testing.T, call func(tool string, args map[string]any) (json.RawMessage, string), otherID, unknownID string) scopeView {
	t.Helper()
	var v scopeView
	var hits struct {
		Chunks []struct {
			ID         string `json:"id"`
			SourceKind string `json:"source_kind"`
		} `json:"chunks"`
		Total int `json:"total"`
	}
	get := func(tool string, args map[string]any, into any) {
		res, msg := call(tool, args)
		if msg != "" {
			t.Fatalf("%s %v: %s", tool, args, msg)
		}
		if err := json.Unmarshal(res, into); err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, res)
		}
	}
	get("memory.search", map[string]any{"query": "Alice Martin", "k": 20}, &hits)
	for _, c := range hits.Chunks {
		v.searchKinds = append(v.searchKinds, c.SourceKind)
	}
	hits.Chunks = nil
	get("memory.recall", map[string]any{"query": "what did Alice Martin say about brakes and the Lisbon hotel", "k": 20}, &hits)
	for _, c := range hits.Chunks {
		v.recallKinds = append(v.recallKinds, c.SourceKind)
	}
	hits.Chunks = nil
	get("tree.browse", map[string]any{"k": 50}, &hits)
	for _, c := range hits.Chunks {
		v.browseKinds = append(v.browseKinds, c.SourceKind)
	}
	v.browseTotal = hits.Total
	var srcs struct {
		Sources []struct {
			SourceID string `json:"source_id"`
		} `json:"sources"`
	}
	get("tree.list_sources", map[string]any{}, &srcs)
	for _, s := range srcs.Sources {
		v.sourceIDs = append(v.sourceIDs, s.SourceID)
	}
	var ents struct {
		Entities []struct {
			ID string `json:"entity_id"`
		} `json:"entities"`
	}
	get("tree.top_entities", map[string]any{"k": 50}, &ents)
	for _, e := range ents.Entities {
		v.entityIDs = append(v.entityIDs, e.ID)
	}
	var msg string
	if _, msg = call("tree.read_chunk", map[string]any{"id": otherID}); msg == "" {
		t.Fatalf("tree.read_chunk of another source's chunk %s answered it", otherID)
	}
	v.readOther = strings.ReplaceAll(msg, otherID, "<id>")
	if _, msg = call("tree.read_chunk", map[string]any{"id": unknownID}); msg == "" {
		t.Fatalf("tree.read_chunk of the unknown id %s answered", unknownID)
	}
	v.readUnknown = strings.ReplaceAll(msg, unknownID, "<id>")
	return v
}

// only reports whether every value of vs satisfies ok (and there is one).
func only(vs []string, ok func(string) bool) bool {
	for _, v := range vs {
		if !ok(v) {
			return false
		}
	}
	return len(vs) > 0
}

// rpcMethod is the /rpc method of an MCP tool.
var rpcMethod = map[string]string{
	"memory.search": "openhuman.memory_tree_search", "memory.recall": "openhuman.memory_tree_recall",
	"tree.read_chunk": "openhuman.memory_tree_get_chunk", "tree.browse": "openhuman.memory_tree_list_chunks",
	"tree.top_entities": "openhuman.memory_tree_top_entities", "tree.list_sources": "openhuman.memory_tree_list_sources",
}

// testPrincipalScopes is the acceptance of principals on one store backend
// (env selects it): a token allowed doc:* searches, recalls, browses, lists
// and reads only the documents over /mcp (the official Go SDK client) and /rpc;
// a mail chunk's id answers exactly as an unknown id; the operator token still
// reads everything; the audit log names the principal of every call; a revoked
// token is refused on both endpoints.
func testPrincipalScopes(t *testing.T, env ...string) {
	e := newCLIEnv(t)
	e.extra = append(e.extra, env...)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, stderr, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, stderr)
	}
	docs := e.mintToken(t, "docs-agent", "--allow", "doc:*")
	mailer := e.mintToken(t, "ana", "--allow", "kind:email")
	const operator = "operator-token-0123456789abcdef0123456789"
	base := e.serveProcess(t, operator)

	// A mail chunk's id, read with the operator token.
	res, msg, _ := rpcCall(t, base, operator, "openhuman.memory_tree_search", map[string]any{"query": "brake quote", "k": 5})
	if msg != "" {
		t.Fatalf("operator search: %s", msg)
	}
	var found struct {
		Chunks []struct {
			ID         string `json:"id"`
			SourceKind string `json:"source_kind"`
		} `json:"chunks"`
	}
	json.Unmarshal(res, &found)
	mailID := ""
	for _, c := range found.Chunks {
		if c.SourceKind == "email" {
			mailID = c.ID
		}
	}
	if mailID == "" {
		t.Fatalf("the operator finds no mail chunk for brake quote: %s", res)
	}
	const unknownID = "0123456789abcdef0123456789abcdef"

	ctx := context.Background()
	mcpSession := func(token string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "scope-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatalf("connect to /mcp: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	overMCP := func(cs *mcp.ClientSession) func(string, map[string]any) (json.RawMessage, string) {
		return func(tool string, args map[string]any) (json.RawMessage, string) {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				return nil, err.Error()
			}
			text := r.Content[0].(*mcp.TextContent).Text
			if r.IsError {
				return nil, text
			}
			return json.RawMessage(text), ""
		}
	}
	overRPC := func(token string) func(string, map[string]any) (json.RawMessage, string) {
		return func(tool string, args map[string]any) (json.RawMessage, string) {
			r, msg, _ := rpcCall(t, base, token, rpcMethod[tool], args)
			return r, msg
		}
	}
	isDoc := func(s string) bool { return s == "document" }
	for _, ep := range []struct {
		name string
		call func(string, map[string]any) (json.RawMessage, string)
	}{{"/mcp", overMCP(mcpSession(docs))}, {"/rpc", overRPC(docs)}} {
		v := viewOf(t, ep.call, mailID, unknownID)
		if !only(v.searchKinds, isDoc) || !only(v.recallKinds, isDoc) || !only(v.browseKinds, isDoc) {
			t.Errorf("%s, doc:* token: search %v, recall %v, browse %v: want documents only, at least one", ep.name, v.searchKinds, v.recallKinds, v.browseKinds)
		}
		if v.browseTotal != len(v.browseKinds) {
			t.Errorf("%s, doc:* token: browse total %d counts more than the %d document chunks", ep.name, v.browseTotal, len(v.browseKinds))
		}
		if !only(v.sourceIDs, func(s string) bool { return strings.HasPrefix(s, "doc:") }) {
			t.Errorf("%s, doc:* token: list_sources %v", ep.name, v.sourceIDs)
		}
		for _, id := range v.entityIDs {
			if strings.HasPrefix(id, "email:") {
				t.Errorf("%s, doc:* token: top_entities lists %s, said only in mail", ep.name, id)
			}
		}
		if v.readOther != v.readUnknown {
			t.Errorf("%s, doc:* token: a mail chunk's id answers\n  %s\nbut an unknown id\n  %s", ep.name, v.readOther, v.readUnknown)
		}
	}
	// The MCP resource of a mail chunk reads as that of an unknown chunk.
	docsSession := mcpSession(docs)
	_, errOther := docsSession.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ChunkURI(mailID)})
	_, errUnknown := docsSession.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ChunkURI(unknownID)})
	if errOther == nil || errUnknown == nil || strings.ReplaceAll(errOther.Error(), mailID, "<id>") != strings.ReplaceAll(errUnknown.Error(), unknownID, "<id>") {
		t.Errorf("/mcp resources, doc:* token: a mail chunk reads as %v, an unknown one as %v", errOther, errUnknown)
	}
	// The operator reads everything; the kind:email principal only the mail.
	all := viewOf(t, overRPC(operator), unknownID, "fedcba9876543210fedcba9876543210")
	if !strings.Contains(strings.Join(all.browseKinds, " "), "email") || !strings.Contains(strings.Join(all.browseKinds, " "), "document") ||
		!strings.Contains(strings.Join(all.entityIDs, " "), "email:") {
		t.Errorf("operator: browse %v, entities %v: want mail and documents", all.browseKinds, all.entityIDs)
	}
	mail := viewOf(t, overMCP(mcpSession(mailer)), unknownID, "fedcba9876543210fedcba9876543210")
	if !only(mail.browseKinds, func(s string) bool { return s == "email" }) || !only(mail.searchKinds, func(s string) bool { return s == "email" }) {
		t.Errorf("kind:email token: browse %v, search %v", mail.browseKinds, mail.searchKinds)
	}

	// The audit log names the principal of every call.
	deadline := time.Now().Add(10 * time.Second)
	counts := map[string]int{}
	for time.Now().Before(deadline) {
		counts = auditPrincipals(t, filepath.Join(e.ohome, "workspace", "audit", audit.FileName))
		if counts["docs-agent"] >= 16 && counts["operator"] >= 8 && counts["ana"] >= 7 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if counts["docs-agent"] < 16 || counts["operator"] < 8 || counts["ana"] < 7 || counts[""] != 0 {
		t.Errorf("audit lines by principal: %v; want 16 docs-agent (7 calls on each endpoint, 2 resource reads), 8 operator, 7 ana, none unnamed", counts)
	}

	// A revoked token is refused on both endpoints, also on an open session.
	cs := mcpSession(docs)
	if out, stderr, code := e.run("", "tokens", "revoke", "docs-agent"); code != 0 {
		t.Fatalf("tokens revoke: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, msg, status := rpcCall(t, base, docs, "openhuman.memory_tree_search", map[string]any{"query": "Lisbon"}); status != http.StatusUnauthorized {
		t.Errorf("/rpc with a revoked token: HTTP %d %s", status, msg)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "Lisbon"}}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("/mcp with a revoked token on an open session: %v", err)
	}
	if _, msg, _ := rpcCall(t, base, mailer, "openhuman.memory_tree_search", map[string]any{"query": "brake"}); msg != "" {
		t.Errorf("another principal's token stopped working after a revoke: %s", msg)
	}
}

// auditPrincipals counts the tool calls of the audit log by principal.
func auditPrincipals(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Tool      string `json:"tool"`
			Principal string `json:"principal"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Tool != "" {
			out[e.Principal]++
		}
	}
	return out
}

func TestPrincipalScopesSQLite(t *testing.T) { testPrincipalScopes(t) }

func TestPrincipalScopesPostgres(t *testing.T) {
	cluster := pgtest.Start(t)
	testPrincipalScopes(t, "OPENHUMAN_STORE_URL="+cluster.Database(t, "memory"))
}

// Hostile input to tokens and to serve's authentication gets clear errors:
// patterns that cannot be right, too many of them, no --allow, a reserved or
// bad name, a principals file that is not one; a token in the URL is refused
// before it is read; a huge Authorization header is refused, not crashed on.
func TestPrincipalHostileInput(t *testing.T) {
	e := newCLIEnv(t)
	many := []string{"tokens", "add", "many"}
	for range 65 {
		many = append(many, "--allow", "doc:*")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tokens", "add", "x"}, "no --allow pattern"},
		{[]string{"tokens", "add", "x", "--allow", ""}, "pattern is empty"},
		{[]string{"tokens", "add", "x", "--allow", "kind:mail"}, "names no kind"},
		{[]string{"tokens", "add", "x", "--allow", "docs"}, "can match no source"},
		{[]string{"tokens", "add", "x", "--allow", "doc:*", "--deny", "slack\x01:*"}, "control character"},
		{[]string{"tokens", "add", "x", "--allow", strings.Repeat("a", 600) + ":*"}, "bytes, more than"},
		{many, "65 patterns"},
		{[]string{"tokens", "add", "operator", "--allow", "*"}, "reserved"},
		{[]string{"tokens", "add", "../etc", "--allow", "*"}, "principal name"},
		{[]string{"tokens", "revoke", "nobody"}, "no principal \"nobody\""},
	} {
		_, stderr, code := e.run("", c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 with %q:\n%s", c.args, code, c.want, stderr)
		}
	}
	e.mintToken(t, "ana", "--allow", "*")
	if _, stderr, code := e.run("", "tokens", "add", "ana", "--allow", "*"); code != 2 || !strings.Contains(stderr, "exists already") {
		t.Errorf("a second ana: exit %d\n%s", code, stderr)
	}
	out, _, code := e.run("", "tokens", "list")
	if code != 0 || !strings.Contains(out, "ana") || strings.Contains(out, "ohp_") {
		t.Errorf("tokens list: exit %d\n%s", code, out)
	}
	raw, err := os.ReadFile(filepath.Join(e.ohome, "workspace", "principals.json"))
	if err != nil || strings.Contains(string(raw), "ohp_") {
		t.Errorf("principals.json must hold hashes only: %v\n%s", err, raw)
	}
	if fi, err := os.Stat(filepath.Join(e.ohome, "workspace", "principals.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("principals.json mode: %v %v", fi.Mode(), err)
	}

	const operator = "operator-token-0123456789abcdef0123456789"
	base := e.serveProcess(t, operator)
	for _, path := range []string{"/rpc?token=" + operator, "/mcp?access_token=" + operator} {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"openhuman.memory_tree_search","params":{"query":"x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "Authorization: Bearer") {
			t.Errorf("POST %s: HTTP %d %s", strings.SplitN(path, "?", 2)[0], resp.StatusCode, b)
		}
	}
	if _, _, status := rpcCall(t, base, "ohp_"+strings.Repeat("f", 50000), "openhuman.memory_tree_search", map[string]any{"query": "x"}); status != http.StatusUnauthorized {
		t.Errorf("a 50 kB token: HTTP %d, want 401", status)
	}
	// A principals file that is not one: serve keeps the operator token only
	// and says why at start; tokens list names the file.
	os.WriteFile(filepath.Join(e.ohome, "workspace", "principals.json"), []byte("{not json"), 0o600)
	if _, stderr, code := e.run("", "tokens", "list"); code != 2 || !strings.Contains(stderr, "principals.json is not valid") {
		t.Errorf("tokens list of a broken file: exit %d\n%s", code, stderr)
	}
}

// TestScopedTokenLearnsNoAddressFromContacts drives a real serve from outside:
// the operator's address book holds Micah's mail address, mail from it and a
// note about him are ingested. Over /rpc and /mcp, the operator's search naming
// Micah resolves to his address; a token allowed only documents gets the same
// question answered from the note, and its `resolved` names neither the address
// nor anything mail alone holds.
func TestScopedTokenLearnsNoAddressFromContacts(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"people.vcf": "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Micah Stubbs\r\nN:Stubbs;Micah;;;\r\nEMAIL:micah@home.example\r\nEND:VCARD\r\n",
		"mail.mbox": "From micah@home.example Mon Jan  5 10:00:00 2026\nFrom: Micah Stubbs <micah@home.example>\nTo: lee@corp.example\n" +
			"Subject: greenhouse budget\nDate: Mon, 05 Jan 2026 10:00:00 +0000\nMessage-ID: <g1@home.example>\n\nThe greenhouse budget is spent on glass.\n",
		"notes/greenhouse.md": "# Greenhouse\n\nMicah Stubbs drew the greenhouse budget on a napkin.\n",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := e.run("", "ingest", dir); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, stderr)
	}
	docs := e.mintToken(t, "docs-agent", "--allow", "doc:*")
	const operator = "operator-token-0123456789abcdef0123456789"
	base := e.serveProcess(t, operator)
	resolvedTo := func(res json.RawMessage) string {
		var r struct {
			Resolved []struct {
				To []string `json:"to"`
			} `json:"resolved"`
		}
		json.Unmarshal(res, &r)
		var to []string
		for _, x := range r.Resolved {
			to = append(to, x.To...)
		}
		return strings.Join(to, " ")
	}
	for _, method := range []string{"openhuman.memory_tree_search", "openhuman.memory_tree_recall"} {
		args := map[string]any{"query": "greenhouse budget from Micah Stubbs", "k": 5}
		res, msg, _ := rpcCall(t, base, operator, method, args)
		if msg != "" || !strings.Contains(resolvedTo(res), "email:micah@home.example") {
			t.Fatalf("%s, operator: %s %s: want Micah's address resolved", method, msg, res)
		}
		res, msg, _ = rpcCall(t, base, docs, method, args)
		if msg != "" || !strings.Contains(string(res), "greenhouse.md") {
			t.Fatalf("%s, doc:* token: %s %s: want the note", method, msg, res)
		}
		if to := resolvedTo(res); strings.Contains(to, "email:") || strings.Contains(string(res), "micah@home.example") {
			t.Errorf("%s, doc:* token: the answer names Micah's mail address (resolved %q): %s", method, to, res)
		}
	}

	// The same over /mcp with the official Go SDK client.
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "scope-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{docs}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory.search", Arguments: map[string]any{"query": "greenhouse budget from Micah Stubbs", "k": 5}})
	if err != nil || r.IsError {
		t.Fatalf("memory.search over /mcp: %v %+v", err, r)
	}
	if text := r.Content[0].(*mcp.TextContent).Text; strings.Contains(text, "micah@home.example") || !strings.Contains(text, "greenhouse.md") {
		t.Errorf("doc:* token over /mcp: %s", text)
	}
}
