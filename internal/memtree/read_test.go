package memtree_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func i64(v int64) *int64 { return &v }

func listAll(t *testing.T, st *memtree.Store, req abi.ChunksListRequest) *abi.ListResult {
	t.Helper()
	if req.K == 0 {
		req.K = 50
	}
	res, err := memory.Default(st).ListChunks(context.Background(), req)
	if err != nil {
		t.Fatalf("ListChunks(%+v): %v", req, err)
	}
	return res
}

// wantID recomputes a chunk id the way reference-behaviour §1.2 defines it.
func wantID(kind, sourceID string, seq uint32, text string) string {
	var b []byte
	b = append(b, kind...)
	b = append(b, 0)
	b = append(b, sourceID...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, seq)
	b = append(b, 0)
	b = append(b, text...)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func TestChunkIDsAndRenderedText(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	res := listAll(t, st, abi.ChunksListRequest{SourceKinds: []string{"email"}})
	if res.Total != 1 || len(res.Chunks) != 1 {
		t.Fatalf("email chunks = %d (total %d), want 1", len(res.Chunks), res.Total)
	}
	h := res.Chunks[0]
	got, err := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Chunk
	if c.ID != wantID("email", "email:brakes-1@kestrel.example", 0, c.Text) {
		t.Errorf("chunk id %s does not follow sha256(kind, NUL, source id, NUL, seq BE, NUL, text)", c.ID)
	}
	for _, want := range []string{
		"From: Alice Martin <alice@kestrel.example>\nTo: Bob Stone <bob@garage.example>\nDate: 2026-02-03\nSubject: Brake repair quote\n\nHi Bob,",
		"From: Bob Stone <bob@garage.example>\nTo: Alice Martin <alice@kestrel.example>\nCc: carol@garage.example\nDate: 2026-02-04\nSubject: Re: Brake repair quote",
		"Pads and rotors come to 420 EUR",
	} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("chunk text lacks %q:\n%s", want, c.Text)
		}
	}
	if c.SourceRef != "brakes-1@kestrel.example" || len(c.SourceRefs) != 2 || c.SourceRefs[1] != "brakes-2@garage.example" {
		t.Errorf("refs = %q %v", c.SourceRef, c.SourceRefs)
	}
	if c.TimestampMS != ms("2026-02-03T09:00:00Z") || c.TimeRangeStartMS != c.TimestampMS || c.TimeRangeEndMS != ms("2026-02-04T10:30:00Z") {
		t.Errorf("times = %d %d..%d", c.TimestampMS, c.TimeRangeStartMS, c.TimeRangeEndMS)
	}
	if len(c.Attachments) != 1 || c.Attachments[0].Name != "photo.jpg" || strings.Contains(c.Text, "photo.jpg") {
		t.Errorf("attachments = %+v (must be metadata, not text)", c.Attachments)
	}
	if c.TokenCount != (utf8.RuneCountInString(c.Text)+3)/4 {
		t.Errorf("token_count = %d for %d chars", c.TokenCount, utf8.RuneCountInString(c.Text))
	}
	for _, e := range []string{"person:alice martin", "person:bob stone", "email:alice@kestrel.example", "email:bob@garage.example",
		"email:carol@garage.example", "url:https://garage.example/quote/77", "hashtag:brakes", "topic:brakes"} {
		if !contains(c.Entities, e) {
			t.Errorf("chunk entities %v lack %s", c.Entities, e)
		}
	}
	// Chat rendering and documents.
	chat := listAll(t, st, abi.ChunksListRequest{SourceIDs: []string{"slack:#phoenix"}})
	if len(chat.Chunks) != 2 {
		t.Fatalf("chat chunks = %d, want 2 (a 3-day pause splits the conversation)", len(chat.Chunks))
	}
	cc, _ := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: strings.ToUpper(chat.Chunks[1].ID)})
	if !strings.HasPrefix(cc.Chunk.Text, "Dana Ruiz (2026-03-02 14:03): Launch checklist is ready, @erik please review\n\nErik Lund (2026-03-02 14:10): Reviewed.") {
		t.Errorf("chat text = %q", cc.Chunk.Text)
	}
	doc := listAll(t, st, abi.ChunksListRequest{SourceKinds: []string{"document"}})
	dc, _ := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: doc.Chunks[0].ID})
	if !strings.HasPrefix(dc.Chunk.Text, "Lisbon trip\n\nFlights booked for April.\n\nHotel near Alfama") || !contains(dc.Chunk.Tags, "travel") {
		t.Errorf("document chunk = %q tags %v", dc.Chunk.Text, dc.Chunk.Tags)
	}
}

