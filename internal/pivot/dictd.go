package pivot

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
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

// Read reads the dictd database at base. Its name must end in a language pair
// ("freedict-eng-deu"). Errors name the file and, for a bad index line, its number.
func Read(ctx context.Context, base string) (*Dictionary, error) {
	name := filepath.Base(base)
	m := namePair.FindStringSubmatch(name)
	if m == nil {
		return nil, fmt.Errorf("dictionary %s: the name does not end in a language pair such as eng-deu", base)
	}
	index, dataPath, ok := Files(base)
	if !ok {
		return nil, fmt.Errorf("dictionary %s: needs %s.index and %s.dict.dz (or .dict)", base, base, base)
	}
	data, err := readData(dataPath)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(index)
	if err != nil {
		return nil, fmt.Errorf("dictionary index: %w", err)
	}
	defer f.Close()
	d := &Dictionary{Name: name, From: m[1], To: m[2], Entries: map[string][]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 3 {
			return nil, fmt.Errorf("dictionary index %s line %d: want headword, offset and length separated by tabs", index, line)
		}
		head := strings.ToLower(strings.TrimSpace(fields[0]))
		if head == "" || strings.HasPrefix(head, "00-database") || strings.HasPrefix(head, "00database") {
			continue
		}
		off, err1 := decode64(fields[1])
		n, err2 := decode64(fields[2])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("dictionary index %s line %d: %w", index, line, err)
		}
		if off+n > int64(len(data)) || n < 0 {
			return nil, fmt.Errorf("dictionary index %s line %d: entry at byte %d, length %d, runs past the end of %s (%d bytes)", index, line, off, n, dataPath, len(data))
		}
		d.Entries[head] = append(d.Entries[head], translations(data[off:off+n])...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dictionary index %s: %w", index, err)
	}
	return d, nil
}

// readData reads a dictd data file, decompressing a .dz (dictzip is gzip).
func readData(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dictionary data: %w", err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(path, ".dz") {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("dictionary data %s: %w", path, err)
		}
		defer z.Close()
		r = z
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("dictionary data %s: %w", path, err)
	}
	return b, nil
}

// decode64 decodes dictd's base64 numbers (most significant digit first).
func decode64(s string) (int64, error) {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	if s == "" || len(s) > 10 {
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
