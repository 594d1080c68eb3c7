package wasmbin

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseProducersRoundTrip(t *testing.T) {
	want := Producers{
		Language:    []Producer{{Name: "Rust"}},
		ProcessedBy: []Producer{{Name: "rustc", Version: "1.63.0"}, {Name: "wasm-opt", Version: "116"}},
		SDK:         []Producer{{Name: "openhuman", Version: "0.1.0"}},
	}
	got, err := ParseProducers(AppendProducers(nil, want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v, want %+v", *got, want)
	}
	// rustc 1.63's own bytes (from a wasm32-unknown-unknown cdylib).
	rustc := []byte("\x02\x08language\x01\x04Rust\x00\x0cprocessed-by\x01\x05rustc\x061.63.0")
	got, err = ParseProducers(rustc)
	if err != nil || got.Language[0].Name != "Rust" || got.ProcessedBy[0] != (Producer{"rustc", "1.63.0"}) {
		t.Fatalf("rustc's section: %+v %v", got, err)
	}
}

func TestParseProducersRefusesMalformed(t *testing.T) {
	good := AppendProducers(nil, Producers{Language: []Producer{{Name: "C99"}}})
	cases := map[string][]byte{
		"truncated":       good[:len(good)-1],
		"trailing bytes":  append(append([]byte{}, good...), 0),
		"huge count":      {0xff, 0xff, 0xff, 0xff, 0x0f},
		"invalid UTF-8":   []byte("\x01\x08language\x01\x02\xff\xfe\x00"),
		"over 4 KiB":      make([]byte, 5000),
		"value truncated": []byte("\x01\x08language\x05\x01C"),
	}
	for name, b := range cases {
		if _, err := ParseProducers(b); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an ErrInvalid", name, err)
		}
	}
}

func TestInferToolchain(t *testing.T) {
	as := append([]byte("\x00asm"), utf16LE("~lib/rt/itcms.ts")...)
	if tc, ev := InferToolchain(as); tc != "AssemblyScript" || !strings.Contains(ev, "~lib/") {
		t.Errorf("AssemblyScript: %q %q", tc, ev)
	}
	if tc, _ := InferToolchain([]byte("xx/usr/src/rustc-1.63.0/library/core/src/slice/mod.rs")); tc != "Rust" {
		t.Errorf("Rust: %q", tc)
	}
	if tc, _ := InferToolchain([]byte("~lib/rt/ as ASCII, not UTF-16")); tc != "" {
		t.Errorf("plain bytes: %q", tc)
	}
}