func TestChunkingBoundaries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chunks.db")
	st, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	// 40 chat messages a minute apart, 300 chars each: packed up to 8 per chunk and ≤ 2048 chars.
	var msgs []memtree.MessageInput
	base := ms("2026-01-10T10:00:00Z")
	for i := 0; i < 40; i++ {
		msgs = append(msgs, memtree.MessageInput{Ref: fmt.Sprintf("m%02d", i), Author: "Ann", TimestampMS: base + int64(i)*60000,
			Text: fmt.Sprintf("message %02d ", i) + strings.Repeat("word ", 57)})
	}
	// One oversized message: long lines, then a single 5000-char line.
	huge := strings.Repeat(strings.Repeat("line ", 100)+"\n", 10) + strings.Repeat("x", 5000)
	msgs = append(msgs, memtree.MessageInput{Ref: "huge", Author: "Ann", TimestampMS: base + 41*60000, Text: huge})
	stats, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: "chat:big", Title: "big", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	res := listAll(t, st, abi.ChunksListRequest{SourceIDs: []string{"chat:big"}})
	if res.Total != stats.NewChunks || res.Total < 8 {
		t.Fatalf("total %d, new %d", res.Total, stats.NewChunks)
	}
	seen := map[string]int{}
	for off := 0; off < res.Total; off += 50 {
		for _, h := range listAll(t, st, abi.ChunksListRequest{SourceIDs: []string{"chat:big"}, Offset: off}).Chunks {
			c, err := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
			if err != nil {
				t.Fatal(err)
			}
			n := utf8.RuneCountInString(c.Chunk.Text)
			if n > memtree.MaxChunkTokens*4 {
				t.Errorf("chunk seq %d has %d chars > %d", c.Chunk.Seq, n, memtree.MaxChunkTokens*4)
			}
			if c.Chunk.TokenCount > memtree.MaxChunkTokens {
				t.Errorf("chunk seq %d has %d tokens", c.Chunk.Seq, c.Chunk.TokenCount)
			}
			for _, r := range c.Chunk.SourceRefs {
				seen[r]++
			}
			if !contains(c.Chunk.SourceRefs, "huge") {
				// A packed chunk holds whole messages: each starts with the author line.
				for _, part := range strings.Split(c.Chunk.Text, "\n\n") {
					if !strings.HasPrefix(part, "Ann (2026-01-10 ") {
						t.Errorf("packed chunk splits a message: %.60q", part)
					}
				}
			}
		}
	}
	for i := 0; i < 40; i++ {
		if seen[fmt.Sprintf("m%02d", i)] != 1 {
			t.Errorf("message m%02d is in %d chunks, want 1", i, seen[fmt.Sprintf("m%02d", i)])
		}
	}
	if seen["huge"] < 4 {
		t.Errorf("oversized message split into %d chunks, want >= 4 (lines, then hard cuts)", seen["huge"])
	}
	// Determinism: the same input in another store gives the same ids.
	st2, err := memtree.Open(filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if _, err := st2.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: "chat:big", Title: "big", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	a := listAll(t, st, abi.ChunksListRequest{SourceIDs: []string{"chat:big"}})
	b := listAll(t, st2, abi.ChunksListRequest{SourceIDs: []string{"chat:big"}})
	for i := range a.Chunks {
		if a.Chunks[i].ID != b.Chunks[i].ID {
			t.Errorf("chunk %d id differs between stores: %s vs %s", i, a.Chunks[i].ID, b.Chunks[i].ID)
		}
	}
}

