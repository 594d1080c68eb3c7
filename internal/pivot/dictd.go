package pivot

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Dictionary is one translating dictionary in dictd format (as FreeDict ships it:
// NAME.index and NAME.dict.dz, or NAME.dict), read whole.
type Dictionary struct {
	// Name is the database name, e.g. "freedict-eng-deu".
	Name string
	// From and To are the ISO 639-3 languages the name ends in ("eng", "deu").
	From, To string
	// Entries maps each lowercased headword to its translations.
	Entries map[string][]string
}

// namePair matches the language pair a dictd database name ends in.
var namePair = regexp.MustCompile(`([a-z]{3})-([a-z]{3})$`)

// Files returns the index and data files of the dictd database at base (a path
// without extension), preferring the compressed data file. ok is false when either
// is missing.
func Files(base string) (index, data string, ok bool) {
	index = base + ".index"
	if _, err := os.Stat(index); err != nil {
		return "", "", false
	}
	for _, d := range []string{base + ".dict.dz", base + ".dict"} {
		if _, err := os.Stat(d); err == nil {
			return index, d, true
		}
	}
	return "", "", false
}

// Read reads the dictd database at base whole. Its name must end in a language pair
// ("freedict-eng-deu"). Errors name the file and, for a bad index line, its number.
// Building a table does not need it: Builder.ReadDictionary streams the files.
func Read(ctx context.Context, base string) (*Dictionary, error) {
	name, from, to, err := parseName(base)
	if err != nil {
		return nil, err
	}
	type rec struct {
		line int32
		head string
		ts   []string
	}
	var recs []rec
	err = scan(ctx, base, func(line int32, head []byte, ts []string) {
		recs = append(recs, rec{line, string(head), ts})
	})
	if err != nil {
		return nil, err
	}
	// A headword on several index lines gets their translations in index order.
	slices.SortFunc(recs, func(a, b rec) int { return cmp.Compare(a.line, b.line) })
	d := &Dictionary{Name: name, From: from, To: to, Entries: map[string][]string{}}
	for _, r := range recs {
		d.Entries[r.head] = append(d.Entries[r.head], r.ts...)
	}
	return d, nil
}

// parseName returns the database name of base and the languages it ends in.
func parseName(base string) (name, from, to string, err error) {
	name = filepath.Base(base)
	m := namePair.FindStringSubmatch(name)
	if m == nil {
		return "", "", "", fmt.Errorf("dictionary %s: the name does not end in a language pair such as eng-deu", base)
	}
	return name, m[1], m[2], nil
}

// indexEntry is one line of a dictd index: where its headword's entry lies in the
// data file. The headword is heads[head:head+headLen] of the index's headwords.
type indexEntry struct {
	off     int64
	n       uint32
	line    int32
	head    uint32
	headLen uint32
}

// dictIndex is a dictd index read compactly: its headwords in one array.
type dictIndex struct {
	entries []indexEntry
	heads   []byte
}

func (x *dictIndex) head(e indexEntry) []byte { return x.heads[e.head : e.head+e.headLen] }

// scan calls fn with each entry of the dictd database at base: its index line
// number (from 1), its lowercased headword and its translations. It reads the index
// first, then decompresses the data once, front to back, calling fn in the order
// the entries lie in the data (FreeDict's index is sorted by headword, its data is
// not), so neither the whole text nor all entries are ever held.
// The headword is valid until fn returns.
func scan(ctx context.Context, base string, fn func(line int32, head []byte, ts []string)) error {
	index, dataPath, ok := Files(base)
	if !ok {
		return fmt.Errorf("dictionary %s: needs %s.index and %s.dict.dz (or .dict)", base, base, base)
	}
	x, err := readIndex(ctx, index)
	if err != nil {
		return err
	}
	entries := x.entries
	slices.SortStableFunc(entries, func(a, b indexEntry) int { return cmp.Compare(a.off, b.off) })

	f, err := os.Open(dataPath)
	if err != nil {
		return fmt.Errorf("dictionary data: %w", err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 256<<10)
	if strings.HasSuffix(dataPath, ".dz") {
		z, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("dictionary data %s: %w", dataPath, err)
		}
		defer z.Close()
		r = z
	}
	w := &window{r: r}
	for i, e := range entries {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b, err := w.get(e.off, int64(e.n))
		if errors.Is(err, errPastEnd) {
			// Name the first index line that runs past the end, as a reader
			// going down the index would.
			bad := e
			for _, o := range entries[i:] {
				if o.off+int64(o.n) > w.total && o.line < bad.line {
					bad = o
				}
			}
			return fmt.Errorf("dictionary index %s line %d: entry at byte %d, length %d, runs past the end of %s (%d bytes)", index, bad.line, bad.off, bad.n, dataPath, w.total)
		}
		if err != nil {
			return fmt.Errorf("dictionary data %s: %w", dataPath, err)
		}
		fn(e.line, x.head(e), translations(b))
	}
	// Read to the end, so that a damaged file fails its checksum as before.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("dictionary data %s: %w", dataPath, err)
	}
	return nil
}

