package embed

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	if err := Normalize(v); err != nil {
		panic(err)
	}
	return v
}

// near returns a normalised point at distance ~noise from v.
func near(r *rand.Rand, v []float32, noise float32) []float32 {
	out := make([]float32, len(v))
	n := randUnit(r, len(v))
	for i := range v {
		out[i] = v[i] + noise*n[i]
	}
	if err := Normalize(out); err != nil {
		panic(err)
	}
	return out
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestBlobRoundTrip(t *testing.T) {
	v := []float32{0, -1.5, 3.25, float32(math.Pi), math.MaxFloat32, math.SmallestNonzeroFloat32}
	b := EncodeBlob(v)
	if len(b) != 4*len(v) || b[4] != 0x00 || b[7] != 0xbf { // -1.5 = 0xbfc00000 little-endian
		t.Fatalf("blob % x not little-endian float32", b)
	}
	got, err := DecodeBlob(b)
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("DecodeBlob = %v, %v; want %v", got, err, v)
	}
	if _, err := DecodeBlob(b[:5]); err == nil || !strings.Contains(err.Error(), "5 bytes") {
		t.Errorf("DecodeBlob(5 bytes) = %v, want an error", err)
	}
	if got, err := DecodeBlob(nil); err != nil || len(got) != 0 {
		t.Errorf("DecodeBlob(nil) = %v, %v", got, err)
	}
}

func TestNormalize(t *testing.T) {
	v := []float32{3, 4}
	if err := Normalize(v); err != nil || math.Abs(float64(v[0])-0.6) > 1e-7 || math.Abs(float64(v[1])-0.8) > 1e-7 {
		t.Errorf("Normalize(3,4) = %v, %v", v, err)
	}
	z := []float32{0, 0}
	if err := Normalize(z); err == nil {
		t.Error("Normalize accepted a zero vector")
	}
}

func TestIndexExactFindsTrueNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, dim = 2000, 64
	ix := NewIndex(0)
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = randUnit(r, dim)
		if err := ix.Add(fmt.Sprintf("v%04d", i), vecs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if ix.Len() != n || ix.Dim() != dim {
		t.Fatalf("Len %d Dim %d", ix.Len(), ix.Dim())
	}
	for range 50 {
		q := randUnit(r, dim)
		got := ix.Search(q, 5)
		// Brute force in plain Go.
		type p struct {
			id string
			s  float32
		}
		all := make([]p, n)
		for i, v := range vecs {
			all[i] = p{fmt.Sprintf("v%04d", i), dot(q, v)}
		}
		slices.SortFunc(all, func(a, b p) int {
			if a.s != b.s {
				if a.s > b.s {
					return -1
				}
				return 1
			}
			return strings.Compare(a.id, b.id)
		})
		if len(got) != 5 {
			t.Fatalf("got %d hits, want 5", len(got))
		}
		for i := range got {
			if got[i].ID != all[i].id || math.Abs(float64(got[i].Score-all[i].s)) > 1e-5 {
				t.Fatalf("hit %d = %+v, want %+v", i, got[i], all[i])
			}
		}
	}
	// The query is normalised: a scaled query gives the same scores.
	q := vecs[7]
	scaled := make([]float32, dim)
	for i := range q {
		scaled[i] = 3 * q[i]
	}
	h := ix.Search(scaled, 1)
	if len(h) != 1 || h[0].ID != "v0007" || math.Abs(float64(h[0].Score)-1) > 1e-5 {
		t.Errorf("self query = %+v, want v0007 with score 1", h)
	}
}

