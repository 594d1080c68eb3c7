package retrieval

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

func hit(id string, refs ...string) abi.ChunkHit {
	return abi.ChunkHit{ID: id, SourceRef: refs[0], SourceRefs: refs}
}

func ids(hs []abi.ChunkHit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID+"/"+h.SourceRef)
	}
	return out
}

// fuseMeaning keeps the first hits in place, adds a meaning hit's weight to the
// hit citing its message, brings in messages no hit cites, cuts at k, and leaves
// the hits as they were with no weight or no list.
func TestFuseMeaning(t *testing.T) {
	p := DefaultParams()
	hits := []abi.ChunkHit{hit("c1", "m1"), hit("c2", "m2", "m3"), hit("c3", "m4"), hit("c4", "m5")}
	ml := []abi.ChunkHit{hit("c4", "m5"), hit("c9", "m9"), hit("c2", "m3")}
	if got := fuseMeaning(&p, hits, ml, 0, 1, 10); !reflect.DeepEqual(got, hits) {
		t.Fatalf("weight 0 changed the hits: %v", ids(got))
	}
	if got := fuseMeaning(&p, hits, nil, 1, 1, 10); !reflect.DeepEqual(got, hits) {
		t.Fatalf("no list changed the hits: %v", ids(got))
	}
	got := ids(fuseMeaning(&p, hits, ml, 1, 1, 10))
	// c1 kept first; c4 (rank 4 + meaning rank 1) and c2 (rank 2 + meaning rank
	// 3) rise above c3; c9, new, comes after the hits it does not outscore.
	want := []string{"c1/m1", "c4/m5", "c2/m2", "c9/m9", "c3/m4"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fused = %v, want %v", got, want)
	}
	if got := fuseMeaning(&p, hits, ml, 1, 1, 3); len(got) != 3 {
		t.Fatalf("k = 3 gave %d hits", len(got))
	}
	if got := fuseMeaning(&p, hits, ml, 1, 10, 10); !reflect.DeepEqual(got, hits) {
		t.Fatalf("keep >= k changed the hits: %v", ids(got))
	}
	// Off by default: no weight held out a gain (RATIONALE.md, "Meaning").
	if d := DefaultParams(); d.MeaningSearch != 0 || d.MeaningRecall != 0 {
		t.Fatalf("meaning weights %v / %v by default, want 0 (off) until one holds out a gain", d.MeaningSearch, d.MeaningRecall)
	}
}

// The meaning list holds the messages of the person the question names, by the
// cosine of their meaning to the question's: Ana's turtles first for "What pets
// does Ana have?", and never Ben's dog.
func TestMeaningListIsThePersonsMessages(t *testing.T) {
	ctx := context.Background()
	st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	day := int64(86_400_000)
	for i, m := range [][2]string{
		{"I need new tyres before the winter.", "I see."},
		{"Our two turtles love basking under the heat lamp.", "My dog barked at the mailman all afternoon."},
		{"The electricity bill went up a lot.", "Oh no."},
		{"My laptop keyboard stopped working.", "That is annoying."},
	} {
		src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: fmt.Sprintf("chat:%d", i), Title: "Ana and Ben", Messages: []memtree.MessageInput{
			{Ref: fmt.Sprintf("a%d", i), Author: "Ana", TimestampMS: 1_767_261_600_000 + int64(i)*day, Text: m[0]},
			{Ref: fmt.Sprintf("b%d", i), Author: "Ben", TimestampMS: 1_767_261_660_000 + int64(i)*day, Text: m[1]},
		}}
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	b, err := st.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(DefaultParams()).NewCall(ctx, b, "What pets does Ana have?", 10)
	if err != nil {
		t.Fatal(err)
	}
	ml, err := c.meaningList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, h := range ml {
		refs = append(refs, h.SourceRef)
	}
	if len(refs) != 4 || refs[0] != "a1" || slices.ContainsFunc(refs, func(r string) bool { return strings.HasPrefix(r, "b") }) {
		t.Fatalf("meaning list %v, want Ana's four messages, a1 (turtles) first", refs)
	}
	// A question naming nobody the store knows has no meaning list.
	c, err = New(DefaultParams()).NewCall(ctx, b, "What pets does Zoe have?", 10)
	if err != nil {
		t.Fatal(err)
	}
	if ml, err := c.meaningList(ctx); err != nil || ml != nil {
		t.Fatalf("meaning list for an unknown person = %v, %v; want none", ml, err)
	}
}

// meaningFirst keeps the first hits, then puts the meaning list's hits in its
// order (as the hit on the same chunk, when there is one), then the rest.
func TestMeaningFirst(t *testing.T) {
	hits := []abi.ChunkHit{hit("c1", "m1"), hit("c2", "m2", "m3"), hit("c3", "m4"), hit("c4", "m5")}
	ml := []abi.ChunkHit{hit("c1", "m1"), hit("c9", "m9"), hit("c2", "m3", "m2"), hit("c3", "m8")}
	got := ids(meaningFirst(hits, ml, 1, 10))
	want := []string{"c1/m1", "c9/m9", "c2/m2", "c3/m4", "c4/m5"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("meaningFirst = %v, want %v", got, want)
	}
	if got := ids(meaningFirst(hits, ml, 0, 3)); !reflect.DeepEqual(got, []string{"c1/m1", "c9/m9", "c2/m2"}) {
		t.Fatalf("meaningFirst k = 3 = %v", got)
	}
	if got := meaningFirst(hits, nil, 0, 10); !reflect.DeepEqual(got, hits) {
		t.Fatalf("no list changed the hits: %v", ids(got))
	}
}
