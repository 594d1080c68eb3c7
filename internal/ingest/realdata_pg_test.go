package ingest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pgstore"
	"github.com/openhuman/openhuman-core/internal/pgstore/pgtest"
)

// TestRealDataPostgres ingests every folder TestRealData evaluates (the real
// exports of ../shared/realdata, the fixtures and the patterns it writes) into a
// SQLite store and into a PostgreSQL database of a test cluster, through the
// same ingest.Run, and checks that both backends keep the same thing: per
// folder the same summary counts (files, sources, chunks, failures, skips,
// warnings), per kind the same sources, chunks and messages (distinct refs), and
// chunk for chunk the same rows (kind, source, seq, times, title, text, refs;
// a time taken from the clock during the ingest, as for a note with no date,
// counts as equal).
// TestRealData's judgement of what the SQLite store holds (>= 99 % of the
// messages, own text intact) therefore holds for PostgreSQL too.
//
// It ingests eighteen folders twice (9 s on a 2-core machine: 0.7 s of ingest
// into SQLite, 2.6 s into PostgreSQL, the rest one database per folder and the
// reading back), so it runs wherever PostgreSQL is installed (skipped saying so
// otherwise, failed under CI=true, as pgtest does), except with -short:
//
//	go test ./internal/ingest -run TestRealDataPostgres -v
func TestRealDataPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real-data comparison of the SQLite and PostgreSQL backends ingests every folder twice")
	}
	base := filepath.Join("..", "..", "..", "shared", "realdata")
	if d := os.Getenv("OPENHUMAN_REALDATA"); d != "" {
		base = d
	}
	var folders []evalFolderSpec
	if st, err := os.Stat(base); err == nil && st.IsDir() {
		folders = append(folders, realDataFolders...)
	} else {
		t.Log("../shared/realdata (or OPENHUMAN_REALDATA) is not there: only the fixtures and patterns this test writes are compared")
	}
	folders = append(folders, fixtureFolders(t)...)
	for _, p := range writePatternFolders(t) {
		folders = append(folders, evalFolderSpec{dir: p.dir, kind: p.kind, name: "patterns/" + filepath.Base(p.dir)})
	}
	cluster := pgtest.Start(t)
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-44s | %8s %8s | %8s %8s | %8s %8s | %6s %6s\n", "folder", "src lite", "src pg", "chk lite", "chk pg", "msg lite", "msg pg", "s lite", "s pg")
	var tot [6]int
	var totSecs [2]float64
	for i, f := range folders {
		dir := f.dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(base, filepath.FromSlash(f.dir))
		}
		name := f.dir
		if f.name != "" {
			name = f.name
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		dbPath := filepath.Join(t.TempDir(), "chunks.db")
		lite, err := memtree.Open(dbPath)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		liteSum, liteErr := ingest.Run(ctx, lite, []string{dir}, ingest.Options{})
		liteSecs := time.Since(start).Seconds()
		liteRun := [2]int64{start.UnixMilli(), time.Now().UnixMilli()}
		if err := lite.Close(); err != nil {
			t.Errorf("%s: close the SQLite store: %v", name, err)
		}
		url := cluster.Database(t, fmt.Sprintf("realdata_%d", i))
		pg, err := pgstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		pgSum, pgErr := ingest.Run(ctx, pg, []string{dir}, ingest.Options{})
		pgSecs := time.Since(start).Seconds()
		pgRun := [2]int64{start.UnixMilli(), time.Now().UnixMilli()}
		pg.Close()
		if (liteErr == nil) != (pgErr == nil) {
			t.Errorf("%s: ingest error on SQLite %v, on PostgreSQL %v", name, liteErr, pgErr)
		}
		if liteSum != nil && pgSum != nil {
			if l, p := summaryCounts(liteSum), summaryCounts(pgSum); l != p {
				t.Errorf("%s: summary on SQLite %s, on PostgreSQL %s", name, l, p)
			}
		}
		lrows, err := sqliteChunkRows(dbPath)
		if err != nil {
			t.Fatalf("%s: read the SQLite store: %v", name, err)
		}
		prows, err := pgChunkRows(ctx, url)
		if err != nil {
			t.Fatalf("%s: read the PostgreSQL database: %v", name, err)
		}
		cancel()
		// A note with no date of its own (an Evernote note without <created>) is
		// dated when it is ingested: the two runs differ in that alone.
		atIngest(lrows, liteRun)
		atIngest(prows, pgRun)
		lc, pc := countRows(lrows), countRows(prows)
		if fmt.Sprint(lc.byKind) != fmt.Sprint(pc.byKind) {
			t.Errorf("%s: per kind (sources/chunks/messages) on SQLite %v, on PostgreSQL %v", name, lc.byKind, pc.byKind)
		}
		compareChunkRows(t, name, lrows, prows)
		fmt.Fprintf(&table, "%-44s | %8d %8d | %8d %8d | %8d %8d | %6.1f %6.1f\n", clip(name, 44),
			lc.sources, pc.sources, len(lrows), len(prows), lc.messages, pc.messages, liteSecs, pgSecs)
		for j, n := range []int{lc.sources, pc.sources, len(lrows), len(prows), lc.messages, pc.messages} {
			tot[j] += n
		}
		totSecs[0] += liteSecs
		totSecs[1] += pgSecs
	}
	fmt.Fprintf(&table, "%-44s | %8d %8d | %8d %8d | %8d %8d | %6.1f %6.1f\n", "all", tot[0], tot[1], tot[2], tot[3], tot[4], tot[5], totSecs[0], totSecs[1])
	t.Log(table.String())
	if tot[2] == 0 {
		t.Error("no chunk stored in any folder: nothing was compared")
	}
}

