package memtree_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// forgetSources are the fixture sources with the chat channel written as a Merge
// source (so it has source_messages rows) and a second mail thread sharing people
// with the first, so forgetting one thread lowers entity counts without dropping them.
func forgetSources() []memtree.SourceInput {
	srcs := fixtureSources()
	for i := range srcs {
		if srcs[i].Kind == memtree.KindChat {
			srcs[i].Merge = true
		}
	}
	return append(srcs, memtree.SourceInput{
		Kind: memtree.KindEmail, SourceID: "email:tyres-1@kestrel.example", Title: "Winter tyres",
		Provider: "mbox", Origin: "/exports/mail/tyres.mbox message 1",
		Messages: []memtree.MessageInput{{Ref: "tyres-1@kestrel.example", Author: "Alice Martin", AuthorAddr: "alice@kestrel.example",
			To: []string{"Bob Stone <bob@garage.example>"}, Subject: "Winter tyres", TimestampMS: ms("2026-02-10T09:00:00Z"),
			Text: "Bob, can you also fit the winter tyres when the brake pads are done? #brakes"}},
	})
}

// storeDump is every row a source leaves in the store, in a comparable form.
type storeDump struct {
	Sources, Chunks, Summaries, Entities, Links, Messages, Vectors []string
	FTSChunks, FTSSummaries                                        int
}