func TestReplaceRemovesIndexRows(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	src := fixtureSources()[2]
	src.Messages[0].Text = "Flights cancelled.\n\nStaying home."
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"Alfama": 0, "cancelled": 1} {
		res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Chunks) != want {
			t.Errorf("Search(%q) = %d hits after replace, want %d", q, len(res.Chunks), want)
		}
	}
	srcs, _ := memory.Default(st).ListSources(ctx, abi.SourcesListRequest{})
	if len(srcs.Sources) != 3 {
		t.Errorf("sources = %d", len(srcs.Sources))
	}
}

func TestListChunksFilters(t *testing.T) {
	st, _ := openFixture(t)
	cases := []struct {
		name string
		req  abi.ChunksListRequest
		want int
	}{
		{"all", abi.ChunksListRequest{}, 4},
		{"kind", abi.ChunksListRequest{SourceKinds: []string{"chat"}}, 2},
		{"kinds", abi.ChunksListRequest{SourceKinds: []string{"chat", "document"}}, 3},
		{"source", abi.ChunksListRequest{SourceIDs: []string{"doc:notes/lisbon.md"}}, 1},
		{"entity case-insensitive", abi.ChunksListRequest{EntityIDs: []string{"Person:Dana Ruiz"}}, 2},
		{"entity and kind", abi.ChunksListRequest{EntityIDs: []string{"person:dana ruiz"}, SourceKinds: []string{"email"}}, 0},
		{"since inclusive", abi.ChunksListRequest{SinceMS: i64(ms("2026-03-05T08:00:00Z"))}, 1},
		{"until inclusive", abi.ChunksListRequest{UntilMS: i64(ms("2026-01-20T12:00:00Z"))}, 1},
		{"window", abi.ChunksListRequest{SinceMS: i64(ms("2026-02-01T00:00:00Z")), UntilMS: i64(ms("2026-03-03T00:00:00Z"))}, 2},
		{"query alone", abi.ChunksListRequest{Query: "rotors come"}, 1},
		{"query with filter", abi.ChunksListRequest{Query: "LAUNCH", SourceKinds: []string{"chat"}}, 2},
		{"query wildcard escaped", abi.ChunksListRequest{Query: "420%", SourceKinds: []string{"email"}}, 0},
		{"query underscore escaped", abi.ChunksListRequest{Query: "tram_28"}, 0},
	}
	for _, c := range cases {
		res := listAll(t, st, c.req)
		if res.Total != c.want || len(res.Chunks) != c.want {
			t.Errorf("%s: total %d, chunks %d, want %d", c.name, res.Total, len(res.Chunks), c.want)
		}
		for i := 1; i < len(res.Chunks); i++ {
			if res.Chunks[i-1].TimestampMS < res.Chunks[i].TimestampMS {
				t.Errorf("%s: not newest first", c.name)
			}
		}
	}
	page := listAll(t, st, abi.ChunksListRequest{K: 3, Offset: 2})
	if page.Total != 4 || len(page.Chunks) != 2 {
		t.Errorf("page: total %d, %d chunks", page.Total, len(page.Chunks))
	}
	for _, bad := range []abi.ChunksListRequest{{K: 0}, {K: 51}, {K: 5, Offset: -1}, {K: 5, SinceMS: i64(10), UntilMS: i64(5)}} {
		if _, err := memory.Default(st).ListChunks(context.Background(), bad); !errors.Is(err, memtree.ErrInvalid) {
			t.Errorf("ListChunks(%+v) err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestKValidation(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	for _, k := range []int{0, -1, 51} {
		if _, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "car", K: k}); !errors.Is(err, memtree.ErrInvalid) {
			t.Errorf("Search k=%d: %v", k, err)
		}
		if _, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: "car", K: k}); !errors.Is(err, memtree.ErrInvalid) {
			t.Errorf("Recall k=%d: %v", k, err)
		}
		if _, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{K: k}); !errors.Is(err, memtree.ErrInvalid) {
			t.Errorf("TopEntities k=%d: %v", k, err)
		}
	}
	if _, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "  ", K: 5}); !errors.Is(err, memtree.ErrInvalid) {
		t.Errorf("empty query: %v", err)
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "brake", K: 50})
	if err != nil || len(res.Chunks) != 1 {
		t.Errorf("k=50: %v %d", err, len(res.Chunks))
	}
}