// summaryCounts is what both backends' ingest summaries must agree on (the
// summary line also carries a duration, which differs).
func summaryCounts(s *ingest.Summary) string {
	return fmt.Sprintf("files %d sources %d chunks new %d unchanged %d removed %d entities %d contacts %d failures %d skipped %d warnings %d",
		s.Files, s.Sources, s.ChunksNew, s.ChunksUnchanged, s.ChunksRemoved, s.Entities, s.Contacts, s.Failures, s.Skipped, s.Warnings)
}

// chunkRow is one chunk as both backends store it.
type chunkRow struct {
	kind, sourceID      string
	seq                 int
	ts, tsStart, tsEnd  int64
	title, text, refs   string
	sourceRef, tagsJSON string
}

func (r chunkRow) key() string { return fmt.Sprintf("%s\x00%s\x00%06d", r.kind, r.sourceID, r.seq) }

const chunkRowsQuery = `SELECT kind, source_id, seq, ts, ts_start, ts_end, title, text, source_refs_json,
	COALESCE(source_ref, ''), tags_json FROM chunks`

func sqliteChunkRows(path string) ([]chunkRow, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(chunkRowsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []chunkRow
	for rows.Next() {
		var r chunkRow
		if err := rows.Scan(&r.kind, &r.sourceID, &r.seq, &r.ts, &r.tsStart, &r.tsEnd, &r.title, &r.text, &r.refs, &r.sourceRef, &r.tagsJSON); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sortRows(out)
	return out, rows.Err()
}

func pgChunkRows(ctx context.Context, url string) ([]chunkRow, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, chunkRowsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []chunkRow
	for rows.Next() {
		var r chunkRow
		if err := rows.Scan(&r.kind, &r.sourceID, &r.seq, &r.ts, &r.tsStart, &r.tsEnd, &r.title, &r.text, &r.refs, &r.sourceRef, &r.tagsJSON); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sortRows(out)
	return out, rows.Err()
}

// atIngest replaces the times that fall within run (the ingest's start and end,
// in milliseconds) by -1: a chunk dated by the clock of the run that stored it.
func atIngest(rs []chunkRow, run [2]int64) {
	in := func(ms *int64) {
		if *ms >= run[0] && *ms <= run[1] {
			*ms = -1
		}
	}
	for i := range rs {
		in(&rs[i].ts)
		in(&rs[i].tsStart)
		in(&rs[i].tsEnd)
	}
}

func sortRows(rs []chunkRow) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].key() < rs[j].key() })
}

// rowCounts are the sources, chunks and messages (distinct refs) of a store,
// overall and per kind ("sources/chunks/messages").
type rowCounts struct {
	sources, messages int
	byKind            map[string]string
}

func countRows(rs []chunkRow) rowCounts {
	type kc struct {
		sources, refs map[string]bool
		chunks        int
	}
	kinds := map[string]*kc{}
	for _, r := range rs {
		k := kinds[r.kind]
		if k == nil {
			k = &kc{sources: map[string]bool{}, refs: map[string]bool{}}
			kinds[r.kind] = k
		}
		k.sources[r.sourceID] = true
		k.chunks++
		var refs []string
		if err := json.Unmarshal([]byte(r.refs), &refs); err == nil {
			for _, ref := range refs {
				k.refs[ref] = true
			}
		}
		if r.sourceRef != "" {
			k.refs[r.sourceRef] = true
		}
	}
	c := rowCounts{byKind: map[string]string{}}
	for name, k := range kinds {
		c.byKind[name] = fmt.Sprintf("%d/%d/%d", len(k.sources), k.chunks, len(k.refs))
		c.sources += len(k.sources)
		c.messages += len(k.refs)
	}
	return c
}

// compareChunkRows reports the chunks the two stores hold differently (the first
// few of each kind of difference).
func compareChunkRows(t *testing.T, name string, lite, pg []chunkRow) {
	t.Helper()
	pgBy := map[string]chunkRow{}
	for _, r := range pg {
		pgBy[r.key()] = r
	}
	diffs := 0
	report := func(format string, args ...any) {
		diffs++
		if diffs <= 5 {
			t.Errorf("%s: "+format, append([]any{name}, args...)...)
		}
	}
	for _, l := range lite {
		p, ok := pgBy[l.key()]
		if !ok {
			report("chunk %d of %s (%s) is on SQLite, not on PostgreSQL", l.seq, l.sourceID, l.kind)
			continue
		}
		delete(pgBy, l.key())
		if l != p {
			report("chunk %d of %s differs:\n  SQLite     %+v\n  PostgreSQL %+v", l.seq, l.sourceID, clipRow(l), clipRow(p))
		}
	}
	for _, p := range pgBy {
		report("chunk %d of %s (%s) is on PostgreSQL, not on SQLite", p.seq, p.sourceID, p.kind)
	}
	if diffs > 5 {
		t.Errorf("%s: ... %d differences in all", name, diffs)
	}
}

func clipRow(r chunkRow) chunkRow {
	r.text = clip(r.text, 200)
	r.refs = clip(r.refs, 200)
	return r
}