// readIndex reads a dictd index, leaving out the database's own entries
// (00-database-info and the like).
func readIndex(ctx context.Context, index string) (*dictIndex, error) {
	f, err := os.Open(index)
	if err != nil {
		return nil, fmt.Errorf("dictionary index: %w", err)
	}
	defer f.Close()
	out := &dictIndex{}
	if fi, err := f.Stat(); err == nil {
		// FreeDict's lines average about 25 bytes, half of it the headword.
		out.entries = make([]indexEntry, 0, fi.Size()/24+16)
		out.heads = make([]byte, 0, fi.Size()/2+16)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := int32(1); sc.Scan(); line++ {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		text := sc.Bytes()
		h, rest, ok1 := bytes.Cut(text, []byte("\t"))
		o, rest, ok2 := bytes.Cut(rest, []byte("\t"))
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("dictionary index %s line %d: want headword, offset and length separated by tabs", index, line)
		}
		l, _, _ := bytes.Cut(rest, []byte("\t"))
		start := len(out.heads)
		out.heads = appendLower(out.heads, bytes.TrimSpace(h))
		head := out.heads[start:]
		if len(head) == 0 || bytes.HasPrefix(head, []byte("00-database")) || bytes.HasPrefix(head, []byte("00database")) {
			out.heads = out.heads[:start]
			continue
		}
		off, err1 := decode64(o)
		n, err2 := decode64(l)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("dictionary index %s line %d: %w", index, line, err)
		}
		if n > math.MaxUint32 || len(out.heads) > math.MaxUint32 {
			return nil, fmt.Errorf("dictionary index %s line %d: entry or index too large", index, line)
		}
		out.entries = append(out.entries, indexEntry{off: off, n: uint32(n), line: line, head: uint32(start), headLen: uint32(len(head))})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dictionary index %s: %w", index, err)
	}
	return out, nil
}

// errPastEnd says an entry runs past the end of the data.
var errPastEnd = errors.New("past the end of the data")

// window holds the part of a data stream from the entry being read on: entries
// are asked for in order of offset, and what lies before is dropped.
type window struct {
	r     io.Reader
	buf   []byte
	start int64 // the offset of buf[0]
	eof   bool
	total int64 // the stream's length, once eof
}

// get returns the n bytes at off, which must not be before the offset asked for
// last. They are valid until the next call.
func (w *window) get(off, n int64) ([]byte, error) {
	if off < w.start {
		return nil, fmt.Errorf("entry at byte %d asked for after byte %d", off, w.start)
	}
	if end := w.start + int64(len(w.buf)); off >= end {
		w.buf = w.buf[:0]
		if skip := off - end; skip > 0 {
			m, err := io.CopyN(io.Discard, w.r, skip)
			if err == io.EOF {
				w.eof, w.total = true, end+m
				return nil, errPastEnd
			}
			if err != nil {
				return nil, err
			}
		}
	} else {
		k := copy(w.buf, w.buf[off-w.start:])
		w.buf = w.buf[:k]
	}
	w.start = off
	for int64(len(w.buf)) < n {
		if w.eof {
			return nil, errPastEnd
		}
		if cap(w.buf)-len(w.buf) < 32<<10 {
			w.buf = slices.Grow(w.buf, max(64<<10, cap(w.buf)))
		}
		m, err := w.r.Read(w.buf[len(w.buf):cap(w.buf)])
		w.buf = w.buf[:len(w.buf)+m]
		if err == io.EOF {
			w.eof, w.total = true, w.start+int64(len(w.buf))
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return w.buf[:n], nil
}

// appendLower appends b lowercased, as bytes.ToLower would give it.
func appendLower(dst, b []byte) []byte {
	for _, c := range b {
		if c >= 0x80 {
			return append(dst, bytes.ToLower(b)...)
		}
	}
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// decode64 decodes dictd's base64 numbers (most significant digit first).
func decode64(s []byte) (int64, error) {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	if len(s) == 0 || len(s) > 10 {
		return 0, fmt.Errorf("bad base64 number %q", s)
	}
	var n int64
	for i := 0; i < len(s); i++ {
		v := strings.IndexByte(digits, s[i])
		if v < 0 {
			return 0, fmt.Errorf("bad base64 number %q", s)
		}
		n = n*64 + int64(v)
	}
	return n, nil
}

// trimSenseNumber removes the "2. " FreeDict puts before each sense of a word
// with several.
func trimSenseNumber(ln []byte) []byte {
	i := 0
	for i < len(ln) && ln[i] >= '0' && ln[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(ln) && ln[i] == '.' && ln[i+1] == ' ' {
		return ln[i+2:]
	}
	return ln
}

// stripAnnotations removes FreeDict's grammar, usage and cross-reference marks:
// <masc>, [Br.], (sth), {see}. An opening mark without its closing one is kept.
func stripAnnotations(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		var closer byte
		switch b[i] {
		case '<':
			closer = '>'
		case '[':
			closer = ']'
		case '(':
			closer = ')'
		case '{':
			closer = '}'
		}
		if closer != 0 {
			if j := bytes.IndexByte(b[i+1:], closer); j >= 0 {
				i += j + 1
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}

// translations returns the translations of one FreeDict entry: the lines after the
// headword line that do not start with a space (indented lines are examples and
// cross-references), split at commas and semicolons, annotations removed.
func translations(entry []byte) []string {
	var out []string
	lines := bytes.Split(entry, []byte("\n"))
	for _, ln := range lines[1:] {
		if len(bytes.TrimSpace(ln)) == 0 || ln[0] == ' ' || ln[0] == '\t' {
			continue
		}
		s := string(bytes.ToLower(stripAnnotations(trimSenseNumber(ln))))
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
			t := strings.Join(strings.Fields(part), " ")
			if t != "" && len(t) < 40 {
				out = append(out, t)
			}
		}
	}
	return out
}
