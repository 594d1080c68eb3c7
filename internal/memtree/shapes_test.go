package memtree_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// messageOf returns the hit message citing ref among hits, failing when none does.
func messageOf(t *testing.T, hits []abi.ChunkHit, ref string) abi.HitMessage {
	t.Helper()
	for _, h := range hits {
		for _, m := range h.Messages {
			if m.Ref == ref {
				return m
			}
		}
	}
	t.Fatalf("no hit message cites %s in %+v", ref, hits)
	return abi.HitMessage{}
}

// checkMessageOrder asserts that every hit's messages follow its cited refs:
// source_ref first, then the rest of source_refs.
func checkMessageOrder(t *testing.T, hits []abi.ChunkHit) {
	t.Helper()
	for _, h := range hits {
		var want []string
		seen := map[string]bool{}
		for _, r := range append([]string{h.SourceRef}, h.SourceRefs...) {
			if r != "" && !seen[r] {
				seen[r] = true
				want = append(want, r)
			}
		}
		if len(want) > abi.MaxHitMessages {
			want = want[:abi.MaxHitMessages]
		}
		var got []string
		for _, m := range h.Messages {
			got = append(got, m.Ref)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("hit %s: messages cite %q, want the cited refs in order %q", h.ID, got, want)
		}
	}
}

