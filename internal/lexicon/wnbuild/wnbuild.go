// Package wnbuild compiles the WordNet 3.0 database files into the compact, deterministic
// table that package lexicon embeds; it runs only at build time (go generate).
//
// Table layout (all integers unsigned varints, the whole stream gzip-compressed with no
// name and no timestamp):
//
//	magic "WNLX1\n"
//	words:    N, then N front-coded lemmas sorted bytewise (shared-prefix length, suffix length, suffix)
//	synsets:  S, then per synset: pos (0 noun, 1 verb, 2 adj, 3 adv), member count, member word ids,
//	          relation count, relations (target synset id << 2 | kind; kind 0 hypernym, 1 similar-to,
//	          2 hyponym, 3 also-see)
//	senses:   per word: count, synset ids in WordNet sense order, nouns first, then verbs, adjectives, adverbs
//	derived:  per word: count, word ids of derivationally related forms
//	except:   E, then E entries sorted by (form, pos): front-coded form, pos, base count, base word ids
//
// Lemmas are lowercase with '_' joining the words of a collocation, as in WordNet.
package wnbuild

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Magic starts every decompressed table.
const Magic = "WNLX1\n"

// Relation kinds stored in the synset relation list.
const (
	RelHypernym = 0
	RelSimilar  = 1
	RelHyponym  = 2
	RelAlsoSee  = 3
)

// POS names in table order; the file suffixes of the WordNet database.
var POS = [4]string{"noun", "verb", "adj", "adv"}

type synKey struct {
	pos    int // file (0..3)
	offset int64
}

type rawPtr struct {
	sym    string
	target synKey
	src    int // 1-based source word number, 0 for a semantic pointer
	dst    int // 1-based target word number
}

type rawSyn struct {
	key     synKey
	members []string
	ptrs    []rawPtr
}

// Build reads the WordNet database in dir (data.*, index.*, *.exc) and returns the gzipped table.
func Build(dir string) ([]byte, error) {
	var syns []*rawSyn
	byKey := map[synKey]int{}
	words := map[string]bool{}
	for p, name := range POS {
		path := filepath.Join(dir, "data."+name)
		ss, err := readData(path, p)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			byKey[s.key] = len(syns)
			syns = append(syns, s)
			for _, m := range s.members {
				words[m] = true
			}
		}
	}
	// index.*: sense order per lemma and part of speech.
	senses := map[string][4][]synKey{}
	for p, name := range POS {
		path := filepath.Join(dir, "index."+name)
		if err := readIndex(path, p, func(lemma string, keys []synKey) {
			words[lemma] = true
			s := senses[lemma]
			s[p] = keys
			senses[lemma] = s
		}); err != nil {
			return nil, err
		}
	}
	type exc struct {
		form  string
		pos   int
		bases []string
	}
	var excs []exc
	for p, name := range POS {
		path := filepath.Join(dir, name+".exc")
		lines, err := readLines(path)
		if err != nil {
			return nil, err
		}
		for i, ln := range lines {
			f := strings.Fields(ln)
			if len(f) < 2 {
				return nil, fmt.Errorf("wordnet exception list %s line %d: want \"form base...\", got %q", path, i+1, ln)
			}
			var bases []string
			for _, b := range f[1:] {
				b = strings.ToLower(b)
				if words[b] {
					bases = append(bases, b)
				}
			}
			if len(bases) > 0 {
				excs = append(excs, exc{form: strings.ToLower(f[0]), pos: p, bases: bases})
			}
		}
	}

	wordList := make([]string, 0, len(words))
	for w := range words {
		wordList = append(wordList, w)
	}
	sort.Strings(wordList)
	wid := make(map[string]uint64, len(wordList))
	for i, w := range wordList {
		wid[w] = uint64(i)
	}

	var buf bytes.Buffer
	buf.WriteString(Magic)
	var tmp [binary.MaxVarintLen64]byte
	put := func(v uint64) { buf.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	prev := ""
	putFront := func(s string) {
		n := 0
		for n < len(s) && n < len(prev) && s[n] == prev[n] {
			n++
		}
		put(uint64(n))
		put(uint64(len(s) - n))
		buf.WriteString(s[n:])
		prev = s
	}

	put(uint64(len(wordList)))
	for _, w := range wordList {
		putFront(w)
	}

	put(uint64(len(syns)))
	derived := make([]map[uint64]bool, len(wordList))
	for _, s := range syns {
		put(uint64(s.key.pos))
		put(uint64(len(s.members)))
		for _, m := range s.members {
			put(wid[m])
		}
		var rels []uint64
		seen := map[uint64]bool{}
		for _, pt := range s.ptrs {
			ti, ok := byKey[pt.target]
			if !ok {
				return nil, fmt.Errorf("wordnet data.%s: synset %08d points to missing synset %08d in data.%s",
					POS[s.key.pos], s.key.offset, pt.target.offset, POS[pt.target.pos])
			}
			kind := -1
			switch pt.sym {
			case "@", "@i":
				kind = RelHypernym
			case "&":
				kind = RelSimilar
			case "~": // instance hyponyms ("~i": people, places) are left out
				kind = RelHyponym
			case "^":
				if pt.src == 0 {
					kind = RelAlsoSee
				}
			case "+":
				if pt.src > 0 && pt.src <= len(s.members) && pt.dst > 0 && pt.dst <= len(syns[ti].members) {
					from := wid[s.members[pt.src-1]]
					to := wid[syns[ti].members[pt.dst-1]]
					if from != to {
						if derived[from] == nil {
							derived[from] = map[uint64]bool{}
						}
						derived[from][to] = true
					}
				}
			}
			if kind < 0 || pt.src != 0 {
				continue
			}
			r := uint64(ti)<<2 | uint64(kind)
			if !seen[r] {
				seen[r] = true
				rels = append(rels, r)
			}
		}
		put(uint64(len(rels)))
		for _, r := range rels {
			put(r)
		}
	}

	for _, w := range wordList {
		s := senses[w]
		var ids []uint64
		for p := range 4 {
			for _, k := range s[p] {
				ti, ok := byKey[k]
				if !ok {
					return nil, fmt.Errorf("wordnet index.%s: lemma %q names missing synset %08d", POS[p], w, k.offset)
				}
				ids = append(ids, uint64(ti))
			}
		}
		put(uint64(len(ids)))
		for _, id := range ids {
			put(id)
		}
	}

	for i := range wordList {
		d := make([]uint64, 0, len(derived[i]))
		for t := range derived[i] {
			d = append(d, t)
		}
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		put(uint64(len(d)))
		for _, t := range d {
			put(t)
		}
	}

	sort.SliceStable(excs, func(a, b int) bool {
		if excs[a].form != excs[b].form {
			return excs[a].form < excs[b].form
		}
		return excs[a].pos < excs[b].pos
	})
	put(uint64(len(excs)))
	prev = ""
	for _, e := range excs {
		putFront(e.form)
		put(uint64(e.pos))
		put(uint64(len(e.bases)))
		for _, b := range e.bases {
			put(wid[b])
		}
	}

	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("lexicon table: gzip writer: %w", err)
	}
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("lexicon table: compress: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("lexicon table: compress: %w", err)
	}
	return out.Bytes(), nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordnet input: %w (install the Debian package wordnet-base, or pass -wordnet DIR)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		ln := sc.Text()
		if ln == "" || strings.HasPrefix(ln, "  ") { // licence header lines start with two spaces
			continue
		}
		lines = append(lines, ln)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("wordnet input %s: %w", path, err)
	}
	return lines, nil
}

