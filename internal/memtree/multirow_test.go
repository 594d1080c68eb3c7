package memtree_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// The writer stores a Merge source's messages, the entities and their links with
// 64-row statements and one row at a time for the rest: a source of 150 messages
// (two full statements and 22 single rows) keeps every message, entity and link,
// and a second export that changes 70 of them and adds 5 replaces exactly those.
func TestManyRowsStoredWhole(t *testing.T) {
	st, path := openEmpty(t)
	ctx := context.Background()
	msg := func(i int, text string) memtree.MessageInput {
		m := chanMsg(1, 1+i/24, i%24, 0, 0, fmt.Sprintf("Person%03d Tester", i), text)
		m.Ref = fmt.Sprintf("eng:%d", i)
		m.AuthorAddr = fmt.Sprintf("person%03d@example.org", i)
		return m
	}
	var first []memtree.MessageInput
	for i := 0; i < 150; i++ {
		first = append(first, msg(i, fmt.Sprintf("first export message %d", i)))
	}
	if _, err := st.Ingest(ctx, engSource(first...)); err != nil {
		t.Fatal(err)
	}
	var second []memtree.MessageInput
	for i := 0; i < 70; i++ {
		second = append(second, msg(i, fmt.Sprintf("second export message %d", i)))
	}
	for i := 150; i < 155; i++ {
		second = append(second, msg(i, fmt.Sprintf("second export message %d", i)))
	}
	if _, err := st.Ingest(ctx, engSource(second...)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	one := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := one(`SELECT count(*) FROM source_messages`); n != 155 {
		t.Errorf("stored messages: %d, want 155", n)
	}
	if n := one(`SELECT count(*) FROM source_messages WHERE msg_json LIKE '%second export%'`); n != 75 {
		t.Errorf("messages of the second export: %d, want 75", n)
	}
	if n := one(`SELECT count(*) FROM source_messages WHERE ref=? AND msg_json LIKE '%first export message 149"%'`, "eng:149"); n != 1 {
		t.Errorf("message 149 of the first export: %d rows, want 1", n)
	}
	// Every author is an entity linked to the chunk that holds their message.
	people := one(`SELECT count(*) FROM entities WHERE id LIKE '%person%@example.org%' AND ref_count >= 1`)
	linked := one(`SELECT count(DISTINCT entity_id) FROM chunk_entities WHERE entity_id LIKE '%person%@example.org%'`)
	if people != 155 || linked != 155 {
		t.Errorf("author entities: %d stored, %d linked, want 155 each", people, linked)
	}
	if n := one(`SELECT count(*) FROM entities e WHERE ref_count != (SELECT count(*) FROM chunk_entities ce WHERE ce.entity_id=e.id)`); n != 0 {
		t.Errorf("%d entities whose ref_count is not their number of links", n)
	}
}
