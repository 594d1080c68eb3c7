package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// sourcesEnv is a fresh home whose store holds n one-message sources (kinds chat,
// email, document in turn; titles "Source NNNNN alpha|beta|gamma|delta"), written
// with the store's batch writer: ingesting 20,000 files through the CLI would
// test ingest, not paging.
func sourcesEnv(t *testing.T, n int) *env {
	t.Helper()
	if pgBackend.url != "" {
		return pgSourcesEnv(t, n)
	}
	e := newEnv(t)
	writeSources(t, filepath.Join(e.workspace, "memory_tree", "chunks.db"), n)
	return e
}

// writeSources writes the n sources of sourcesEnv into the store at path.
func writeSources(t testing.TB, path string, n int) {
	t.Helper()
	st, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := st.NewBatchWriter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		p, err := memtree.Prepare(pagingSource(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		if w.Due() {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// pagingSource is the i-th source of sourcesEnv.
func pagingSource(i int) memtree.SourceInput {
	kinds := []string{memtree.KindChat, memtree.KindEmail, memtree.KindDocument}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	kind := kinds[i%3]
	id := fmt.Sprintf("%s:src-%05d", kind, i)
	return memtree.SourceInput{Kind: kind, SourceID: id, Provider: "test",
		Title: fmt.Sprintf("Source %05d %s", i, []string{"alpha", "beta", "gamma", "delta"}[i%4]),
		Messages: []memtree.MessageInput{{Ref: id + "/m", Author: "ann", TimestampMS: base + int64(i)*60000,
			Text: fmt.Sprintf("note number %d #t%d", i, i)}}}
}

// pageAll walks tree.list_sources page by page with call (one page's arguments →
// its result) and checks every page: 50 sources, total n, next = offset + 50 until
// the last. It returns the source ids in order.
func pageAll(t *testing.T, n int, call func(args string) map[string]any) []string {
	t.Helper()
	var ids []string
	offset := 0
	for page := 0; ; page++ {
		res := call(fmt.Sprintf(`{"k":50,"offset":%d}`, offset))
		if total, _ := res["total"].(float64); int(total) != n {
			t.Fatalf("page %d: total %v, want %d", page, res["total"], n)
		}
		srcs, _ := res["sources"].([]any)
		for _, s := range srcs {
			ids = append(ids, s.(map[string]any)["source_id"].(string))
		}
		next, more := res["next"].(float64)
		if !more {
			if offset+len(srcs) != n {
				t.Fatalf("last page at offset %d holds %d sources of %d", offset, len(srcs), n)
			}
			return ids
		}
		if len(srcs) != 50 || int(next) != offset+50 {
			t.Fatalf("page at offset %d: %d sources, next %v", offset, len(srcs), next)
		}
		offset = int(next)
	}
}

// checkAllSources asserts ids are the n sources once each, most recent first.
func checkAllSources(t *testing.T, ids []string, n int) {
	t.Helper()
	if len(ids) != n {
		t.Fatalf("%d sources over all pages, want %d", len(ids), n)
	}
	for i, id := range ids {
		if want := fmt.Sprintf("src-%05d", n-1-i); !strings.HasSuffix(id, want) {
			t.Fatalf("source %d is %s, want …%s (most recent first, each once)", i, id, want)
		}
	}
}

const manySources = 20000

// TestListSourcesPagedOverMCP: a store with 20,000 sources (whose unpaged listing
// was ~9 MB, far above the 1 MiB result cap) answers tree.list_sources page by page
// through the go-sdk client, and the filters narrow total and pages.
func TestListSourcesPagedOverMCP(t *testing.T) {
	e := sourcesEnv(t, manySources)
	cs := connect(t, e, "pager")
	schemas := outputSchemas(t, cs)
	ids := pageAll(t, manySources, func(args string) map[string]any {
		return callOK(t, cs, schemas, "tree.list_sources", args)
	})
	checkAllSources(t, ids, manySources)

	sc := callOK(t, cs, schemas, "tree.list_sources", `{"kinds":["email"],"query":"GAMMA","k":50,"offset":100}`)
	want := 0
	for i := 0; i < manySources; i++ {
		if i%3 == 1 && i%4 == 2 {
			want++
		}
	}
	if int(sc["total"].(float64)) != want || len(sc["sources"].([]any)) != 50 || int(sc["next"].(float64)) != 150 {
		t.Fatalf("email+gamma: total %v (want %d), %d sources, next %v", sc["total"], want, len(sc["sources"].([]any)), sc["next"])
	}
	for _, s := range sc["sources"].([]any) {
		m := s.(map[string]any)
		if m["source_kind"] != "email" || !strings.Contains(m["display_name"].(string), "gamma") {
			t.Fatalf("email+gamma page holds %v", m)
		}
	}
	for _, c := range []struct{ args, want string }{
		{`{"k":51}`, "argument `k` must not exceed 50 (got 51)"},
		{`{"kinds":["chat","chat","chat","chat","chat","chat","chat","chat","chat","chat","chat"]}`, "argument `kinds` has 11 items; at most 10 are allowed (split the filter over several calls)"},
		{`{"offset":-1}`, "argument `offset` must be a non-negative integer"},
	} {
		if got := callErr(t, cs, "tree.list_sources", c.args); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
	// The other lists page too.
	sc = callOK(t, cs, schemas, "tree.top_entities", `{"k":50,"offset":50}`)
	if sc["total"].(float64) < 100 || len(sc["entities"].([]any)) != 50 || sc["next"].(float64) != 100 {
		t.Errorf("tree.top_entities page 2: total %v, %d entities, next %v", sc["total"], len(sc["entities"].([]any)), sc["next"])
	}
	sc = callOK(t, cs, schemas, "tree.browse", `{"source_kinds":["document"],"k":50,"offset":6600}`)
	if sc["total"].(float64) != 6666 || len(sc["chunks"].([]any)) != 50 || sc["next"].(float64) != 6650 {
		t.Errorf("tree.browse: total %v, %d chunks, next %v", sc["total"], len(sc["chunks"].([]any)), sc["next"])
	}
}

// TestListSourcesPagedOverHTTP is the same walk through `openhuman-core serve`.
func TestListSourcesPagedOverHTTP(t *testing.T) {
	const token = "e2e-shapes-token"
	e := sourcesEnv(t, manySources).with("OPENHUMAN_CORE_TOKEN=" + token)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := e.command(ctx, "serve", "--addr", addr)
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("serve stderr:\n%s", stderr.String())
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer /health within 60 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := &http.Client{Timeout: time.Minute}
	call := func(method, params string) (json.RawMessage, map[string]any) {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
		req, err := http.NewRequest(http.MethodPost, base+"/rpc", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  map[string]any  `json:"error"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%s %s: HTTP %d %s", method, params, resp.StatusCode, b)
		}
		if r.Error != nil {
			return nil, map[string]any{"error": r.Error}
		}
		var res map[string]any
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatalf("%s: result %s: %v", method, r.Result, err)
		}
		return r.Result, map[string]any{"result": res}
	}
	ids := pageAll(t, manySources, func(args string) map[string]any {
		_, out := call("openhuman.memory_tree_list_sources", args)
		if out["error"] != nil {
			t.Fatalf("list_sources %s: %v", args, out["error"])
		}
		return out["result"].(map[string]any)
	})
	checkAllSources(t, ids, manySources)
	// Without k the page is the tool's default, and the result says how to go on.
	raw, out := call("openhuman.memory_tree_list_sources", `{}`)
	res := out["result"].(map[string]any)
	if len(res["sources"].([]any)) != 10 || res["next"].(float64) != 10 || len(raw) > 64<<10 {
		t.Errorf("default page: %d sources, next %v, %d bytes", len(res["sources"].([]any)), res["next"], len(raw))
	}
	// Too many entity ids: an argument error, not SQLite's "too many SQL variables"
	// (TestHitsCarryTheirMessages sends 100,000 over MCP).
	_, out = call("openhuman.memory_tree_list_chunks", `{"entity_ids":[`+strings.TrimSuffix(strings.Repeat(`"e",`, 5000), ",")+`]}`)
	if msg := fmt.Sprint(out["error"]); !strings.Contains(msg, "argument `entity_ids` has 5000 items; at most 100 are allowed") || strings.Contains(msg, "SQL") {
		t.Errorf("5,000 entity ids: %s", msg)
	}
}

// TestHitsCarryTheirMessages: over MCP, a search hit carries its cited messages
// (ref, author, UTC time, bounded text) in the order of its cited refs, valid
// against the output schema.
func TestHitsCarryTheirMessages(t *testing.T) {
	e := storeEnv(t)
	cs := connect(t, e, "E2E Messages")
	schemas := outputSchemas(t, cs)
	for _, tool := range []string{"memory.search", "memory.recall"} {
		sc := callOK(t, cs, schemas, tool, `{"query":"phoenix launch","k":10}`)
		hits := sc["chunks"].([]any)
		if len(hits) == 0 {
			t.Fatalf("%s: no hits", tool)
		}
		bound, _ := sc["message_text_max_chars"].(float64)
		if bound < 100 || bound > 800 {
			t.Errorf("%s: message_text_max_chars = %v", tool, sc["message_text_max_chars"])
		}
		for _, h := range hits {
			hit := h.(map[string]any)
			msgs, _ := hit["messages"].([]any)
			if len(msgs) == 0 {
				t.Errorf("%s: hit %v has no messages", tool, hit["id"])
				continue
			}
			first := msgs[0].(map[string]any)
			if first["ref"] != hit["source_ref"] {
				t.Errorf("%s: first message %v, source_ref %v", tool, first["ref"], hit["source_ref"])
			}
			for _, m := range msgs {
				mm := m.(map[string]any)
				text, _ := mm["text"].(string)
				if len([]rune(text)) > int(bound) {
					t.Errorf("%s: message text of %d characters above the bound %v", tool, len([]rune(text)), bound)
				}
				if ts, ok := mm["time"].(string); ok {
					if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") {
						t.Errorf("%s: time %q is not RFC 3339 UTC: %v", tool, ts, err)
					}
				}
			}
		}
	}
	// tree.browse with 100,000 entity ids is refused as an argument error.
	t0 := time.Now()
	got := callErr(t, cs, "tree.browse", `{"entity_ids":[`+strings.TrimSuffix(strings.Repeat(`"e",`, 100000), ",")+`]}`)
	t.Logf("100,000 entity ids refused in %v", time.Since(t0))
	if got != "argument `entity_ids` has 100000 items; at most 100 are allowed (split the filter over several calls)" {
		t.Errorf("100,000 entity ids: %q", got)
	}
}