func TestGetChunkErrors(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	for _, id := range []string{"", "xyz", strings.Repeat("a", 31), strings.Repeat("g", 32), "' OR 1=1 --"} {
		if _, err := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: id}); !errors.Is(err, memtree.ErrInvalid) {
			t.Errorf("GetChunk(%q) = %v, want ErrInvalid", id, err)
		}
	}
	_, err := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: strings.Repeat("0", 32)})
	if !errors.Is(err, memtree.ErrNotFound) || !strings.Contains(err.Error(), "memory.search") {
		t.Errorf("unknown id: %v (want ErrNotFound telling where ids come from)", err)
	}
}

func TestSearchBehaviour(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	search := func(q string) []abi.ChunkHit {
		t.Helper()
		res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatalf("Search(%q): %v", q, err)
		}
		return res.Chunks
	}
	hits := search("brake pads")
	if len(hits) != 1 || hits[0].SourceKind != "email" || hits[0].Score <= 0 || !strings.Contains(strings.ToLower(hits[0].Snippet), "brake") {
		t.Fatalf("brake pads: %+v", hits)
	}
	// Stemming: "braking" finds "brake".
	if len(search("braking")) != 1 {
		t.Error("porter stemming not applied")
	}
	// Raw FTS syntax is quoted, never interpreted.
	for _, q := range []string{`brake" OR "x`, `NEAR(brake pads)`, `brake*`, `(brake`, `-brake`, `text:brake`, `"`} {
		if _, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 5}); err != nil {
			t.Errorf("Search(%q): %v", q, err)
		}
	}
	// OR fallback: one word matches, the other is absent from the store.
	if len(search("brake zeppelin")) != 1 {
		t.Error("OR fallback did not find the brake chunk")
	}
	// A known person restricts to their chunks, even with no other word.
	hits = search("messages from Erik Lund")
	if len(hits) == 0 || hits[0].SourceID != "slack:#phoenix" || hits[0].SourceRef != "slack:phoenix:2" {
		t.Errorf("person query: %+v", hits)
	}
	// An address uses the entity index.
	hits = search("carol@garage.example")
	if len(hits) != 1 || hits[0].SourceKind != "email" {
		t.Errorf("address query: %+v", hits)
	}
	// A month restricts the time window.
	hits = search("launch in March 2026")
	if len(hits) != 2 {
		t.Errorf("launch in March: %d hits", len(hits))
	}
	for _, h := range hits {
		if h.SourceID != "slack:#phoenix" {
			t.Errorf("launch in March returned %s", h.SourceID)
		}
	}
	hits = search("trip 2026-01-20")
	if len(hits) != 1 || hits[0].SourceKind != "document" {
		t.Errorf("ISO date query: %+v", hits)
	}
	// A hit cites the messages that carry the match first (the turn it responds
	// to follows, ranked on its own: issue 30 turn units); read_chunk still lists all.
	hits = search("billing migration")
	if len(hits) != 1 || hits[0].SourceRef != "slack:phoenix:2" || !slices.Equal(hits[0].SourceRefs, []string{"slack:phoenix:2", "slack:phoenix:1"}) {
		t.Errorf("citation: %+v", hits)
	} else if c, _ := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: hits[0].ID}); len(c.Chunk.SourceRefs) != 2 {
		t.Errorf("chunk refs = %v, want both messages", c.Chunk.SourceRefs)
	}
}

