package memtree

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourcesQueryUsesIndex: the source list and its pages are read in the order
// of the sources_listed index, without a sort, and the per-kind totals from that
// index alone.
func TestSourcesQueryUsesIndex(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	plan := func(q string) string {
		args := []any{50, 0}
		if strings.Count(q, "?") == 3 {
			args = append([]any{"email"}, args...)
		}
		rows, err := st.w.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		return strings.Join(plan, "; ")
	}
	if p := plan(sourcesQuery + ` LIMIT ? OFFSET ?`); strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("list query plan %q: want an index walk, no sort", p)
	}
	ctx := context.Background()
	pageQ, err := listedQuery(ctx, st.r, sourcesQuery)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		pageQ + ` LIMIT ? OFFSET ?`,
		strings.Replace(pageQ, "WHERE chunk_count > 0", "WHERE chunk_count > 0 AND kind IN (?)", 1) + ` LIMIT ? OFFSET ?`,
	} {
		if p := plan(q); !strings.Contains(p, "sources_listed") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("query plan %q: want a walk of sources_listed and no sort", p)
		}
	}
	countQ, err := listedQuery(ctx, st.r, sourceCountsQuery)
	if err != nil {
		t.Fatal(err)
	}
	if p := plan(countQ + ` LIMIT ? OFFSET ?`); !strings.Contains(p, "COVERING INDEX sources_listed") {
		t.Errorf("count plan %q: want the covering index sources_listed", p)
	}
}
