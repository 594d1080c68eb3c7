package memtree

import (
	"errors"
	"testing"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// TestFTSExpr: a structured query becomes FTS5 syntax with every phrase quoted;
// at least m of n is the OR of the ANDs of every m-subset, refused as too broad
// past maxQuorumClauses clauses.
func TestFTSExpr(t *testing.T) {
	three := index.Query{Phrases: []index.Phrase{{"brake"}, {"pads"}, {"say", `"hi"`}}}
	for _, c := range []struct {
		op   index.Op
		m    int
		want string
	}{
		{index.All, 0, `"brake" AND "pads" AND "say ""hi"""`},
		{index.Any, 0, `"brake" OR "pads" OR "say ""hi"""`},
		{index.AtLeast, 2, `("brake" AND "pads") OR ("brake" AND "say ""hi""") OR ("pads" AND "say ""hi""")`},
	} {
		q := three
		q.Op, q.M = c.op, c.m
		got, err := ftsExpr(q)
		if err != nil || got != c.want {
			t.Errorf("ftsExpr(op %d, m %d) = %q, %v; want %q", c.op, c.m, got, err, c.want)
		}
	}
	many := index.Words(index.AtLeast, "a1", "a2", "a3", "a4", "a5", "a6", "a7")
	many.M = 3 // 7 choose 3 = 35 clauses > maxQuorumClauses (20)
	if _, err := ftsExpr(many); !errors.Is(err, index.ErrTooBroad) {
		t.Fatalf("ftsExpr(7 words, at least 3) = %v, want index.ErrTooBroad past %d clauses", err, maxQuorumClauses)
	}
	zero := three
	zero.Op = index.AtLeast
	if _, err := ftsExpr(zero); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ftsExpr(at least 0) = %v, want ErrInvalid", err)
	}
}