func dumpStore(t *testing.T, path string) storeDump {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := func(q string) []string {
		r, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer r.Close()
		var out []string
		for r.Next() {
			var s string
			if err := r.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	var d storeDump
	d.Sources = rows(`SELECT kind||'|'||source_id||'|'||chunk_count||'|'||first_ms||'|'||last_ms FROM sources ORDER BY 1`)
	d.Chunks = rows(`SELECT id||'|'||source_id||'|'||seq FROM chunks ORDER BY 1`)
	d.Summaries = rows(`SELECT id FROM summaries ORDER BY 1`)
	d.Entities = rows(`SELECT id||'|'||kind||'|'||ref_count||'|'||last_seen FROM entities ORDER BY 1`)
	d.Links = rows(`SELECT ce.entity_id||'|'||c.id FROM chunk_entities ce JOIN chunks c ON c.rowid=ce.chunk_rowid ORDER BY 1`)
	d.Messages = rows(`SELECT s.source_id||'|'||m.ref FROM source_messages m JOIN sources s ON s.rowid=m.source_rowid ORDER BY 1`)
	d.Vectors = rows(`SELECT node_id FROM vectors ORDER BY 1`)
	// Rows the full-text indexes hold (what a MATCH can find), and their integrity.
	if err := db.QueryRow(`SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'brake OR launch OR lisbon OR tyres OR bob OR alice'`).Scan(&d.FTSChunks); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH 'brake OR launch OR lisbon OR tyres OR bob OR alice'`).Scan(&d.FTSSummaries); err != nil {
		t.Fatal(err)
	}
	return d
}

// ftsIntegrity runs FTS5's integrity-check on both indexes of the store at path.
func ftsIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')`,
		`INSERT INTO summaries_fts(summaries_fts) VALUES('integrity-check')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

func ingestAll(t *testing.T, st *memtree.Store, srcs []memtree.SourceInput, skip string) {
	t.Helper()
	for _, src := range srcs {
		if src.SourceID == skip {
			continue
		}
		if _, err := st.Ingest(context.Background(), src); err != nil {
			t.Fatalf("Ingest %s: %v", src.SourceID, err)
		}
	}
}

// TestForgetRemovesOneSourceAndNothingElse forgets one mail thread and compares
// the store, row by row, with a store that never held it; then re-ingests it and
// compares with the original.
func TestForgetRemovesOneSourceAndNothingElse(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	srv := ollamaServer(t, 32, &calls)
	defer srv.Close()
	emb := embed.NewOllama(srv.URL, "toy-bag", 5*time.Second)
	const gone = "email:brakes-1@kestrel.example"

	full, fullPath := openEmpty(t)
	ingestAll(t, full, forgetSources(), "")
	if _, err := full.EmbedMissing(ctx, emb); err != nil {
		t.Fatal(err)
	}
	before := dumpStore(t, fullPath)

	want, wantPath := openEmpty(t)
	ingestAll(t, want, forgetSources(), gone)
	if _, err := want.EmbedMissing(ctx, emb); err != nil {
		t.Fatal(err)
	}
	wantDump := dumpStore(t, wantPath)

	// A dry run counts and changes nothing.
	dry, err := full.Forget(ctx, memtree.ForgetFilter{SourceIDs: []string{gone, "email:nope"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := dumpStore(t, fullPath); !reflect.DeepEqual(got, before) {
		t.Fatalf("dry run changed the store")
	}
	if len(dry.Sources) != 1 || dry.Sources[0].SourceID != gone || !reflect.DeepEqual(dry.NotFound, []string{"email:nope"}) {
		t.Fatalf("dry run selected %+v, not found %v", dry.Sources, dry.NotFound)
	}

	res, err := full.Forget(ctx, memtree.ForgetFilter{SourceIDs: []string{gone}}, false)
	if err != nil {
		t.Fatal(err)
	}
	got := dumpStore(t, fullPath)
	if !reflect.DeepEqual(got, wantDump) {
		t.Errorf("after forget the store differs from one that never held %s:\n got %+v\nwant %+v", gone, got, wantDump)
	}
	ftsIntegrity(t, fullPath)
	// The counts say what went.
	removedChunks := len(before.Chunks) - len(wantDump.Chunks)
	removedVectors := len(before.Vectors) - len(wantDump.Vectors)
	if res.Chunks != removedChunks || res.Vectors != removedVectors || res.Chunks == 0 || res.Vectors == 0 {
		t.Errorf("forget counted %d chunks, %d vectors; the store lost %d, %d", res.Chunks, res.Vectors, removedChunks, removedVectors)
	}
	if res.Chunks != dry.Chunks || res.Vectors != dry.Vectors || res.Summaries != dry.Summaries ||
		res.EntitiesDropped != dry.EntitiesDropped || res.EntitiesUpdated != dry.EntitiesUpdated {
		t.Errorf("dry run %+v and real run %+v disagree", dry, res)
	}
	if res.EntitiesUpdated == 0 || res.EntitiesDropped == 0 {
		t.Errorf("want both lowered (alice, bob) and dropped (carol) entities, got %+v", res)
	}
	// Reads see the change (the store generation moved).
	hits, err := memory.Default(full).Search(ctx, abi.SearchRequest{Query: "grinding noise", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits.Chunks {
		if h.SourceID == gone {
			t.Errorf("search still finds the forgotten source: %+v", h)
		}
	}

	// Ingesting the same input again brings it back as it was.
	ingestAll(t, full, forgetSources()[:1], "")
	if _, err := full.EmbedMissing(ctx, emb); err != nil {
		t.Fatal(err)
	}
	if again := dumpStore(t, fullPath); !reflect.DeepEqual(again, before) {
		t.Errorf("re-ingest did not restore the store:\n got %+v\nwant %+v", again, before)
	}
	ftsIntegrity(t, fullPath)
}

// TestForgetMergeSourceAndSelectors forgets a chat (Merge) source by --root-style
// origin and by date, and refuses an empty filter and a read-only store.
func TestForgetMergeSourceAndSelectors(t *testing.T) {
	ctx := context.Background()
	st, path := openEmpty(t)
	srcs := forgetSources()
	for i := range srcs {
		if srcs[i].Kind == memtree.KindChat {
			srcs[i].Origin = "/exports/slack/phoenix"
		}
	}
	ingestAll(t, st, srcs, "")

	if _, err := st.Forget(ctx, memtree.ForgetFilter{}, false); !errors.Is(err, memtree.ErrInvalid) {
		t.Errorf("empty filter: err = %v, want ErrInvalid", err)
	}
	// A root matches the file and what is under it, not a sibling with the same prefix.
	res, err := st.Forget(ctx, memtree.ForgetFilter{Root: "/exports/slack"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sources) != 1 || res.Sources[0].SourceID != "slack:#phoenix" || res.Messages != 3 {
		t.Fatalf("root forget: %+v", res)
	}
	d := dumpStore(t, path)
	if len(d.Messages) != 0 {
		t.Errorf("source_messages left: %v", d.Messages)
	}
	if r, _ := st.Forget(ctx, memtree.ForgetFilter{Root: "/exports/sla"}, true); len(r.Sources) != 0 {
		t.Errorf("a path prefix that is not a folder matched: %+v", r.Sources)
	}
	// --before: only sources whose last activity is older.
	res, err = st.Forget(ctx, memtree.ForgetFilter{Before: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sources) != 1 || res.Sources[0].SourceID != "doc:notes/lisbon.md" {
		t.Errorf("before forget: %+v", res.Sources)
	}
	ftsIntegrity(t, path)
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(stats.Sources) != "map[email:2]" {
		t.Errorf("sources left: %v", stats.Sources)
	}

	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Forget(ctx, memtree.ForgetFilter{SourceIDs: []string{"x"}}, false); !errors.Is(err, memtree.ErrReadOnly) {
		t.Errorf("read-only store: err = %v", err)
	}
}

// TestStatusOfKnownStore checks every count Status reports on the fixture store.
func TestStatusOfKnownStore(t *testing.T) {
	ctx := context.Background()
	st, path := openEmpty(t)
	none, err := memtree.Status(ctx, path+".missing")
	if err != nil || none.Exists || none.TotalChunks != 0 {
		t.Fatalf("missing store: %+v, %v", none, err)
	}
	ingestAll(t, st, forgetSources(), "")
	var calls atomic.Int32
	srv := ollamaServer(t, 16, &calls)
	defer srv.Close()
	n, err := st.EmbedMissing(ctx, embed.NewOllama(srv.URL, "toy-bag", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rec := memtree.IngestRecord{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Roots: []string{"/exports/mail"}, Summary: "ingest: 2 files"}
	if err := st.RecordIngest(ctx, rec); err != nil {
		t.Fatal(err)
	}
	s, err := memtree.Status(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	d := dumpStore(t, path)
	if !s.Exists || s.Bytes <= 0 || s.SchemaVersion != s.BinarySchemaVersion || s.SchemaVersion < 4 {
		t.Errorf("file fields: %+v", s)
	}
	if fmt.Sprint(s.Sources) != "map[chat:1 document:1 email:2]" || s.TotalChunks != len(d.Chunks) {
		t.Errorf("sources %v, chunks %d (store has %d)", s.Sources, s.TotalChunks, len(d.Chunks))
	}
	if s.Summaries != len(d.Summaries) || s.Entities != len(d.Entities) {
		t.Errorf("summaries %d entities %d, store has %d, %d", s.Summaries, s.Entities, len(d.Summaries), len(d.Entities))
	}
	if s.Vectors["toy-bag/16"] != n || n == 0 {
		t.Errorf("vectors %v, embedded %d", s.Vectors, n)
	}
	if s.LastIngest == nil || !s.LastIngest.Time.Equal(rec.Time) || strings.Join(s.LastIngest.Roots, ",") != "/exports/mail" || s.LastIngest.Summary != rec.Summary {
		t.Errorf("last ingest %+v", s.LastIngest)
	}
}
