package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrationsStepAndRecordVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := storeVersion(ctx, db); err != nil || v != schemaVersion {
		t.Fatalf("version after Open = %d, %v; want %d", v, err, schemaVersion)
	}
	// One more step runs once, on top of the current version, and is recorded.
	runs := 0
	step2 := func(ctx context.Context, tx *sql.Tx) error {
		runs++
		_, err := tx.ExecContext(ctx, `ALTER TABLE sources ADD COLUMN note TEXT NOT NULL DEFAULT ''`)
		return err
	}
	steps := append(append([]migration(nil), migrations...), step2)
	next := len(steps)
	for i := 0; i < 2; i++ {
		if err := migrateTo(ctx, db, steps); err != nil {
			t.Fatalf("migrate to %d: %v", next, err)
		}
	}
	if runs != 1 {
		t.Errorf("the new step ran %d times, want 1", runs)
	}
	if v, _ := storeVersion(ctx, db); v != next {
		t.Errorf("version = %d, want %d", v, next)
	}
	if _, err := db.Exec(`UPDATE sources SET note='x'`); err != nil {
		t.Errorf("migrated column missing: %v", err)
	}
	// A failing step rolls back and leaves the version alone.
	bad := append(append([]migration(nil), steps...), execAll(`CREATE TABLE ok_table(x)`, `THIS IS NOT SQL`))
	if err := migrateTo(ctx, db, bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("from version %d to %d", next, next+1)) {
		t.Errorf("bad step error = %v", err)
	}
	if v, _ := storeVersion(ctx, db); v != next {
		t.Errorf("version after failed step = %d, want %d", v, next)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name='ok_table'`).Scan(&n)
	if n != 0 {
		t.Error("failed migration left a partial table")
	}
	// This binary refuses a store newer than it knows.
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a version-2 store = %v, want a 'newer' error", err)
	}
	if _, err := OpenReadOnly(path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("OpenReadOnly of a version-2 store = %v, want a 'newer' error", err)
	}
}

func TestStemMatchesFTSPorter(t *testing.T) {
	// Stems must equal the FTS5 porter tokenizer's terms, or document frequencies miss.
	ctx := context.Background()
	st, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text := "running runs ran easily generously relational conditional rational valency hesitancy digitizer " +
		"conformably radically differently vilely analogously vietnamization predication operator feudalism " +
		"decisiveness hopefulness callousness formality sensitivity sensibility triplicate formative formalize " +
		"electriciti electrical hopeful goodness revival allowance inference airliner gyroscopic adjustable " +
		"defensible irritant replacement adjustment dependent adoption homologou communism activate angulariti " +
		"homologous effective bowdlerize probate rate cease controll roll meetings agreed plastered motoring sing " +
		"conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky caresses ponies ties"
	if _, err := st.Ingest(ctx, SourceInput{Kind: KindDocument, SourceID: "doc:x", Messages: []MessageInput{{Ref: "x", Text: text}}}); err != nil {
		t.Fatal(err)
	}
	db, _ := st.readers(ctx)
	rows, err := db.Query(`SELECT term FROM chunks_fts_vocab`)
	if err != nil {
		t.Fatal(err)
	}
	fts := map[string]bool{}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		fts[s] = true
	}
	rows.Close()
	for _, w := range words(text) {
		if !fts[stem(w)] {
			t.Errorf("stem(%q) = %q, not an FTS5 porter term", w, stem(w))
		}
	}
}

// TestMigrationV4SourceMessages opens a version-3 store holding a source: Open adds
// source_messages (version 4), the source stays, and a Merge ingest of it then keeps
// its messages.
func TestMigrationV4SourceMessages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(ctx, db, migrations[:3]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO sources(kind, source_id, title) VALUES('chat', 'slack:#old', '#old')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := Open(path)
	if err != nil {
		t.Fatalf("Open of a version-3 store: %v", err)
	}
	defer st.Close()
	var v, n int
	if err := st.w.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key='schema_version'`).Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("version after Open = %d, %v; want %d", v, err, schemaVersion)
	}
	if err := st.w.QueryRow(`SELECT count(*) FROM sources WHERE source_id='slack:#old'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("source of the version-3 store: %d, %v", n, err)
	}
	in := SourceInput{Kind: KindChat, SourceID: "slack:#old", Title: "#old", Merge: true,
		Messages: []MessageInput{{Ref: "a", Author: "Ann", TimestampMS: 1_700_000_000_000, Text: "hello there"}}}
	if _, err := st.Ingest(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := st.w.QueryRow(`SELECT count(*) FROM source_messages`).Scan(&n); err != nil || n != 1 {
		t.Errorf("stored messages = %d, %v; want 1", n, err)
	}
}