func TestHitMessagesFromChunkText(t *testing.T) {
	st, _ := openFixture(t)
	ctx := context.Background()

	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "rotors labour", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkMessageOrder(t, res.Chunks)
	if res.MessageTextMaxChars != abi.HitMessageMaxChars {
		t.Errorf("message_text_max_chars = %d, want %d for a few messages", res.MessageTextMaxChars, abi.HitMessageMaxChars)
	}
	// The thread's second (and last) mail: author from its From line, the exact
	// time of the chunk's last message.
	m := messageOf(t, res.Chunks, "brakes-2@garage.example")
	want := abi.HitMessage{Ref: "brakes-2@garage.example", Author: "Bob Stone <bob@garage.example>", Time: "2026-02-04T10:30:00Z",
		TimePrecision: abi.PrecisionMS, Text: "Pads and rotors come to 420 EUR including labour. See https://garage.example/quote/77. #brakes"}
	if m != want {
		t.Errorf("second mail:\n got %+v\nwant %+v", m, want)
	}
	// The first mail of a chunk has the chunk's exact time.
	res, err = memory.Default(st).Search(ctx, abi.SearchRequest{Query: "grinding noise", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	m = messageOf(t, res.Chunks, "brakes-1@kestrel.example")
	if m.Author != "Alice Martin <alice@kestrel.example>" || m.Time != "2026-02-03T09:00:00Z" || m.TimePrecision != abi.PrecisionMS ||
		!strings.HasPrefix(m.Text, "Hi Bob,") || strings.Contains(m.Text, "Subject:") || m.Truncated {
		t.Errorf("first mail: %+v", m)
	}

	// Chat: author and minute from the rendered line, the text without them.
	res, err = memory.Default(st).Search(ctx, abi.SearchRequest{Query: "rollout billing migration", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkMessageOrder(t, res.Chunks)
	m = messageOf(t, res.Chunks, "slack:phoenix:2")
	want = abi.HitMessage{Ref: "slack:phoenix:2", Author: "Erik Lund", Time: "2026-03-02T14:10:00Z", TimePrecision: abi.PrecisionMS,
		Text: "Reviewed. The rollout slips one week because of the billing migration."}
	if m != want {
		t.Errorf("chat message:\n got %+v\nwant %+v", m, want)
	}

	// A document passage: no author, the document's time, no title line.
	rec, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: "tram Belem tower", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkMessageOrder(t, rec.Chunks)
	m = messageOf(t, rec.Chunks, "docs/notes/lisbon.md")
	if m.Author != "" || m.Time != "2026-01-20T12:00:00Z" || m.TimePrecision != abi.PrecisionMS ||
		strings.HasPrefix(m.Text, "Lisbon trip") || !strings.Contains(m.Text, "Belem tower") {
		t.Errorf("document passage: %+v", m)
	}
	if rec.MessageTextMaxChars == 0 {
		t.Error("recall result does not state its message text bound")
	}

	// A message in the middle of a chunk: the minute of its chat line, the day of
	// its mail's Date line.
	for _, src := range []memtree.SourceInput{
		{Kind: memtree.KindChat, SourceID: "slack:#mid", Title: "#mid", Provider: "slack", Messages: []memtree.MessageInput{
			{Ref: "mid:1", Author: "Ann", TimestampMS: ms("2026-05-01T10:00:00Z"), Text: "morning"},
			{Ref: "mid:2", Author: "Ben", TimestampMS: ms("2026-05-01T10:05:31Z"), Text: "the walrus escaped the aquarium"},
			{Ref: "mid:3", Author: "Ann", TimestampMS: ms("2026-05-01T10:07:00Z"), Text: "oh no"}}},
		{Kind: memtree.KindEmail, SourceID: "email:mid-1@x.example", Title: "Penguins", Provider: "mbox", Messages: []memtree.MessageInput{
			{Ref: "mid-1@x.example", Author: "Ann", AuthorAddr: "ann@x.example", TimestampMS: ms("2026-05-02T08:00:00Z"), Text: "Any news?"},
			{Ref: "mid-2@x.example", Author: "Ben", AuthorAddr: "ben@x.example", TimestampMS: ms("2026-05-02T09:12:13Z"), Text: "The penguin colony moved north."},
			{Ref: "mid-3@x.example", Author: "Ann", AuthorAddr: "ann@x.example", TimestampMS: ms("2026-05-03T07:00:00Z"), Text: "Thanks!"}}},
	} {
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ query, ref, author, time, precision, text string }{
		{"walrus aquarium", "mid:2", "Ben", "2026-05-01T10:05:00Z", abi.PrecisionMinute, "the walrus escaped the aquarium"},
		{"penguin colony", "mid-2@x.example", "Ben <ben@x.example>", "2026-05-02T00:00:00Z", abi.PrecisionDay, "The penguin colony moved north."},
	} {
		res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: c.query, K: 3})
		if err != nil {
			t.Fatal(err)
		}
		m := messageOf(t, res.Chunks, c.ref)
		if m.Author != c.author || m.Time != c.time || m.TimePrecision != c.precision || m.Text != c.text {
			t.Errorf("%s: %+v", c.query, m)
		}
	}
}

func TestHitMessagesFromStoredMessages(t *testing.T) {
	st, _ := openEmpty(t)
	ctx := context.Background()
	long := strings.Repeat("the zeppelin hangar lease renewal needs a signature ", 60) // ~3,100 characters
	src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: "telegram:crew/2026-04", Title: "crew (2026-04)", Provider: "telegram", Merge: true,
		Messages: []memtree.MessageInput{
			{Ref: "tg:1", Author: "", AuthorAddr: "@ines", TimestampMS: ms("2026-04-01T08:15:42.250Z"), Text: "Who has the zeppelin hangar keys?"},
			{Ref: "tg:2", Author: "Jonas", TimestampMS: ms("2026-04-01T08:16:03Z"), Text: long},
		}}
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "zeppelin hangar", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	checkMessageOrder(t, res.Chunks)
	m := messageOf(t, res.Chunks, "tg:1")
	want := abi.HitMessage{Ref: "tg:1", Author: "@ines", Time: "2026-04-01T08:15:42.25Z", TimePrecision: abi.PrecisionMS, Text: "Who has the zeppelin hangar keys?"}
	if m != want {
		t.Errorf("stored message:\n got %+v\nwant %+v", m, want)
	}
	m = messageOf(t, res.Chunks, "tg:2")
	if m.Author != "Jonas" || m.Time != "2026-04-01T08:16:03Z" || !m.Truncated || !strings.HasSuffix(m.Text, "…") ||
		utf8.RuneCountInString(m.Text) > res.MessageTextMaxChars || !strings.HasPrefix(m.Text, "the zeppelin hangar") {
		t.Errorf("long stored message (bound %d): %+v", res.MessageTextMaxChars, m)
	}
}

func TestHitMessageTextBoundShrinksWithMany(t *testing.T) {
	st, _ := openEmpty(t)
	ctx := context.Background()
	w, err := st.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 50 channels of 8 long messages each: 400 cited messages share the budget.
	body := strings.Repeat("quartz ", 30)
	for i := 0; i < 50; i++ {
		src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: fmt.Sprintf("slack:#c%d", i), Title: "c", Provider: "slack"}
		for j := 0; j < 8; j++ {
			src.Messages = append(src.Messages, memtree.MessageInput{Ref: fmt.Sprintf("c%d:%d", i, j), Author: "ann",
				TimestampMS: ms("2026-01-01T00:00:00Z") + int64(j*1000), Text: fmt.Sprintf("%d %s", j, body)})
		}
		p, err := memtree.Prepare(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "quartz", K: 50})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range res.Chunks {
		n += len(h.Messages)
		for _, m := range h.Messages {
			if utf8.RuneCountInString(m.Text) > res.MessageTextMaxChars {
				t.Fatalf("message text of %d characters above the stated bound %d", utf8.RuneCountInString(m.Text), res.MessageTextMaxChars)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d cited messages in %d hits; the test needs many", n, len(res.Chunks))
	}
	if want := max(abi.HitMessageMinChars, abi.HitMessageBudgetChars/n); res.MessageTextMaxChars != want {
		t.Errorf("bound with %d messages = %d, want %d", n, res.MessageTextMaxChars, want)
	}
	b, _ := json.Marshal(res)
	if len(b) > abi.MaxResultBytes {
		t.Errorf("result of %d bytes above %d", len(b), abi.MaxResultBytes)
	}
}

// manySources writes n one-message sources (kinds in turn chat, email, document),
// source i last active at base+i minutes, and returns the store.
func manySources(t testing.TB, st *memtree.Store, n int) {
	t.Helper()
	ctx := context.Background()
	w, err := st.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{memtree.KindChat, memtree.KindEmail, memtree.KindDocument}
	for i := 0; i < n; i++ {
		kind := kinds[i%3]
		id := fmt.Sprintf("%s:src-%05d", kind, i)
		title := fmt.Sprintf("Source %05d %s", i, []string{"alpha", "beta", "gamma", "delta"}[i%4])
		src := memtree.SourceInput{Kind: kind, SourceID: id, Title: title, Provider: "test",
			Messages: []memtree.MessageInput{{Ref: id + "/m", Author: "ann", TimestampMS: ms("2026-01-01T00:00:00Z") + int64(i)*60000,
				Text: fmt.Sprintf("note number %d #t%d", i, i)}}}
		p, err := memtree.Prepare(src)
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

func TestListSourcesPages(t *testing.T) {
	st, path := openEmpty(t)
	ctx := context.Background()
	const n = 1234
	manySources(t, st, n)
	api := memory.Default(st) // one API: its named source lists persist across calls

	// Unfiltered: pages of 50 walk every source once, newest first.
	var ids []string
	offset, pages := 0, 0
	for {
		res, err := api.ListSources(ctx, abi.SourcesListRequest{K: 50, Offset: offset})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if res.Total != n {
			t.Fatalf("page %d: total %d, want %d", pages, res.Total, n)
		}
		for _, s := range res.Sources {
			ids = append(ids, s.SourceID)
		}
		if res.Next == 0 {
			if len(res.Sources) == 0 || offset+len(res.Sources) != n {
				t.Fatalf("last page at offset %d has %d sources; total %d", offset, len(res.Sources), n)
			}
			break
		}
		if res.Next != offset+50 || len(res.Sources) != 50 {
			t.Fatalf("page at %d: %d sources, next %d", offset, len(res.Sources), res.Next)
		}
		offset = res.Next
	}
	if len(ids) != n || pages != (n+49)/50 {
		t.Fatalf("%d sources in %d pages", len(ids), pages)
	}
	for i, id := range ids {
		if want := fmt.Sprintf("src-%05d", n-1-i); !strings.HasSuffix(id, want) {
			t.Fatalf("source %d is %s, want …%s (most recent first)", i, id, want)
		}
	}

	// Kinds and a display-name query (case-insensitive) narrow total and pages alike.
	res, err := api.ListSources(ctx, abi.SourcesListRequest{Kinds: []string{"Email"}, Query: "GAMMA", K: 10, Offset: 20})
	if err != nil {
		t.Fatal(err)
	}
	wantTotal := 0
	for i := 0; i < n; i++ {
		if i%3 == 1 && i%4 == 2 {
			wantTotal++
		}
	}
	if res.Total != wantTotal || len(res.Sources) != 10 || res.Next != 30 {
		t.Fatalf("email+gamma: total %d (want %d), %d sources, next %d", res.Total, wantTotal, len(res.Sources), res.Next)
	}
	for _, s := range res.Sources {
		if s.SourceKind != "email" || !strings.Contains(s.DisplayName, "gamma") {
			t.Errorf("email+gamma page holds %+v", s)
		}
	}
	// A first page while the source list is not loaded (read through the index)
	// is the same page as one cut from the loaded list.
	for _, req := range []abi.SourcesListRequest{{K: 10, Kinds: []string{"email", "document"}, Offset: 40}, {K: 50, Offset: 900}, {K: 3}} {
		cold, err := memtree.OpenReadOnly(path)
		if err != nil {
			t.Fatal(err)
		}
		a, err := memory.Default(cold).ListSources(ctx, req)
		cold.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, err := api.ListSources(ctx, abi.SourcesListRequest{K: 50, Query: "0"}) // loads the list (every name holds a 0)
		if err != nil || b.Total != n {
			t.Fatalf("query loads the list: %v, total %d", err, b.Total)
		}
		if b, err = api.ListSources(ctx, req); err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) || len(a.Sources) == 0 {
			t.Errorf("%+v:\nfirst page read through the index: %s\nfrom the loaded list:           %s", req, ja, jb)
		}
	}
	// K 0 (a module built before paging) gets the largest page; past the end, none.
	if res, err = api.ListSources(ctx, abi.SourcesListRequest{}); err != nil || len(res.Sources) != abi.MaxK || res.Next != abi.MaxK {
		t.Fatalf("k 0: %v, %d sources, next %d", err, len(res.Sources), res.Next)
	}
	if res, err = api.ListSources(ctx, abi.SourcesListRequest{K: 5, Offset: n}); err != nil || len(res.Sources) != 0 || res.Next != 0 || res.Total != n {
		t.Fatalf("past the end: %v, %+v", err, res)
	}
	for _, bad := range []abi.SourcesListRequest{
		{K: 51}, {K: -1}, {K: 5, Offset: -1}, {K: 5, Offset: abi.MaxOffset + 1},
		{K: 5, Kinds: make([]string, abi.MaxFilterItems+1)}, {K: 5, Query: strings.Repeat("q", abi.MaxQueryChars+1)},
	} {
		if _, err := api.ListSources(ctx, bad); !errors.Is(err, memtree.ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", bad, err)
		}
	}
}

func TestTopEntitiesAndBrowsePages(t *testing.T) {
	st, _ := openEmpty(t)
	ctx := context.Background()
	manySources(t, st, 300)

	first, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{K: 50})
	if err != nil {
		t.Fatal(err)
	}
	if first.Total < 300 || len(first.Entities) != 50 || first.Next != 50 {
		t.Fatalf("top entities: total %d, %d entities, next %d", first.Total, len(first.Entities), first.Next)
	}
	seen := map[string]bool{}
	got := 0
	for off := 0; ; {
		res, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{K: 50, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Entities {
			if seen[e.EntityID] {
				t.Fatalf("entity %s on two pages", e.EntityID)
			}
			seen[e.EntityID] = true
			got++
		}
		if res.Next == 0 {
			break
		}
		off = res.Next
	}
	if got != first.Total {
		t.Fatalf("pages hold %d entities, total says %d", got, first.Total)
	}
	docs, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: "person", K: 5})
	if err != nil || docs.Total < 1 {
		t.Fatalf("person total: %v, %+v", err, docs)
	}

	br, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{SourceKinds: []string{"chat"}, K: 30, Offset: 60})
	if err != nil {
		t.Fatal(err)
	}
	if br.Total != 100 || len(br.Chunks) != 30 || br.Next != 90 {
		t.Fatalf("browse chat: total %d, %d chunks, next %d", br.Total, len(br.Chunks), br.Next)
	}
	if br, err = memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{SourceKinds: []string{"chat"}, K: 30, Offset: 90}); err != nil || br.Next != 0 || len(br.Chunks) != 10 {
		t.Fatalf("browse chat last page: %v, %d chunks, next %d", err, len(br.Chunks), br.Next)
	}
	// Too many filter values are an argument error, never SQLite's variable limit.
	many := make([]string, 100000)
	for i := range many {
		many[i] = fmt.Sprintf("topic:t%d", i)
	}
	_, err = memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{EntityIDs: many, K: 10})
	if !errors.Is(err, memtree.ErrInvalid) || !strings.Contains(err.Error(), "entity_ids has 100000 values, at most 100 are allowed") {
		t.Errorf("100,000 entity ids: %v", err)
	}
	_, err = memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{SourceIDs: many[:101], K: 10})
	if !errors.Is(err, memtree.ErrInvalid) {
		t.Errorf("101 source ids: %v", err)
	}
	if _, err = memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{EntityIDs: many[:100], SourceIDs: many[:100], K: 10}); err != nil {
		t.Errorf("100 + 100 filter values: %v", err)
	}
}