func posOf(sym string) (int, error) {
	switch sym {
	case "n":
		return 0, nil
	case "v":
		return 1, nil
	case "a", "s":
		return 2, nil
	case "r":
		return 3, nil
	}
	return 0, fmt.Errorf("unknown part of speech %q", sym)
}

// cleanLemma lowercases a data-file lemma and drops an adjective marker like "(ip)".
func cleanLemma(s string) string {
	if i := strings.IndexByte(s, '('); i > 0 {
		s = s[:i]
	}
	return strings.ToLower(s)
}

func readData(path string, p int) ([]*rawSyn, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	out := make([]*rawSyn, 0, len(lines))
	for i, ln := range lines {
		bad := func(what string) error {
			return fmt.Errorf("wordnet data file %s line %d: %s", path, i+1, what)
		}
		if j := strings.Index(ln, " | "); j >= 0 {
			ln = ln[:j]
		}
		f := strings.Fields(ln)
		if len(f) < 4 {
			return nil, bad("too few fields")
		}
		off, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, bad("bad synset offset")
		}
		wcnt, err := strconv.ParseInt(f[3], 16, 32)
		if err != nil || len(f) < 4+2*int(wcnt)+1 {
			return nil, bad("bad word count")
		}
		s := &rawSyn{key: synKey{p, off}}
		k := 4
		for range wcnt {
			s.members = append(s.members, cleanLemma(f[k]))
			k += 2
		}
		pcnt, err := strconv.Atoi(f[k])
		if err != nil || len(f) < k+1+4*pcnt {
			return nil, bad("bad pointer count")
		}
		k++
		for range pcnt {
			tp, err := posOf(f[k+2])
			if err != nil {
				return nil, bad(err.Error())
			}
			toff, err := strconv.ParseInt(f[k+1], 10, 64)
			if err != nil {
				return nil, bad("bad pointer offset")
			}
			st, err := strconv.ParseUint(f[k+3], 16, 16)
			if err != nil {
				return nil, bad("bad pointer source/target")
			}
			s.ptrs = append(s.ptrs, rawPtr{sym: f[k], target: synKey{tp, toff}, src: int(st >> 8), dst: int(st & 0xff)})
			k += 4
		}
		out = append(out, s)
	}
	return out, nil
}

func readIndex(path string, p int, fn func(lemma string, keys []synKey)) error {
	lines, err := readLines(path)
	if err != nil {
		return err
	}
	for i, ln := range lines {
		f := strings.Fields(ln)
		if len(f) < 6 {
			return fmt.Errorf("wordnet index file %s line %d: too few fields", path, i+1)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n <= 0 || n > len(f)-4 {
			return fmt.Errorf("wordnet index file %s line %d: bad synset count %q", path, i+1, f[2])
		}
		keys := make([]synKey, 0, n)
		for _, o := range f[len(f)-n:] {
			off, err := strconv.ParseInt(o, 10, 64)
			if err != nil {
				return fmt.Errorf("wordnet index file %s line %d: bad synset offset %q", path, i+1, o)
			}
			keys = append(keys, synKey{p, off})
		}
		fn(strings.ToLower(f[0]), keys)
	}
	return nil
}