func TestIndexBadInput(t *testing.T) {
	ix := NewIndex(4)
	if got := ix.Search([]float32{1, 0, 0, 0}, 3); got != nil {
		t.Errorf("empty index search = %v", got)
	}
	if err := ix.Add("a", []float32{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add("b", []float32{1, 0}); err == nil || !strings.Contains(err.Error(), "2 dimensions") {
		t.Errorf("Add wrong dim: %v", err)
	}
	if err := ix.Add("c", []float32{1, float32(math.NaN()), 0, 0}); err == nil {
		t.Error("Add accepted NaN")
	}
	if err := ix.Add("d", nil); err == nil {
		t.Error("Add accepted an empty vector")
	}
	if ix.Len() != 1 {
		t.Errorf("refused vectors were stored: Len %d", ix.Len())
	}
	for _, q := range [][]float32{{1, 0}, {0, 0, 0, 0}, {float32(math.Inf(1)), 0, 0, 0}} {
		if got := ix.Search(q, 3); got != nil {
			t.Errorf("Search(%v) = %v, want nil", q, got)
		}
	}
	if got := ix.Search([]float32{0, 1, 0, 0}, 0); got != nil {
		t.Errorf("k=0 gave %v", got)
	}
	if got := ix.Search([]float32{0, 1, 0, 0}, 10); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("k > Len: %v", got)
	}
}

// TestIndexBinaryAgreesWithExact: on seeded random data with queries near stored vectors, the
// 1-bit prefilter + exact rerank finds the exact top-1 for ≥ 90 % of 200 queries.
func TestIndexBinaryAgreesWithExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	const n, dim = 20000, 128
	exact := NewIndex(dim)
	binary := NewIndex(dim)
	binary.BinaryThreshold = 1000
	for i := range n {
		v := randUnit(r, dim)
		id := fmt.Sprintf("v%05d", i)
		if err := exact.Add(id, v); err != nil {
			t.Fatal(err)
		}
		if err := binary.Add(id, v); err != nil {
			t.Fatal(err)
		}
	}
	exact.BinaryThreshold = n + 1
	agree, selfFound := 0, 0
	const queries = 200
	for i := range queries {
		target := r.IntN(n)
		q := near(r, exact.vecs[target*dim:(target+1)*dim], 2.0)
		e := exact.Search(q, 10)
		b := binary.Search(q, 10)
		if len(e) != 10 || len(b) != 10 {
			t.Fatalf("query %d: %d exact, %d binary hits", i, len(e), len(b))
		}
		if e[0].ID == b[0].ID {
			agree++
		}
		if b[0].ID == fmt.Sprintf("v%05d", target) {
			selfFound++
		}
		for j := 1; j < len(b); j++ {
			if b[j].Score > b[j-1].Score {
				t.Fatalf("query %d: binary hits not sorted: %v", i, b)
			}
		}
	}
	t.Logf("1-bit+rerank top-1 agreement with exact: %d/%d; found the perturbed vector: %d/%d", agree, queries, selfFound, queries)
	if float64(agree)/queries < 0.9 {
		t.Errorf("top-1 agreement %d/%d < 0.9", agree, queries)
	}
	// Sanity check that the binary path really prefiltered: Candidates smaller than n, yet results.
	binary.Candidates = 50
	if got := binary.Search(exact.vecs[:dim], 1); len(got) != 1 || got[0].ID != "v00000" {
		t.Errorf("binary search of a stored vector with 50 candidates = %v, want v00000", got)
	}
}

func benchIndex(b *testing.B, n, dim int, binary bool) {
	r := rand.New(rand.NewPCG(3, 4))
	ix := NewIndex(dim)
	ix.ids = make([]string, 0, n)
	ix.vecs = make([]float32, 0, n*dim)
	for i := range n {
		if err := ix.Add(fmt.Sprintf("c%d", i), randUnit(r, dim)); err != nil {
			b.Fatal(err)
		}
	}
	if binary {
		ix.BinaryThreshold = 1
	} else {
		ix.BinaryThreshold = n + 1
	}
	qs := make([][]float32, 16)
	for i := range qs {
		t := r.IntN(n)
		qs[i] = near(r, ix.vecs[t*dim:(t+1)*dim], 0.8)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if len(ix.Search(qs[i%len(qs)], 10)) != 10 {
			b.Fatal("short result")
		}
	}
}

func BenchmarkExactScan100kx384(b *testing.B)    { benchIndex(b, 100_000, 384, false) }
func BenchmarkExactScan300kx384(b *testing.B)    { benchIndex(b, 300_000, 384, false) }
func BenchmarkBinaryRerank500kx384(b *testing.B) { benchIndex(b, 500_000, 384, true) }
func BenchmarkBinaryRerank1Mx384(b *testing.B)   { benchIndex(b, 1_000_000, 384, true) }

// TestIndexSimilarity: the dot product with one stored vector by id; unknown ids and
// queries of another dimension are refused.
func TestIndexSimilarity(t *testing.T) {
	ix := NewIndex(2)
	if err := ix.Add("a", []float32{1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add("b", []float32{0.6, 0.8}); err != nil {
		t.Fatal(err)
	}
	if s, ok := ix.Similarity([]float32{0, 1}, "b"); !ok || s != 0.8 {
		t.Errorf("Similarity(b) = %v, %v; want 0.8, true", s, ok)
	}
	if s, ok := ix.Similarity([]float32{0, 1}, "a"); !ok || s != 0 {
		t.Errorf("Similarity(a) = %v, %v; want 0, true", s, ok)
	}
	if _, ok := ix.Similarity([]float32{0, 1}, "missing"); ok {
		t.Error("Similarity of an unknown id succeeded")
	}
	if _, ok := ix.Similarity([]float32{0, 1, 0}, "a"); ok {
		t.Error("Similarity with a query of another dimension succeeded")
	}
}
