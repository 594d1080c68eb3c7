// Package pivottest writes small translating dictionaries in dictd format for tests.
package pivottest

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteDictd writes a dictd database (NAME.index and NAME.dict.dz) with one entry
// per element of entries ("headword\nbody…"), the way FreeDict ships them, and
// returns its base path.
func WriteDictd(t testing.TB, dir, name string, entries []string) string {
	t.Helper()
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b64 := func(n int) string {
		if n == 0 {
			return "A"
		}
		var s []byte
		for ; n > 0; n /= 64 {
			s = append([]byte{digits[n%64]}, s...)
		}
		return string(s)
	}
	var data bytes.Buffer
	var index strings.Builder
	entries = append([]string{"00-database-info\nThis is a test dictionary.\n"}, entries...)
	for _, e := range entries {
		head, _, _ := strings.Cut(e, "\n")
		head, _, _ = strings.Cut(head, " /")
		index.WriteString(head + "\t" + b64(data.Len()) + "\t" + b64(len(e)) + "\n")
		data.WriteString(e)
	}
	base := filepath.Join(dir, name)
	if err := os.WriteFile(base+".index", []byte(index.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(data.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".dict.dz", z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return base
}
