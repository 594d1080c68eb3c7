package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestPlainReadsMatchSQLite writes the same sources to both backends and
// checks, with no scope and under several, that browse, top entities, list
// sources, read chunk and a ranked match answer the same on PostgreSQL as on
// SQLite, and that a scoped call sees exactly the chunks its scope allows: a
// chunk outside it answers "not found" in the very words of an unknown id.
func TestPlainReadsMatchSQLite(t *testing.T) {
	ctx := context.Background()
	pg, lite := bothWith(t, inputs())
	stores := map[string]memory.Store{"PostgreSQL": pg, "SQLite": lite}
	all, err := memory.Default(lite).ListChunks(ctx, abi.ChunksListRequest{K: 50})
	if err != nil || len(all.Chunks) == 0 {
		t.Fatalf("browse all on SQLite: %v %+v", err, all)
	}
	ents, err := memory.Default(lite).TopEntities(ctx, abi.EntitiesTopRequest{K: 50})
	if err != nil || len(ents.Entities) == 0 {
		t.Fatalf("top entities on SQLite: %v %+v", err, ents)
	}
	entity := ents.Entities[0].EntityID

	scopes := map[string]index.Scope{"everything": {}}
	for name, p := range map[string][2][]string{
		"doc:*":                {{"doc:*"}, nil},
		"kind:chat":            {{"kind:chat"}, nil},
		"slack:#p* and mail":   {{"slack:#p*", "kind:email"}, nil},
		"all but email":        {{"*"}, {"kind:email"}},
		"docs but the garden":  {{"kind:document"}, {"doc:*garden*"}},
		"a glob matching none": {{"doc:nothing/*"}, nil},
	} {
		sc, err := index.ParseScope(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		scopes[name] = sc
	}
	browse := []abi.ChunksListRequest{
		{K: 50}, {K: 2, Offset: 1}, {K: 50, SourceKinds: []string{"chat", "document"}}, {K: 50, SourceIDs: []string{"doc:notes/car.md", "slack:#phoenix"}},
		{K: 50, Query: "brake pads"}, {K: 50, EntityIDs: []string{entity}},
	}
	for name, sc := range scopes {
		ctx := index.WithScope(context.Background(), sc)
		got := map[string][]string{}
		for bname, st := range stores {
			var lines []string
			for _, req := range browse {
				res, err := memory.Default(st).ListChunks(ctx, req)
				if err != nil {
					t.Fatalf("%s, %s: browse %+v: %v", bname, name, req, err)
				}
				var ids []string
				for _, h := range res.Chunks {
					ids = append(ids, h.ID)
					if !sc.Allows(h.SourceKind, h.SourceID) {
						t.Errorf("%s, scope %s: browse lists %s of %s", bname, name, h.ID, h.SourceID)
					}
				}
				lines = append(lines, fmt.Sprintf("browse %+v: total %d %v", req, res.Total, ids))
			}
			for _, req := range []abi.EntitiesTopRequest{{K: 50}, {K: 50, Kind: "person"}, {K: 2, Offset: 1}, {K: 3, Offset: 40}} {
				res, err := memory.Default(st).TopEntities(ctx, req)
				if err != nil {
					t.Fatalf("%s, %s: top entities: %v", bname, name, err)
				}
				var es []string
				for _, e := range res.Entities {
					es = append(es, fmt.Sprintf("%s=%d", e.EntityID, e.Count))
				}
				slices.Sort(es)
				lines = append(lines, fmt.Sprintf("entities %+v: total %d %v", req, res.Total, es))
			}
			for _, req := range []abi.SourcesListRequest{{}, {Kinds: []string{"document"}}, {Query: "phoenix"}, {K: 1, Offset: 1}} {
				res, err := memory.Default(st).ListSources(ctx, req)
				if err != nil {
					t.Fatalf("%s, %s: list sources: %v", bname, name, err)
				}
				var ss []string
				for _, s := range res.Sources {
					ss = append(ss, fmt.Sprintf("%s %s %d %q", s.SourceKind, s.SourceID, s.ChunkCount, s.DisplayName))
					if !sc.Allows(s.SourceKind, s.SourceID) {
						t.Errorf("%s, scope %s: list sources lists %s", bname, name, s.SourceID)
					}
				}
				lines = append(lines, fmt.Sprintf("sources %+v: total %d %v", req, res.Total, ss))
			}
			_, unknownErr := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: "0123456789abcdef0123456789abcdef"})
			for _, h := range all.Chunks {
				res, err := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
				switch {
				case sc.Allows(h.SourceKind, h.SourceID) && (err != nil || res.Chunk.ID != h.ID):
					t.Errorf("%s, scope %s: read chunk %s of %s: %v", bname, name, h.ID, h.SourceID, err)
				case !sc.Allows(h.SourceKind, h.SourceID) && (err == nil || strings.ReplaceAll(err.Error(), h.ID, "<id>") != strings.ReplaceAll(unknownErr.Error(), "0123456789abcdef0123456789abcdef", "<id>")):
					t.Errorf("%s, scope %s: read chunk %s of %s outside the scope: %v; an unknown id: %v", bname, name, h.ID, h.SourceID, err, unknownErr)
				}
			}
			b, err := st.BeginRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hits, err := b.Match(ctx, index.Match{Query: index.Words(index.Any, "brake", "budget", "turtles", "launch"), Limit: 50})
			if err != nil {
				t.Fatalf("%s, %s: match: %v", bname, name, err)
			}
			var hs []string
			for _, h := range hits {
				hs = append(hs, h.ID)
				if !sc.Allows(h.SourceKind, h.SourceID) {
					t.Errorf("%s, scope %s: match finds %s of %s", bname, name, h.ID, h.SourceID)
				}
			}
			slices.Sort(hs)
			lines = append(lines, fmt.Sprintf("match: %v", hs))
			got[bname] = lines
		}
		for i := range got["SQLite"] {
			if got["PostgreSQL"][i] != got["SQLite"][i] {
				t.Errorf("scope %s:\n  PostgreSQL %s\n  SQLite     %s", name, got["PostgreSQL"][i], got["SQLite"][i])
			}
		}
	}
}