func TestTopEntitiesAndSources(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()
	top, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: "person", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i, e := range top.Entities {
		counts[e.EntityID] = e.Count
		if e.Kind != "person" {
			t.Errorf("kind filter leaked %+v", e)
		}
		if i > 0 && top.Entities[i-1].Count < e.Count {
			t.Errorf("not ordered by count: %+v", top.Entities)
		}
	}
	if counts["person:dana ruiz"] != 2 || counts["person:alice martin"] != 1 || counts["person:erik lund"] != 1 {
		t.Errorf("person counts = %v", counts)
	}
	if top.Entities[0].EntityID != "person:dana ruiz" || top.Entities[0].Surface != "Dana Ruiz" || top.Entities[0].LastSeenMS != ms("2026-03-05T08:00:00Z") {
		t.Errorf("top person = %+v", top.Entities[0])
	}
	all, _ := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{K: 50})
	kinds := map[string]bool{}
	for _, e := range all.Entities {
		kinds[e.Kind] = true
	}
	for _, k := range []string{"person", "email", "url", "hashtag", "topic", "handle"} {
		if !kinds[k] {
			t.Errorf("no %s entity in %v", k, all.Entities)
		}
	}
	srcs, err := memory.Default(st).ListSources(ctx, abi.SourcesListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs.Sources) != 3 || srcs.Sources[0].SourceID != "slack:#phoenix" || srcs.Sources[0].DisplayName != "#phoenix" ||
		srcs.Sources[0].ChunkCount != 2 || srcs.Sources[0].MostRecentMS != ms("2026-03-05T08:00:00Z") {
		t.Errorf("sources = %+v", srcs.Sources)
	}
	if srcs.Sources[1].DisplayName != "Brake repair quote" || srcs.Sources[2].DisplayName != "Lisbon trip" {
		t.Errorf("display names = %q, %q", srcs.Sources[1].DisplayName, srcs.Sources[2].DisplayName)
	}
}

func TestDisplayName(t *testing.T) {
	cases := []struct{ kind, id, title, hint, want string }{
		{"chat", "slack:#engineering", "#engineering", "", "#engineering"},
		{"chat", "loose-id", "", "", "loose-id"},
		{"email", "gmail:alice@example.com|bob@example.com", "", "alice@example.com", "bob@example.com"},
		{"email", "gmail:alice@example.com|bob@example.com", "", " ALICE@example.com ", "bob@example.com"},
		{"email", "gmail:alice@example.com|bob@example.com|carol@x.com", "", "alice@example.com", "bob@example.com, carol@x.com"},
		{"email", "gmail:alice@example.com|bob@example.com", "", "", "alice@example.com ↔ bob@example.com"},
		{"email", "gmail:alice@example.com|bob@example.com", "", "zed@example.com", "alice@example.com ↔ bob@example.com"},
		{"email", "gmail:alice@example.com|alice@example.com", "", "alice@example.com", "alice@example.com ↔ alice@example.com"},
		{"email", "email:<id@x>", "Budget review", "", "Budget review"},
		{"document", "doc:notes/a.md", "", "", "notes/a.md"},
	}
	for _, c := range cases {
		if got := memory.DisplayName(c.kind, c.id, c.title, c.hint); got != c.want {
			t.Errorf("DisplayName(%q, %q, hint %q) = %q, want %q", c.id, c.title, c.hint, got, c.want)
		}
	}
}

