package lexicon

import (
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"testing"

	"github.com/openhuman/openhuman-core/internal/lexicon/wnbuild"
)

// TestPackedTableMatchesStream reads the embedded table's stream again into
// plain uint32 lists and checks that every word, synset, member, relation,
// sense and derivation of the packed table is the same.
func TestPackedTableMatchesStream(t *testing.T) {
	tb := get()
	if tb == nil {
		t.Fatalf("embedded table: %v", Err())
	}
	zr, err := gzip.NewReader(bytes.NewReader(tableGz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{r: bytes.NewReader(raw[len(wnbuild.Magic):])}
	nw := r.count()
	words, wordOff := r.frontCoded(nw, nil)
	if words != tb.words || tb.wordOff.entries() != nw {
		t.Fatalf("words: %d lemmas packed, %d in the stream", tb.wordOff.entries(), nw)
	}
	for i := range wordOff {
		if got := tb.wordOff.at(uint32(i)); got != wordOff[i] {
			t.Fatalf("word offset %d: packed %d, stream %d", i, got, wordOff[i])
		}
	}
	same := func(what string, i int, l *lists, want []uint32) {
		t.Helper()
		got := slices.Collect(l.of(uint32(i)))
		if !slices.Equal(got, want) || l.len(uint32(i)) != len(want) {
			t.Fatalf("%s of %d: packed %v, stream %v", what, i, got, want)
		}
	}
	ns := r.count()
	for i := 0; i < ns && r.err == nil; i++ {
		if pos := uint8(r.uv() & 3); pos != tb.synPos[i] {
			t.Fatalf("synset %d: part of speech %d, stream %d", i, tb.synPos[i], pos)
		}
		same("members", i, &tb.members, r.ids(nil, nw, "member"))
		same("relations", i, &tb.rels, r.ids(nil, 4*ns, "relation"))
	}
	for i := 0; i < nw && r.err == nil; i++ {
		same("senses", i, &tb.senses, r.ids(nil, ns, "sense"))
	}
	for i := 0; i < nw && r.err == nil; i++ {
		same("derived", i, &tb.derived, r.ids(nil, nw, "derived"))
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
}

// TestOffsetsRefuseWhatDoesNotFit: a bound too far from its block's base, or
// below the one before it, is an error, never a wrapped uint16.
func TestOffsetsRefuseWhatDoesNotFit(t *testing.T) {
	o := newOffsets(4)
	for _, v := range []uint32{0, 10, 65535} {
		if err := o.push(v); err != nil {
			t.Fatalf("push %d: %v", v, err)
		}
	}
	if err := o.push(65536); err == nil {
		t.Fatal("65536 past a block base of 0 was accepted")
	}
	if err := o.push(5); err == nil {
		t.Fatal("a bound below the one before it was accepted")
	}
	for i, want := range []uint32{0, 10, 65535} {
		if got := o.at(uint32(i)); got != want {
			t.Errorf("at(%d) = %d, want %d", i, got, want)
		}
	}
	var d ids
	d.push(maxID)
	d.push(7)
	if d.at(0) != maxID || d.at(1) != 7 || d.count() != 2 {
		t.Errorf("ids round trip: %d %d (%d)", d.at(0), d.at(1), d.count())
	}
}
