package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestLongTitlesCutAsSQLite checks that a hit's title longer than a result
// shows is cut the same way on both backends (both read hits through
// memtree.ScanHit): browse and search answer the same title, at most 300
// characters and ending in "…".
func TestLongTitlesCutAsSQLite(t *testing.T) {
	ctx := context.Background()
	title := strings.Repeat("harbour budget review ", 30) // 660 characters
	in := memtree.SourceInput{Kind: memtree.KindDocument, SourceID: "doc:notes/long-title.md", Title: title, Provider: "titles",
		Messages: []memtree.MessageInput{{Ref: "notes/long-title.md", Subject: title, TimestampMS: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC).UnixMilli(),
			Text: "The quarterly harbour budget is attached for review.\n"}}}
	pg, lite := bothWith(t, []memtree.SourceInput{in})
	titles := func(st memory.Store) (browse, search string) {
		t.Helper()
		m := memory.Default(st)
		l, err := m.ListChunks(ctx, abi.ChunksListRequest{K: 10})
		if err != nil || len(l.Chunks) != 1 {
			t.Fatalf("browse: %v %+v", err, l)
		}
		s, err := m.Search(ctx, abi.SearchRequest{Query: "quarterly harbour budget", K: 5})
		if err != nil || len(s.Chunks) != 1 {
			t.Fatalf("search: %v %+v", err, s)
		}
		return l.Chunks[0].Title, s.Chunks[0].Title
	}
	pb, ps := titles(pg)
	lb, ls := titles(lite)
	if pb != lb || ps != ls {
		t.Errorf("titles differ:\nPostgreSQL browse %q\nSQLite     browse %q\nPostgreSQL search %q\nSQLite     search %q", pb, lb, ps, ls)
	}
	if n := utf8.RuneCountInString(lb); n > 300 || n < 200 || !strings.HasSuffix(lb, "…") {
		t.Errorf("SQLite's title is %d characters (%q): want it cut to at most 300, ending in …", n, lb)
	}
}
