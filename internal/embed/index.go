package embed

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"

	"github.com/viterin/vek/vek32"
)

// EncodeBlob stores v as little-endian float32s (the `vectors` table's blob format).
func EncodeBlob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeBlob reads a blob written by EncodeBlob.
func DecodeBlob(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector blob of %d bytes is not a whole number of float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Hit is one search result: the vector's id and its dot product with the query (cosine
// similarity for normalised vectors).
type Hit struct {
	ID    string
	Score float32
}

// DefaultBinaryThreshold is the index size from which Search prefilters with 1-bit codes.
const DefaultBinaryThreshold = 300_000

// Index holds vectors of one dimension in memory and finds the nearest to a query. Up to
// BinaryThreshold vectors it scans all of them exactly; above, it ranks all by the Hamming
// distance of 1-bit sign codes and rescores the best candidates exactly. Not safe for
// concurrent Add; concurrent Search calls are fine once adding is done.
type Index struct {
	// BinaryThreshold: at or above this many vectors Search uses the 1-bit prefilter
	// (DefaultBinaryThreshold when 0).
	BinaryThreshold int
	// Candidates: how many prefiltered vectors are rescored, at least (default max(40·k, 1000)).
	Candidates int

	dim   int
	words int // uint64 words per code
	ids   []string
	pos   map[string]int // id → position, for Similarity
	vecs  []float32
	codes []uint64
}

// NewIndex returns an empty index for vectors of dim dimensions (0: taken from the first Add).
func NewIndex(dim int) *Index {
	ix := &Index{}
	if dim > 0 {
		ix.setDim(dim)
	}
	return ix
}

func (ix *Index) setDim(d int) {
	ix.dim = d
	ix.words = (d + 63) / 64
}

// Dim is the vectors' dimension (0 while empty and unset).
func (ix *Index) Dim() int { return ix.dim }

// Len is the number of vectors.
func (ix *Index) Len() int { return len(ix.ids) }

// Add appends vector v under id. v should be L2-normalised (see Normalize); it is copied. A
// vector of another dimension or with NaN/Inf components is refused with an error.
func (ix *Index) Add(id string, v []float32) error {
	if len(v) == 0 {
		return fmt.Errorf("index: vector %q is empty", id)
	}
	if ix.dim == 0 {
		ix.setDim(len(v))
	}
	if len(v) != ix.dim {
		return fmt.Errorf("index: vector %q has %d dimensions, the index holds %d; models must not be mixed", id, len(v), ix.dim)
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("index: vector %q component %d is %v", id, i, x)
		}
	}
	if ix.pos == nil {
		ix.pos = map[string]int{}
	}
	ix.pos[id] = len(ix.ids)
	ix.ids = append(ix.ids, id)
	ix.vecs = append(ix.vecs, v...)
	ix.codes = appendCode(ix.codes, v, ix.words)
	return nil
}

// appendCode appends the sign bits of v (bit set for x > 0).
func appendCode(dst []uint64, v []float32, words int) []uint64 {
	start := len(dst)
	dst = append(dst, make([]uint64, words)...)
	for i, x := range v {
		if x > 0 {
			dst[start+i/64] |= 1 << (uint(i) % 64)
		}
	}
	return dst
}

// Search returns the k vectors with the highest dot product with q, best first (ties by id).
// q is normalised on a copy. A query of the wrong dimension, with NaN/Inf or of zero length,
// or k ≤ 0 gives nil.
func (ix *Index) Search(q []float32, k int) []Hit {
	if k <= 0 || len(ix.ids) == 0 || len(q) != ix.dim {
		return nil
	}
	qn := append([]float32(nil), q...)
	if Normalize(qn) != nil {
		return nil
	}
	threshold := ix.BinaryThreshold
	if threshold <= 0 {
		threshold = DefaultBinaryThreshold
	}
	var top topK
	if len(ix.ids) < threshold {
		top = ix.exact(qn, k)
	} else {
		top = ix.binary(qn, k)
	}
	out := make([]Hit, len(top))
	for i, h := range top {
		out[i] = Hit{ID: ix.ids[h.i], Score: h.s}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Similarity returns the dot product of q with the vector stored under id (the last one
// added under that id), and false when the index holds no such id or q has another
// dimension. q should be L2-normalised, as Search's queries are after normalising.
func (ix *Index) Similarity(q []float32, id string) (float32, bool) {
	i, ok := ix.pos[id]
	if !ok || len(q) != ix.dim {
		return 0, false
	}
	return vek32.Dot(q, ix.vecs[i*ix.dim:(i+1)*ix.dim]), true
}

// Similarities is the cosine of q to the vector of each id of ids the index
// holds (an id without one is left out).
func (ix *Index) Similarities(q []float32, ids []string) map[string]float32 {
	out := make(map[string]float32, len(ids))
	for _, id := range ids {
		if sim, ok := ix.Similarity(q, id); ok {
			out[id] = sim
		}
	}
	return out
}

func (ix *Index) exact(q []float32, k int) topK {
	top := make(topK, 0, k+1)
	d := ix.dim
	for i := range ix.ids {
		top.offer(i, vek32.Dot(q, ix.vecs[i*d:(i+1)*d]), k)
	}
	return top
}

func (ix *Index) binary(q []float32, k int) topK {
	n := len(ix.ids)
	c := ix.Candidates
	if c <= 0 {
		c = max(40*k, 1000)
	}
	c = min(max(c, k), n)
	qc := appendCode(nil, q, ix.words)
	// Hamming distance of every code, then a histogram to find the cut that keeps ~c candidates.
	dist := make([]uint16, n)
	hist := make([]int, ix.words*64+1)
	w := ix.words
	for i := range n {
		code := ix.codes[i*w : (i+1)*w]
		h := 0
		for j, x := range code {
			h += bits.OnesCount64(x ^ qc[j])
		}
		dist[i] = uint16(h)
		hist[h]++
	}
	cut, acc := 0, 0
	for cut < len(hist) && acc+hist[cut] <= c {
		acc += hist[cut]
		cut++
	}
	// Everything below cut is a candidate; fill up with vectors at distance cut.
	room := c - acc
	top := make(topK, 0, k+1)
	d := ix.dim
	for i := range n {
		h := int(dist[i])
		if h > cut {
			continue
		}
		if h == cut {
			if room == 0 {
				continue
			}
			room--
		}
		top.offer(i, vek32.Dot(q, ix.vecs[i*d:(i+1)*d]), k)
	}
	return top
}

type scored struct {
	i int
	s float32
}

// topK is a min-heap of the best k scores seen.
type topK []scored

func (t topK) Len() int { return len(t) }
func (t topK) Less(a, b int) bool {
	if t[a].s != t[b].s {
		return t[a].s < t[b].s
	}
	return t[a].i > t[b].i
}
func (t topK) Swap(a, b int) { t[a], t[b] = t[b], t[a] }
func (t *topK) Push(x any)   { *t = append(*t, x.(scored)) }
func (t *topK) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}

func (t *topK) offer(i int, s float32, k int) {
	if len(*t) < k {
		heap.Push(t, scored{i, s})
		return
	}
	if s > (*t)[0].s {
		(*t)[0] = scored{i, s}
		heap.Fix(t, 0)
	}
}
