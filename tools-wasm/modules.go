package toolswasm

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-core/internal/builtin"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

//go:embed modules/*.wasm.gz
var files embed.FS

// manifests are the modules' manifest sources, the bytes `go generate` packs into
// each module's openhuman.manifest section (`go run ./tools-wasm/gen -check` keeps
// the two equal): a server lists the tools from them without decompressing a module.
//
//go:embed */tool.toml
var manifests embed.FS

// maxModuleBytes bounds the decompression of one embedded module.
const maxModuleBytes = 64 << 20

// Module is one first-party module: packed wasm (code plus its openhuman.manifest
// section), verified against its pinned digest. One module may serve several tools.
type Module struct {
	// Name is the module's name, e.g. "memory": its folder under tools-wasm/ and
	// the stem of its embedded file (the runtime lists it as Name + ".wasm").
	Name string
	// Tools are the tools the module serves, in catalogue order, e.g.
	// memory.search … tree.list_sources for "memory".
	Tools []string
	// SHA256 is the lowercase hex sha256 of Wasm, equal to the digest pinned at build time.
	SHA256 string
	// Wasm is the packed module (nil from Catalogue: Load decompresses it).
	Wasm []byte
	// Manifest is the module's manifest (TOML), equal to its openhuman.manifest
	// section.
	Manifest []byte
	// Load decompresses the module and checks it against its pinned sha256 and
	// Manifest, returning the packed module; each call decompresses again.
	Load func() ([]byte, error)
}

// Names lists the first-party tool names in catalogue order.
func Names() []string { return slices.Clone(builtin.Catalogue) }

// Modules returns the first-party modules in catalogue order — memory (serving
// memory.search, memory.recall, tree.read_chunk, tree.browse, tree.top_entities and
// tree.list_sources) and searxng_search — decompressed and each checked against
// its pinned sha256. A module that is missing, corrupt or does not match its digest
// is an error naming it.
func Modules() ([]Module, error) {
	out := make([]Module, 0, len(builtin.Modules))
	for _, spec := range builtin.Modules {
		m, err := load(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Catalogue returns the first-party modules in catalogue order without
// decompressing or hashing them: each has its Manifest, its pinned SHA256 and a
// Load that decompresses and verifies it when it is needed (a server compiles in
// the background and never unpacks a module it does not serve). A manifest that is
// not embedded is an error naming it.
func Catalogue() ([]Module, error) {
	out := make([]Module, 0, len(builtin.Modules))
	for _, spec := range builtin.Modules {
		m, err := lazy(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Get returns the first-party module that serves the tool name (or the module
// of that name, e.g. "memory"), verified.
func Get(name string) (Module, error) {
	for _, spec := range builtin.Modules {
		if spec.Folder == name || slices.Contains(spec.Tools, name) {
			return load(spec)
		}
	}
	return Module{}, fmt.Errorf("%q is not a first-party tool; first-party tools are %s", name, strings.Join(builtin.Catalogue, ", "))
}

func displayName(spec builtin.ModuleSpec) string {
	if len(spec.Tools) == 1 && spec.Tools[0] == spec.Folder {
		return spec.Folder
	}
	return fmt.Sprintf("%s (%s)", spec.Folder, strings.Join(spec.Tools, ", "))
}

// lazy describes the module of spec without unpacking it.
func lazy(spec builtin.ModuleSpec) (Module, error) {
	name := displayName(spec)
	want, ok := digests[spec.Folder]
	if !ok {
		return Module{}, fmt.Errorf("first-party module %s has no pinned digest in digests.go; rebuild with `go generate ./tools-wasm/...`", name)
	}
	man, err := manifests.ReadFile(spec.Folder + "/tool.toml")
	if err != nil {
		return Module{}, fmt.Errorf("first-party module %s: manifest %s/tool.toml is not embedded: %w", name, spec.Folder, err)
	}
	return Module{Name: spec.Folder, Tools: slices.Clone(spec.Tools), SHA256: want, Manifest: man,
		Load: func() ([]byte, error) { return unpack(spec, man) }}, nil
}

func load(spec builtin.ModuleSpec) (Module, error) {
	m, err := lazy(spec)
	if err != nil {
		return Module{}, err
	}
	if m.Wasm, err = m.Load(); err != nil {
		return Module{}, err
	}
	return m, nil
}

// unpack decompresses the module of spec and checks it against its pinned digest
// and its manifest source.
func unpack(spec builtin.ModuleSpec, manifest []byte) ([]byte, error) {
	stem, name := spec.Folder, displayName(spec)
	want := digests[stem]
	gz, err := files.ReadFile("modules/" + stem + ".wasm.gz")
	if err != nil {
		return nil, fmt.Errorf("first-party module %s is not embedded (modules/%s.wasm.gz): %w", name, stem, err)
	}
	wasm, err := gunzip(gz)
	if err != nil {
		return nil, fmt.Errorf("first-party module %s (modules/%s.wasm.gz) is corrupt: %w", name, stem, err)
	}
	sum := sha256.Sum256(wasm)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("first-party module %s has sha256 %s but %s is pinned; the embedded file and digests.go disagree — rebuild both with `go generate ./tools-wasm/...`", name, got, want)
	}
	packed, found, err := wasmbin.CustomSection(wasm, policy.ManifestSection)
	if err != nil || !found || !bytes.Equal(packed, manifest) {
		return nil, fmt.Errorf("first-party module %s: its packed manifest differs from %s/tool.toml (found %v, %v); rebuild with `go generate ./tools-wasm/...`", name, stem, found, err)
	}
	return wasm, nil
}

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var buf bytes.Buffer
	buf.Grow(64 << 10) // the modules are a few kilobytes and their manifests ≈ 30 KB
	n, err := io.Copy(&buf, io.LimitReader(zr, maxModuleBytes+1))
	if err != nil {
		return nil, err
	}
	if n > maxModuleBytes {
		return nil, fmt.Errorf("decompresses to more than %d bytes", maxModuleBytes)
	}
	return buf.Bytes(), nil
}
