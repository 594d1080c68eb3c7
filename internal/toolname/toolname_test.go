package toolname

import (
	"strings"
	"testing"
)

func TestPortable(t *testing.T) {
	for in, want := range map[string]string{
		"memory.search": "memory_search", "tree.read_chunk": "tree_read_chunk", "searxng_search": "searxng_search",
		"a/b c": "a_b_c", "é.x": "__x", "ok-Name_9": "ok-Name_9",
	} {
		if got := Portable(in); got != want {
			t.Errorf("Portable(%q) = %q, want %q", in, got, want)
		}
		if !IsPortable(Portable(in)) {
			t.Errorf("Portable(%q) is not portable", in)
		}
	}
	if IsPortable("a.b") || IsPortable("") || IsPortable(strings.Repeat("a", 65)) {
		t.Error("IsPortable accepts a name Claude Desktop refuses")
	}
	if err := Check(strings.Repeat("a", 64)); err != nil {
		t.Errorf("64 characters refused: %v", err)
	}
	if err := Check(strings.Repeat("a", 65)); err == nil || !strings.Contains(err.Error(), "64") {
		t.Errorf("65 characters: err = %v", err)
	}
}
