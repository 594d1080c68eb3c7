package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %q is not JSON: %v", path, sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestEntryFields(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	var logs syncBuffer
	l := New(Options{Dir: dir, Logger: testLogger(&logs)})
	at := time.Date(2026, 1, 5, 10, 11, 12, 123456789, time.FixedZone("x", 3600))
	l.Record(Entry{
		Time: at, Session: "mcp:claude-desktop", RequestID: "7", Tool: "memory.search",
		ModuleSHA256: "abc123",
		Capabilities: Capabilities{HostCalls: map[string]int{"memory_search": 1}, BytesIn: 420, BytesOut: 31},
		Arguments:    SummarizeArguments(json.RawMessage(`{"query":"phoenix","k":5}`)),
		Outcome:      OutcomeOK, DurationMS: 1.5,
	})
	l.Record(Entry{Session: "mcp", RequestID: "8", Tool: "tree.browse", Outcome: ToolErrorOutcome("invalid_params"), Error: "argument `k` must not exceed 50 (got 51)"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("audit dir mode: %v %v", st, err)
	}
	lines := readLines(t, filepath.Join(dir, FileName))
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2", len(lines))
	}
	first := lines[0]
	if first["time"] != "2026-01-05T09:11:12.123456789Z" {
		t.Errorf("time = %v", first["time"])
	}
	for k, want := range map[string]any{"session": "mcp:claude-desktop", "request_id": "7", "tool": "memory.search", "module_sha256": "abc123", "outcome": "ok", "duration_ms": 1.5} {
		if first[k] != want {
			t.Errorf("%s = %#v, want %#v", k, first[k], want)
		}
	}
	caps := first["capabilities"].(map[string]any)
	if caps["host_calls"].(map[string]any)["memory_search"] != 1.0 || caps["bytes_in"] != 420.0 || caps["bytes_out"] != 31.0 {
		t.Errorf("capabilities = %v", caps)
	}
	args := first["arguments"].(map[string]any)
	if args["query"] != "phoenix" || args["k"] != 5.0 {
		t.Errorf("arguments = %v", args)
	}
	second := lines[1]
	if second["outcome"] != "tool_error:invalid_params" || second["error"] != "argument `k` must not exceed 50 (got 51)" {
		t.Errorf("second line = %v", second)
	}
	if _, err := time.Parse(time.RFC3339Nano, second["time"].(string)); err != nil {
		t.Errorf("default time not RFC 3339: %v", err)
	}
	if logs.String() != "" {
		t.Errorf("unexpected warnings: %s", logs.String())
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	l := New(Options{Dir: dir, MaxFileBytes: 1000, MaxFiles: 3})
	const n = 100
	for i := range n {
		l.Record(Entry{Session: "mcp", RequestID: fmt.Sprint(i), Tool: "memory.search", Outcome: OutcomeOK,
			Arguments: map[string]any{"query": strings.Repeat("q", 50)}})
	}
	l.Close()
	files, _ := filepath.Glob(filepath.Join(dir, FileName+"*"))
	if len(files) != 4 {
		t.Fatalf("files = %v, want live + 3 rotated", files)
	}
	// Oldest to newest: .3, .2, .1, live. Request ids must increase without gaps
	// across them, and end at n-1.
	var ids []int
	for _, name := range []string{FileName + ".3", FileName + ".2", FileName + ".1", FileName} {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1000 {
			t.Errorf("%s is %d bytes, over the 1000-byte limit", name, st.Size())
		}
		for _, line := range readLines(t, path) {
			var id int
			fmt.Sscan(line["request_id"].(string), &id)
			ids = append(ids, id)
		}
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("ids not consecutive across rotated files: %v", ids)
		}
	}
	if ids[len(ids)-1] != n-1 {
		t.Errorf("last id %d, want %d", ids[len(ids)-1], n-1)
	}
	if len(ids) >= n {
		t.Errorf("kept %d lines; the oldest files should have been dropped", len(ids))
	}
}

