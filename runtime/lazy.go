package runtime

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// loadLazyBuiltin admits a first-party module from its manifest alone, so that
// New (and the initialize answer that waits for it) neither decompresses, hashes
// nor parses the module: its tools are listed at once and its bytes are read by
// the compile worker (unpackLazy), which then runs the static gate before any of
// it is compiled. A module that is disabled (SearXNG off) is never unpacked.
// Its manifest is parsed without compiling the tools' JSON Schemas (≈ 5 ms of
// CPU for the memory module's twelve, compiled by `go generate` when it packed
// the module); unpackLazy compiles them before anything else, so a manifest
// ParseManifest refuses is still refused before the module is compiled or called.
func (h *Host) loadLazyBuiltin(b BuiltinModule) *module {
	m := newModule(h, ModuleInfo{Name: b.Name, SHA256: b.SHA256, Origin: OriginBuiltin}, nil)
	if len(b.Manifest) > policy.MaxManifestBytes {
		return refuse(m, StateRefused, fmt.Sprintf("first-party module %s: manifest of %d bytes exceeds the %d-byte limit", b.Name, len(b.Manifest), policy.MaxManifestBytes))
	}
	where := b.Name + "[" + policy.ManifestSection + "]"
	man, err := policy.ParseManifestDeferred(b.Manifest, where)
	if err != nil {
		return refuse(m, StateRefused, err.Error())
	}
	h.fill(m, man, h.pol.Builtin(man))
	if slices.Contains(man.Capabilities, abi.CapWebSearXNG) && !h.opt.SearXNGEnabled {
		return refuse(m, StateDisabled, "SearXNG is disabled; set [searxng] enabled = true in config.toml to serve this tool")
	}
	manifest, load := bytes.Clone(b.Manifest), b.Load
	m.load = func() ([]byte, error) {
		if err := policy.CheckSchemas(man, where); err != nil {
			return nil, err
		}
		wasm, err := load()
		if err != nil {
			return nil, err
		}
		packed, found, err := wasmbin.CustomSection(wasm, policy.ManifestSection)
		if err != nil || !found || !bytes.Equal(packed, manifest) {
			return nil, fmt.Errorf("first-party module %s: its manifest section differs from the manifest it was listed with (found %v, %v); the binary is corrupt or was built from modified modules — rebuild with `go generate ./tools-wasm/...`", b.Name, found, err)
		}
		return wasm, nil
	}
	return m
}

// unpackLazy fetches the bytes of a lazily loaded module and runs the static
// gate on them (what loadBuiltin does at once for a module given with its
// bytes). It does nothing for other modules.
func (m *module) unpackLazy() error {
	if m.load == nil || m.wasm != nil {
		return nil
	}
	wasm, err := m.load()
	if err != nil {
		return err
	}
	mod, err := wasmbin.Parse(wasm)
	if err != nil {
		return fmt.Errorf("first-party module %s: %w", m.info.Name, err)
	}
	if err := policy.CheckLoad(mod, m.manifest, m.grant, nil); err != nil {
		return fmt.Errorf("%s: %w", m.info.Name, err)
	}
	m.memoryPages = policy.MemoryLimitPages(mod, m.grant.Limits.MemoryMiB)
	m.wasm, m.load = wasm, nil
	return nil
}
