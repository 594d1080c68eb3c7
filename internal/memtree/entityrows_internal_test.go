package memtree

import (
	"context"
	"fmt"
	"testing"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// TestEntityFilterFormsAgree: a restriction to people gives the same ranked and
// unranked hits whether each row's links are tested (perRow) or the linked chunks
// are listed first, and entityPerRow picks the per-row test only for people linked
// to many chunks.
func TestEntityFilterFormsAgree(t *testing.T) {
	ctx := context.Background()
	st := openTemp(t)
	authors := []string{"Rosa Costa", "Max Rossi", "Ivy Ortiz"}
	texts := []string{"The physio session moved to Friday.", "Budget review: the physio bill is in.", "Lunch after the session?",
		"Physio exercises twice a day, session notes attached.", "Review the session plan before Friday."}
	for i := 0; i < 30; i++ {
		src := SourceInput{Kind: KindChat, SourceID: fmt.Sprintf("chat:group-%d", i), Title: fmt.Sprintf("group %d", i),
			Messages: []MessageInput{{Ref: fmt.Sprintf("chat:%d", i), Author: authors[i%3], TimestampMS: 1767261600000 + int64(i)*3600000, Text: texts[i%5]}}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	db, err := st.readers(ctx)
	if err != nil || db == nil {
		t.Fatalf("readers: %v", err)
	}
	snap, err := st.snapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var people []string
	rows, err := db.QueryContext(ctx, `SELECT id FROM entities WHERE kind='person' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		people = append(people, id)
	}
	rows.Close()
	if len(people) < 3 {
		t.Fatalf("people = %v; want the three authors", people)
	}
	nonEmpty := 0
	for _, expr := range []string{`"physio"`, `"physio" AND "session"`, `"session" OR "review"`} {
		for _, f := range []index.Filter{{EntityIDs: people[:1]}, {EntityIDs: people[1:3], Names: []string{"rosa costa"}},
			{EntityIDs: people[:1], From: 1767261600000, To: 1767261600000 + 12*3600000}} {
			for _, limit := range []int{2, 20} {
				list, err := ftsRanked(ctx, db, nil, expr, sqlFilterRows(f, false), limit, nil)
				if err != nil {
					t.Fatal(err)
				}
				each, err := ftsRanked(ctx, db, nil, expr, sqlFilterRows(f, true), limit, nil)
				if err != nil {
					t.Fatal(err)
				}
				firstList, err := ftsFirst(ctx, db, expr, sqlFilterRows(f, false), limit, nil)
				if err != nil {
					t.Fatal(err)
				}
				firstEach, err := ftsFirst(ctx, db, expr, sqlFilterRows(f, true), limit, nil)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(refsOfHits(list)) != fmt.Sprint(refsOfHits(each)) || fmt.Sprint(refsOfHits(firstList)) != fmt.Sprint(refsOfHits(firstEach)) {
					t.Fatalf("%s under %+v: listed %v / %v, per row %v / %v", expr, f, refsOfHits(list), refsOfHits(firstList), refsOfHits(each), refsOfHits(firstEach))
				}
				if len(list) > 0 {
					nonEmpty++
				}
			}
		}
	}
	if nonEmpty == 0 {
		t.Fatal("every restricted query was empty: the comparison proves nothing")
	}
	r := st.reader(db, snap) // 30 chunks, each person linked to 10
	if per, err := r.entityPerRow(ctx, people[:1], 20); err != nil || per {
		t.Fatalf("entityPerRow(10 links of 30 chunks, limit 20) = %v, %v; want the list", per, err)
	}
	big := &dfCache{gen: snap.gen, n: 1, people: snap.people, maxTS: snap.maxTS, loaded: true} // as if few rows were visited
	r = st.reader(db, big)
	if per, err := r.entityPerRow(ctx, people[:1], 1); err != nil || !per {
		t.Fatalf("entityPerRow(10 links, n 1, limit 1) = %v, %v; want per row", per, err)
	}
	if per, _ := r.entityPerRow(ctx, nil, 1); per {
		t.Fatal("entityPerRow without people chose per row")
	}
}

func refsOfHits(hs []index.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}
