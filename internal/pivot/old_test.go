package pivot

// The code paths before the Builder, kept to check that the table it builds is
// the same, to the last bit of every weight.

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
)

// oldRead is Read as it was: the whole data file in memory, then the index.
func oldRead(ctx context.Context, base string) (*Dictionary, error) {
	name, from, to, err := parseName(base)
	if err != nil {
		return nil, err
	}
	index, dataPath, ok := Files(base)
	if !ok {
		return nil, fmt.Errorf("dictionary %s: missing files", base)
	}
	f, err := os.Open(dataPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(dataPath, ".dz") {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		defer z.Close()
		r = z
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	fi, err := os.Open(index)
	if err != nil {
		return nil, err
	}
	defer fi.Close()
	d := &Dictionary{Name: name, From: from, To: to, Entries: map[string][]string{}}
	sc := bufio.NewScanner(fi)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d: fields", line)
		}
		head := strings.ToLower(strings.TrimSpace(fields[0]))
		if head == "" || strings.HasPrefix(head, "00-database") || strings.HasPrefix(head, "00database") {
			continue
		}
		off, err1 := decode64([]byte(fields[1]))
		n, err2 := decode64([]byte(fields[2]))
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		if off+n > int64(len(data)) || n < 0 {
			return nil, fmt.Errorf("line %d: past the end", line)
		}
		d.Entries[head] = append(d.Entries[head], translations(data[off:off+n])...)
	}
	return d, sc.Err()
}

// oldBuild is Build as it was.
func oldBuild(ctx context.Context, dicts ...*Dictionary) ([]Entry, error) {
	eID := map[string]int32{}
	var eWords []string
	fID := map[string]int32{}
	var pairs []uint64 // english id << 32 | foreign id
	idOf := func(m map[string]int32, s string, list *[]string) int32 {
		if id, ok := m[s]; ok {
			return id
		}
		id := int32(len(m))
		m[s] = id
		if list != nil {
			*list = append(*list, s)
		}
		return id
	}
	used := 0
	for _, d := range dicts {
		var other string
		enHead := false
		switch {
		case d.From == "eng" && d.To != "eng":
			other, enHead = d.To, true
		case d.To == "eng" && d.From != "eng":
			other = d.From
		default:
			continue
		}
		used++
		// Sorted, so that ids, and with them the order of floating-point sums, do
		// not depend on map order: the table is the same on every run.
		heads := slices.Sorted(maps.Keys(d.Entries))
		for n, head := range heads {
			ts := d.Entries[head]
			if n%8192 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			if enHead {
				if !english.MatchString(head) {
					continue
				}
				e := idOf(eID, head, &eWords)
				for _, t := range ts {
					pairs = append(pairs, uint64(e)<<32|uint64(idOf(fID, other+":"+t, nil)))
				}
				continue
			}
			f := idOf(fID, other+":"+head, nil)
			for _, t := range ts {
				if english.MatchString(t) {
					pairs = append(pairs, uint64(idOf(eID, t, &eWords))<<32|uint64(f))
				}
			}
		}
	}
	if used == 0 {
		return nil, fmt.Errorf("pivot: no dictionary translates English to or from another language")
	}
	slices.Sort(pairs)
	pairs = slices.Compact(pairs)
	e2f := csr(len(eWords), pairs, func(p uint64) (int32, int32) { return int32(p >> 32), int32(p) })
	f2e := csr(len(fID), pairs, func(p uint64) (int32, int32) { return int32(p), int32(p >> 32) })

	// kept[e] is how many of e's translations pass maxFanOut.
	kept := make([]int32, len(eWords))
	for e := range eWords {
		for _, f := range e2f.row(int32(e)) {
			if len(f2e.row(f)) <= maxFanOut {
				kept[e]++
			}
		}
	}
	score := make([]float64, len(eWords))
	back := make([]float64, len(eWords)) // the reverse probability, to break ties
	var touched []int32
	var out []Entry
	for e := range eWords {
		if e%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var fs []int32
		for _, f := range e2f.row(int32(e)) {
			if n := len(f2e.row(f)); n <= maxFanOut {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		for _, f := range fs {
			es := f2e.row(f)
			for _, p := range es {
				if p == int32(e) {
					continue
				}
				if score[p] == 0 {
					touched = append(touched, p)
				}
				score[p] += 1 / float64(len(fs)) / float64(len(es))
				back[p] += 1 / float64(kept[p]) / float64(len(es))
			}
		}
		var ps []Paraphrase
		var rev []float64
		for _, p := range touched {
			if score[p] >= minScore {
				ps = append(ps, Paraphrase{Term: eWords[p], Weight: score[p]})
				rev = append(rev, back[p])
			}
			score[p], back[p] = 0, 0
		}
		touched = touched[:0]
		if len(ps) == 0 {
			continue
		}
		// Equal scores are common (every paraphrase through one foreign word ties):
		// the one more likely to pivot back to the word comes first.
		sort.Sort(byScore{ps, rev})
		if len(ps) > maxParaphrases {
			n := maxParaphrases
			for n < len(ps) && n < 2*maxParaphrases && ps[n].Weight == ps[maxParaphrases-1].Weight {
				n++
			}
			ps = ps[:n]
		}
		top := ps[0].Weight
		for i := range ps {
			ps[i].Weight /= top
		}
		out = append(out, Entry{Word: eWords[e], Paraphrases: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Word < out[j].Word })
	return out, nil
}
