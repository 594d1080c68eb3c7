package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/builtin"
)

func TestGzipDeterministic(t *testing.T) {
	in := bytes.Repeat([]byte("\x00asm openhuman module bytes "), 5000)
	a, err := Gzip(in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Gzip(in)
	if !bytes.Equal(a, b) {
		t.Fatal("two compressions of the same bytes differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || zr.Comment != "" || !zr.ModTime.Equal(time.Time{}) && zr.ModTime.Unix() != 0 {
		t.Fatalf("gzip header carries name %q comment %q mtime %v", zr.Name, zr.Comment, zr.ModTime)
	}
	out, _ := io.ReadAll(zr)
	if !bytes.Equal(out, in) {
		t.Fatal("round trip changed the bytes")
	}
}

func TestToolsCatalogue(t *testing.T) {
	ts := tools()
	if len(ts) != 2 || ts[0].Folder != "memory" || ts[0].Capability != "memory.read" || len(ts[0].Tools) != 6 ||
		ts[0].Tools[2] != "tree.read_chunk" || ts[1].Folder != "searxng_search" || ts[1].Capability != "web.searxng" ||
		!slices.Equal(ts[1].Tools, []string{"searxng_search"}) {
		t.Fatalf("tools() = %+v", ts)
	}
	var all []string
	for _, x := range ts {
		all = append(all, x.Tools...)
		if _, err := os.Stat(filepath.Join("..", x.Folder, "tool.toml")); err != nil {
			t.Fatalf("%s: %v", x.Name, err)
		}
	}
	if !slices.Equal(all, builtin.Catalogue) {
		t.Fatalf("the modules' tools %v are not the catalogue %v", all, builtin.Catalogue)
	}
}

// TestValidateToolList checks that a manifest must declare exactly its module's
// tools, in order.
func TestValidateToolList(t *testing.T) {
	man := func(names ...string) []byte {
		s := "abi = \"openhuman/1\"\ncapabilities = [\"memory.read\"]\n"
		for _, n := range names {
			s += "[[tool]]\nname = \"" + n + "\"\ndescription = \"d\"\nexport = \"oh_call\"\ninput_schema = '{\"type\":\"object\"}'\noutput_schema = '{\"type\":\"object\"}'\n"
		}
		return []byte(s)
	}
	tl := tool{Folder: "memory", Name: "memory", Capability: "memory.read", Tools: []string{"memory.search", "tree.browse"}}
	for _, names := range [][]string{{"memory.search"}, {"tree.browse", "memory.search"}, {"memory.search", "tree.browse", "tree.read_chunk"}} {
		err := validate(tl, "tool.toml", man(names...), nil)
		if err == nil || !strings.Contains(err.Error(), "must declare exactly the tools [memory.search tree.browse]") {
			t.Fatalf("tools %v: err = %v", names, err)
		}
	}
}

// TestCompareNamesModules checks that -check's comparison names every module whose
// rebuilt digest differs from digests.go or from the committed .wasm.gz, and says
// when the toolchain differs.
func TestCompareNamesModules(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "modules"), 0o755)
	mk := func(folder, name string, content []byte) built {
		sum := sha256.Sum256(content)
		gz, _ := Gzip(content)
		return built{tool: tool{Folder: folder, Name: name}, Packed: content, SHA256: hex.EncodeToString(sum[:]), Gz: gz}
	}
	good := mk("memory_search", "memory.search", []byte("module A"))
	stale := mk("tree_browse", "tree.browse", []byte("module B"))
	src, err := digestsSource("go1.26.8", []built{good, stale})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "digests.go"), src, 0o644)
	for _, m := range []built{good, stale} {
		os.WriteFile(filepath.Join(dir, "modules", m.Folder+".wasm.gz"), m.Gz, 0o644)
	}
	if err := compare(dir, "go1.26.8", []built{good, stale}); err != nil {
		t.Fatalf("identical rebuild reported: %v", err)
	}
	rebuilt := mk("tree_browse", "tree.browse", []byte("module B, changed"))
	err = compare(dir, "go1.26.8", []built{good, rebuilt})
	if err == nil || !strings.Contains(err.Error(), "tree.browse (tree_browse): rebuilt sha256") || strings.Contains(err.Error(), "memory.search") {
		t.Fatalf("err = %v, want one naming tree.browse only", err)
	}
	err = compare(dir, "go1.27.0", []built{good, rebuilt})
	if err == nil || !strings.Contains(err.Error(), "built with go1.26.8 but this toolchain is go1.27.0") {
		t.Fatalf("err = %v, want the toolchain named", err)
	}
}