func TestWriteFailureWarnsOncePerStreak(t *testing.T) {
	dir := t.TempDir()
	// A full disk: the live log is /dev/full, where every write fails with ENOSPC.
	if err := os.Symlink("/dev/full", filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	l := New(Options{Dir: dir, Logger: testLogger(&logs)})
	start := time.Now()
	for i := range 50 {
		l.Record(Entry{RequestID: fmt.Sprint(i), Tool: "memory.search", Outcome: OutcomeOK})
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Record blocked for %s", d)
	}
	// Let the writer fail on a few lines, then recover by replacing the file.
	deadline := time.Now().Add(10 * time.Second)
	for l.Failed() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if l.Failed() == 0 {
		t.Fatal("no write failure recorded for /dev/full")
	}
	l.Close()
	out := logs.String()
	if c := strings.Count(out, "cannot write the audit log"); c != 1 {
		t.Errorf("got %d warnings for one failure streak, want 1:\n%s", c, out)
	}
	if !strings.Contains(out, "no space left on device") {
		t.Errorf("warning does not say why: %s", out)
	}
}

func TestRecoversAfterFailure(t *testing.T) {
	root := t.TempDir()
	blocker := filepath.Join(root, "workspace")
	// A regular file where the directory should be: MkdirAll fails (even for root).
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(blocker, "audit")
	var logs syncBuffer
	l := New(Options{Dir: dir, Logger: testLogger(&logs), Buffer: 4})
	l.Record(Entry{RequestID: "1", Tool: "t", Outcome: OutcomeOK})
	l.Record(Entry{RequestID: "2", Tool: "t", Outcome: OutcomeOK})
	deadline := time.Now().Add(10 * time.Second)
	for l.Failed() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if l.Failed() != 2 {
		t.Fatalf("failed = %d, want 2", l.Failed())
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	l.Record(Entry{RequestID: "3", Tool: "t", Outcome: OutcomeOK})
	l.Close()
	lines := readLines(t, filepath.Join(dir, FileName))
	if len(lines) != 1 || lines[0]["request_id"] != "3" {
		t.Errorf("after recovery got %v, want only request 3", lines)
	}
	out := logs.String()
	if strings.Count(out, "cannot write the audit log") != 1 || !strings.Contains(out, "writing works again") || !strings.Contains(out, "lines_lost=2") {
		t.Errorf("warnings:\n%s", out)
	}
	// Recording after Close is ignored, not a panic.
	l.Record(Entry{RequestID: "4"})
}

func TestNilLog(t *testing.T) {
	var l *Log
	l.Record(Entry{Tool: "x"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSummarizeArguments(t *testing.T) {
	long := strings.Repeat("é", 250)
	raw := fmt.Sprintf(`{"query":%q,"k":5,"api_key":"sk-123","Authorization":"Bearer x","accessToken":"t","password":"p",
		"client_secret":"s","keyword":"kept","author":"ann","nested":{"token":"x","list":["a",%q]},"since_ms":null,"flag":true}`, long, long)
	got := SummarizeArguments(json.RawMessage(raw))
	wantTrunc := strings.Repeat("é", 200) + "…(250 chars)"
	if got["query"] != wantTrunc {
		t.Errorf("query = %q, want %q", got["query"], wantTrunc)
	}
	if got["k"] != json.Number("5") || got["flag"] != true || got["since_ms"] != nil {
		t.Errorf("scalars: k=%#v flag=%#v since=%#v", got["k"], got["flag"], got["since_ms"])
	}
	if _, ok := got["since_ms"]; !ok {
		t.Error("null-valued key dropped; the summary keeps every key")
	}
	for _, k := range []string{"api_key", "Authorization", "accessToken", "password", "client_secret"} {
		if got[k] != Redacted {
			t.Errorf("%s = %#v, want redacted", k, got[k])
		}
	}
	for k, want := range map[string]string{"keyword": "kept", "author": "ann"} {
		if got[k] != want {
			t.Errorf("%s = %#v, want %q (not a secret)", k, got[k], want)
		}
	}
	nested := got["nested"].(map[string]any)
	if nested["token"] != Redacted {
		t.Errorf("nested token = %#v", nested["token"])
	}
	if l := nested["list"].([]any); l[0] != "a" || l[1] != wantTrunc {
		t.Errorf("nested list = %#v", l)
	}
	b, err := json.Marshal(got)
	if err != nil || strings.Contains(string(b), "sk-123") || strings.Contains(string(b), "Bearer") {
		t.Errorf("summary leaks a secret or fails to encode: %s %v", b, err)
	}

	for raw, want := range map[string]string{
		`"just a string"`: "arguments are a JSON string, not an object",
		`[1,2]`:           "arguments are a JSON array, not an object",
		`{bad`:            "not JSON (4 bytes)",
	} {
		got := SummarizeArguments(json.RawMessage(raw))
		if s, _ := got["_invalid"].(string); !strings.Contains(s, want) {
			t.Errorf("SummarizeArguments(%s) = %v, want _invalid containing %q", raw, got, want)
		}
	}
	if got := SummarizeArguments(nil); len(got) != 0 {
		t.Errorf("nil arguments = %v", got)
	}
	big := `{"ids":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 30), ",") + `]}`
	if l := SummarizeArguments(json.RawMessage(big))["ids"].([]any); len(l) != 21 || l[20] != "…(30 items)" {
		t.Errorf("long array summary = %v", l)
	}
}

func TestIsSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"token": true, "api_key": true, "apiKey": true, "X-Api-Key": true, "key": true, "secret": true,
		"password": true, "auth": true, "authorization": true, "session_id": true, "refreshToken": true,
		"query": false, "keyword": false, "monkey": false, "author": false, "k": false, "source_ids": false,
		"user_email_hint": false, "max_results": false,
	} {
		if got := IsSecretKey(key); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func BenchmarkRecord(b *testing.B) {
	l := New(Options{Dir: b.TempDir(), Buffer: 1 << 16})
	e := Entry{Session: "mcp:bench", RequestID: "1", Tool: "memory.search", Outcome: OutcomeOK,
		Arguments: SummarizeArguments(json.RawMessage(`{"query":"phoenix launch","k":10}`))}
	b.ReportAllocs()
	for b.Loop() {
		l.Record(e)
	}
	l.Close()
}

// Keys that hold secrets or personal identifiers are redacted whatever their case
// or separators, at any depth (objects in objects, objects in arrays), and only
// their values: the keys stay so a reviewer sees what was sent.
func TestRedactsSensitiveKeys(t *testing.T) {
	secrets := []string{"jwt", "JWT", "id_jwt", "ssn", "SSN", "user-ssn", "card_number", "Card-Number", "cardNumber", "CARDNUMBER",
		"credit_card", "cvv", "CVV2", "cvc", "iban", "IBAN", "ibanNumber", "secret", "Client-Secret", "password", "PassWord", "token",
		"id_token", "api_key", "API-KEY", "apiKey", "authorization", "Authorization", "proxy_authorization", "cookie", "Set-Cookie",
		"session", "SESSION", "session_id", "sessionid", "Session-Token"}
	obj := map[string]any{}
	for i, k := range secrets {
		obj[k] = fmt.Sprintf("SECRET-%d", i)
	}
	nested := map[string]any{"query": "kept", "filters": map[string]any{"owner": map[string]any{"ssn": "SECRET-ssn", "name": "ann"}},
		"people": []any{map[string]any{"card_number": "SECRET-card", "city": "Oslo"}}, "headers": map[string]any{"Cookie": "SECRET-cookie"}}
	for k, v := range nested {
		obj[k] = v
	}
	raw, _ := json.Marshal(obj)
	got := SummarizeArguments(raw)
	for _, k := range secrets {
		if got[k] != Redacted {
			t.Errorf("%s = %#v, want %s", k, got[k], Redacted)
		}
	}
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), "SECRET") {
		t.Errorf("summary leaks a secret: %s", b)
	}
	owner := got["filters"].(map[string]any)["owner"].(map[string]any)
	person := got["people"].([]any)[0].(map[string]any)
	if got["query"] != "kept" || owner["name"] != "ann" || person["city"] != "Oslo" {
		t.Errorf("values of ordinary keys were lost: %s", b)
	}
	for _, k := range []string{"query", "k", "source_ids", "entity_ids", "since_ms", "sources", "keyword", "author", "bossname", "lessons",
		"caribbean", "ticket_count", "cards", "categories", "language", "card_notes", "company", "expand"} {
		if IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true, want false (an ordinary argument)", k)
		}
	}
}
