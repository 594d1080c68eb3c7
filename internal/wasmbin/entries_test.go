package wasmbin

import (
	"errors"
	"strings"
	"testing"
)

// Parse refuses a section that declares more entries than any module may
// load with, from its count, before decoding an entry (issue 39: 3.5 M types
// in 10.5 MB took `tools audit` to 677 MB). At the limit it parses.
func TestParseRefusesEntriesOverTheLimit(t *testing.T) {
	typesOf := func(n int) []byte {
		out := append(append([]byte{}, Magic...), Version1...)
		c := AppendULEB(nil, uint64(n))
		for i := 0; i < n; i++ {
			c = append(c, 0x60, 0, 0)
		}
		out = append(out, SectionType)
		out = AppendULEB(out, uint64(len(c)))
		return append(out, c...)
	}
	if m, err := Parse(typesOf(MaxTypes)); err != nil || len(m.Types) != MaxTypes {
		t.Fatalf("%d types: %v", MaxTypes, err)
	}
	_, err := Parse(typesOf(MaxTypes + 1))
	if !errors.Is(err, ErrTooManyEntries) || !strings.Contains(err.Error(), "declares 10001 types; the limit is 10000") {
		t.Errorf("%d types: %v", MaxTypes+1, err)
	}
	// Custom sections are counted too.
	mod := append(append([]byte{}, Magic...), Version1...)
	for i := 0; i <= MaxCustomSections; i++ {
		mod = append(mod, SectionCustom, 2, 1, 'x')
	}
	if _, err := Parse(mod); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("%d custom sections: %v", MaxCustomSections+1, err)
	}
}
