package toolswasm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

// TestCatalogueIsLazyAndMatchesModules checks that Catalogue describes every module
// without unpacking it (no Wasm), that each Manifest is exactly the module's packed
// manifest section, and that Load returns the same verified bytes as Modules.
func TestCatalogueIsLazyAndMatchesModules(t *testing.T) {
	cat, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	mods, err := Modules()
	if err != nil {
		t.Fatal(err)
	}
	if len(cat) != len(mods) {
		t.Fatalf("Catalogue has %d modules, Modules %d", len(cat), len(mods))
	}
	for i, c := range cat {
		m := mods[i]
		if c.Wasm != nil || c.Load == nil {
			t.Fatalf("%s: Catalogue unpacked the module (Wasm %d bytes) or has no Load", c.Name, len(c.Wasm))
		}
		if c.Name != m.Name || c.SHA256 != m.SHA256 || strings.Join(c.Tools, ",") != strings.Join(m.Tools, ",") {
			t.Fatalf("Catalogue %s/%s/%v differs from Modules %s/%s/%v", c.Name, c.SHA256, c.Tools, m.Name, m.SHA256, m.Tools)
		}
		packed, found, err := wasmbin.CustomSection(m.Wasm, policy.ManifestSection)
		if err != nil || !found || !bytes.Equal(packed, c.Manifest) {
			t.Fatalf("%s: the embedded tool.toml differs from the packed manifest section (found %v, %v)", c.Name, found, err)
		}
		wasm, err := c.Load()
		if err != nil || !bytes.Equal(wasm, m.Wasm) {
			t.Fatalf("%s: Load = %d bytes, %v; want the module Modules returns", c.Name, len(wasm), err)
		}
	}
}

// TestCatalogueLoadChecksDigest checks that a lazily loaded module is still checked
// against its pinned digest, when it is loaded.
func TestCatalogueLoadChecksDigest(t *testing.T) {
	cat, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	saved := digests["memory"]
	digests["memory"] = strings.Repeat("0", 64)
	defer func() { digests["memory"] = saved }()
	if _, err := cat[0].Load(); err == nil || !strings.Contains(err.Error(), "is pinned") {
		t.Fatalf("Load with a wrong pin = %v, want a digest mismatch", err)
	}
}