func TestEmptyStoreHintAndLateCreation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws", "memory_tree", "chunks.db")
	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("OpenReadOnly on a missing store: %v", err)
	}
	defer ro.Close()
	ctx := context.Background()
	sr, err := memory.Default(ro).Search(ctx, abi.SearchRequest{Query: "anything", K: 5})
	if err != nil || len(sr.Chunks) != 0 || sr.Hint != memtree.EmptyHint {
		t.Errorf("Search on missing store: %+v %v", sr, err)
	}
	rr, err := memory.Default(ro).Recall(ctx, abi.RecallRequest{Query: "anything", K: 5})
	if err != nil || rr.Hint != memtree.EmptyHint || rr.Chunks == nil {
		t.Errorf("Recall: %+v %v", rr, err)
	}
	lr, err := memory.Default(ro).ListChunks(ctx, abi.ChunksListRequest{K: 5})
	if err != nil || lr.Hint != memtree.EmptyHint || lr.Total != 0 {
		t.Errorf("ListChunks: %+v %v", lr, err)
	}
	er, err := memory.Default(ro).TopEntities(ctx, abi.EntitiesTopRequest{K: 5})
	if err != nil || er.Hint != memtree.EmptyHint {
		t.Errorf("TopEntities: %+v %v", er, err)
	}
	so, err := memory.Default(ro).ListSources(ctx, abi.SourcesListRequest{})
	if err != nil || so.Hint != memtree.EmptyHint || so.Sources == nil {
		t.Errorf("ListSources: %+v %v", so, err)
	}
	if _, err := memory.Default(ro).GetChunk(ctx, abi.ChunkGetRequest{ID: strings.Repeat("a", 32)}); !errors.Is(err, memtree.ErrNotFound) {
		t.Errorf("GetChunk: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open created the store file: %v", err)
	}
	// An empty but existing store also hints.
	w, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sr, _ = memory.Default(ro).Search(ctx, abi.SearchRequest{Query: "brake", K: 5})
	if sr.Hint != memtree.EmptyHint {
		t.Errorf("existing empty store: hint %q", sr.Hint)
	}
	// Once an ingest writes, the same read-only store sees it.
	if _, err := w.Ingest(ctx, fixtureSources()[0]); err != nil {
		t.Fatal(err)
	}
	sr, err = memory.Default(ro).Search(ctx, abi.SearchRequest{Query: "brake", K: 5})
	if err != nil || len(sr.Chunks) != 1 || sr.Hint != "" {
		t.Errorf("after ingest: %+v %v", sr, err)
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	_, path := openFixture(t)
	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	before, _ := os.ReadFile(path)
	_, err = ro.Ingest(context.Background(), fixtureSources()[0])
	if !errors.Is(err, memtree.ErrReadOnly) {
		t.Errorf("Ingest on read-only store: %v", err)
	}
	if _, err := ro.EmbedMissing(context.Background(), nil); !errors.Is(err, memtree.ErrReadOnly) {
		t.Errorf("EmbedMissing on read-only store: %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("read-only store file changed")
	}
}

func TestConcurrentReadersWithWriter(t *testing.T) {
	st, path := openFixture(t)
	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				var err error
				switch (g + i) % 4 {
				case 0:
					var r *abi.SearchResult
					r, err = memory.Default(ro).Search(ctx, abi.SearchRequest{Query: "brake", K: 5})
					if err == nil && len(r.Chunks) != 1 {
						err = fmt.Errorf("search found %d", len(r.Chunks))
					}
				case 1:
					_, err = memory.Default(ro).Recall(ctx, abi.RecallRequest{Query: "automobile repair", K: 5})
				case 2:
					var r *abi.ListResult
					r, err = memory.Default(ro).ListChunks(ctx, abi.ChunksListRequest{K: 50})
					if err == nil && r.Total < 4 {
						err = fmt.Errorf("list total %d", r.Total)
					}
				case 3:
					_, err = memory.Default(ro).ListSources(ctx, abi.SourcesListRequest{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	// The writer keeps ingesting new sources meanwhile.
	for i := 0; i < 20; i++ {
		src := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: fmt.Sprintf("doc:n%d.md", i), Title: "note",
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("n%d.md", i), TimestampMS: int64(i), Text: fmt.Sprintf("note number %d about gardening", i)}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	res, _ := memory.Default(ro).ListChunks(ctx, abi.ChunksListRequest{K: 5, Query: "gardening"})
	if res.Total != 20 {
		t.Errorf("reader sees %d of 20 new chunks", res.Total)
	}
}

// browseStore builds a store whose chunks share timestamps across sources (ties in
// the time order), with a frequent handle (@team), a rare one (@rare) and a word
// ("quokka") in some chunks.
func browseStore(t *testing.T) *memtree.Store {
	t.Helper()
	st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	base := ms("2026-01-01T00:00:00Z")
	for s := 0; s < 12; s++ {
		src := memtree.SourceInput{Kind: []string{memtree.KindChat, memtree.KindEmail, memtree.KindDocument}[s%3],
			SourceID: fmt.Sprintf("chat:room-%02d", s), Title: fmt.Sprintf("room %d", s)}
		for m := 0; m < 10; m++ {
			text := fmt.Sprintf("note %d from room %d for @team", m, s)
			if (s+m)%7 == 0 {
				text += " ping @rare"
			}
			if (s*m)%3 == 1 {
				text += " a quokka appeared"
			}
			// Three hours apart (one chunk per message in chat); rooms s and s+1 share times.
			src.Messages = append(src.Messages, memtree.MessageInput{Ref: fmt.Sprintf("r%d-%d", s, m), Author: "Ann",
				TimestampMS: base + int64(s/2*100+m)*3*3600*1000, Text: text})
		}
		if _, err := st.Ingest(context.Background(), src); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func pageIDs(t *testing.T, st *memtree.Store, req abi.ChunksListRequest) (int, []string) {
	t.Helper()
	res, err := memory.Default(st).ListChunks(context.Background(), req)
	if err != nil {
		t.Fatalf("ListChunks(%+v): %v", req, err)
	}
	var ids []string
	for _, h := range res.Chunks {
		ids = append(ids, h.ID)
	}
	return res.Total, ids
}

// The index-ordered browse paths (entity only, words only) page exactly like the
// generic SQL path (the same filter plus a kind filter naming every kind).
func TestListChunksIndexPathsMatchGenericOrder(t *testing.T) {
	st := browseStore(t)
	all := []string{"chat", "email", "document"}
	since, until := ms("2026-01-02T00:00:00Z"), ms("2026-03-01T00:00:00Z")
	cases := map[string]abi.ChunksListRequest{
		"frequent entity":      {EntityIDs: []string{"handle:TEAM"}},
		"rare entity":          {EntityIDs: []string{"handle:rare"}},
		"two entities":         {EntityIDs: []string{"handle:rare", "person:ann"}},
		"entity + time window": {EntityIDs: []string{"handle:team"}, SinceMS: &since, UntilMS: &until},
		"missing entity":       {EntityIDs: []string{"handle:nobody"}},
	}
	for name, req := range cases {
		for _, k := range []int{1, 3, 7} {
			for off := 0; off < 130; off += k {
				fast, generic := req, req
				fast.K, fast.Offset, generic.K, generic.Offset = k, off, k, off
				generic.SourceKinds = all
				ft, fids := pageIDs(t, st, fast)
				gt, gids := pageIDs(t, st, generic)
				if ft != gt || strings.Join(fids, ",") != strings.Join(gids, ",") {
					t.Fatalf("%s k=%d offset=%d: index path total %d %v, generic %d %v", name, k, off, ft, fids, gt, gids)
				}
			}
		}
	}
	// Words only (a full-text phrase match) against the substring path over every kind.
	for _, k := range []int{2, 5} {
		for off := 0; off < 60; off += k {
			ft, fids := pageIDs(t, st, abi.ChunksListRequest{Query: "quokka", K: k, Offset: off})
			gt, gids := pageIDs(t, st, abi.ChunksListRequest{Query: "quokka", SourceKinds: all, K: k, Offset: off})
			if ft == 0 || ft != gt || strings.Join(fids, ",") != strings.Join(gids, ",") {
				t.Fatalf("quokka k=%d offset=%d: index path total %d %v, substring path %d %v", k, off, ft, fids, gt, gids)
			}
		}
	}
}

// The per-generation caches (sources, chunk times) see another connection's ingest.
func TestBrowseCachesSeeAnotherWritersIngest(t *testing.T) {
	ctx := context.Background()
	w, path := openFixture(t)
	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	before, err := memory.Default(ro).ListSources(ctx, abi.SourcesListRequest{UserEmailHint: "alice@kestrel.example"})
	if err != nil || len(before.Sources) != 3 {
		t.Fatalf("ListSources before: %+v %v", before, err)
	}
	before.Sources[0].Title = "mutated by the caller" // must not leak into the cache
	q := abi.ChunksListRequest{Query: "wombat", K: 5}
	if tot, _ := pageIDs(t, ro, q); tot != 0 {
		t.Fatalf("wombat before ingest: total %d", tot)
	}
	ent := abi.ChunksListRequest{EntityIDs: []string{"person:dana ruiz"}, K: 10}
	entBefore, _ := pageIDs(t, ro, ent)
	_, err = w.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindChat, SourceID: "slack:#zoo", Title: "#zoo",
		Messages: []memtree.MessageInput{{Ref: "zoo:1", Author: "Dana Ruiz", TimestampMS: ms("2026-04-01T10:00:00Z"), Text: "A wombat visited the office"}}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := memory.Default(ro).ListSources(ctx, abi.SourcesListRequest{UserEmailHint: "alice@kestrel.example"})
	if err != nil || len(after.Sources) != 4 || after.Sources[0].SourceID != "slack:#zoo" {
		t.Fatalf("ListSources after another writer's ingest: %+v %v", after, err)
	}
	for _, s := range after.Sources {
		if s.Title == "mutated by the caller" {
			t.Error("a caller's change to a ListSources result leaked into the cache")
		}
	}
	if tot, ids := pageIDs(t, ro, q); tot != 1 || len(ids) != 1 {
		t.Errorf("wombat after ingest: total %d ids %v, want 1", tot, ids)
	}
	if entAfter, _ := pageIDs(t, ro, ent); entAfter != entBefore+1 {
		t.Errorf("person:dana ruiz total %d after ingest, want %d", entAfter, entBefore+1)
	}
}

// Search ranks chunks holding more of the query words above chunks holding fewer,
// even when bm25 alone would put a short one-word chunk first.
func TestSearchCoordinationLevels(t *testing.T) {
	st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	filler := strings.Repeat("the weekly notes mention many other things worth reading later. ", 20)
	docs := map[string]string{
		"doc:two-words": "Zebra sighting report by %s. " + filler + " A quokka was also seen by %s.",
		"doc:one-word":  "Narwhal narwhal narwhal, says %s%.0s.",
		"doc:none":      "%s%.0s" + filler,
	}
	for id, text := range docs {
		for i, w := range []string{"Alpha", "Beta", "Gamma"} { // distinct, so none is demoted as a duplicate
			_, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindDocument, SourceID: fmt.Sprintf("%s-%d", id, i),
				Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("%s-%d", id, i), TimestampMS: ms("2026-01-01T00:00:00Z"), Text: fmt.Sprintf(text, w, w)}}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 20; i++ {
		if _, err := st.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindDocument, SourceID: fmt.Sprintf("doc:pad-%d", i),
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("pad-%d", i), TimestampMS: ms("2026-01-02T00:00:00Z"), Text: fmt.Sprintf("padding text number %d", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "zebra quokka narwhal", K: 6})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Chunks {
		got = append(got, h.SourceID)
	}
	if len(got) != 6 {
		t.Fatalf("hits = %v, want the 3 two-word and the 3 one-word chunks", got)
	}
	for i, id := range got {
		want := "doc:two-words"
		if i >= 3 {
			want = "doc:one-word"
		}
		if !strings.HasPrefix(id, want) {
			t.Errorf("hit %d = %s, want a %s chunk (hits %v)", i, id, want, got)
		}
	}
}
