package wasmbin

import "testing"

// Parse records the declared limits of the module's memory.
func TestParseMemories(t *testing.T) {
	var b Builder
	b.Memory(65536)
	m, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Memories) != 1 || m.Memories[0].Min != 65536 || m.Memories[0].HasMax {
		t.Fatalf("memories %+v, want one of 65536 initial pages and no maximum", m.Memories)
	}
}
