package runtime

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

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
// ParseManifest refuses is still refused before the module is compiled or called
// (unless this binary's gate passed the module under the same grant at an
// earlier start: gatePassedBefore).
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
		if !m.gatePassedBefore() {
			if err := policy.CheckSchemas(man, where); err != nil {
				return nil, err
			}
		}
		// A warm start reads the copy the first start kept (checked against the
		// pinned digest) instead of decompressing the embedded module.
		wasm := h.cachedModule(b.Name, b.SHA256)
		fresh := wasm == nil
		if fresh {
			var err error
			if wasm, err = load(); err != nil { // verified against b.SHA256
				return nil, err
			}
		}
		packed, found, err := wasmbin.CustomSection(wasm, policy.ManifestSection)
		if err != nil || !found || !bytes.Equal(packed, manifest) {
			return nil, fmt.Errorf("first-party module %s: its manifest section differs from the manifest it was listed with (found %v, %v); the binary is corrupt or was built from modified modules — rebuild with `go generate ./tools-wasm/...`", b.Name, found, err)
		}
		if fresh {
			h.keepModule(b.Name, b.SHA256, wasm)
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
	if !m.gatePassedBefore() {
		gateRuns.Add(1)
		if err := policy.CheckLoad(mod, m.manifest, m.grant, nil); err != nil {
			return fmt.Errorf("%s: %w", m.info.Name, err)
		}
		m.recordGatePassed()
	}
	m.memoryPages = policy.MemoryLimitPages(mod, m.grant.Limits.MemoryMiB)
	m.wasm, m.load = wasm, nil
	return nil
}

// unpackedPrefix + a module's name + "-" + its sha256 names the decompressed copy of a first-party
// module kept in the compilation cache directory (keepModule), so that a warm
// start reads it instead of decompressing the embedded .wasm.gz (≈ 20 ms of CPU
// for the memory module). The copy is not MAC'd: it is checked against the
// sha256 pinned in the binary on every read, which is as strong as the digest
// check of the embedded bytes it replaces.
const unpackedPrefix = ".oh-module-"

// cachedModule returns the decompressed copy of the first-party module with the
// pinned digest sha from the compilation cache directory, or nil when there is
// no usable copy: no disk cache, no copy, or a copy whose sha256 is not the
// pinned one (corrupt or stale). A bad copy is named at debug level and the
// caller unpacks the embedded module, so a copy never fails a start.
func (h *Host) cachedModule(name, sha string) []byte {
	path := h.unpackedPath(name, sha)
	if path == "" {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil // not kept yet (or unreadable): the cold path writes it
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxUnpackedBytes {
		h.logger.Debug("ignoring the cached copy of a first-party module: not a regular file of a plausible size; unpacking the embedded one", "module", name, "path", path, "mode", fi.Mode().String(), "bytes", fi.Size())
		return nil
	}
	wasm, after, err := readWithStat(path)
	if err != nil {
		h.logger.Debug("ignoring the cached copy of a first-party module: unreadable; unpacking the embedded one", "module", name, "path", path, "err", err)
		return nil
	}
	// A copy whose stamp (the MAC of its path, which names the digest, and its
	// metadata after the read) was written when its sha256 was last checked has
	// not been written since: it is not hashed again (the soundness argument of
	// the cache entries' stamps, cacheauth.go verify).
	a, rel := h.cacheAuth, filepath.Base(path)
	stamp := a.stampOf(rel, after)
	if old, err := os.ReadFile(path + cacheStampExt); err == nil && stamp != nil && hmac.Equal(old, stamp) {
		return wasm
	}
	sum := sha256.Sum256(wasm)
	if got := hex.EncodeToString(sum[:]); got != sha {
		h.logger.Debug("ignoring the cached copy of a first-party module: its sha256 is not the pinned one; unpacking the embedded one", "module", name, "path", path, "sha256", got, "pinned", sha)
		return nil
	}
	if before := a.stampOf(rel, fi); before != nil && bytes.Equal(before, stamp) {
		a.writeStamp(path, stamp) // not written to while it was read and hashed
	}
	return wasm
}

// readWithStat reads the file at path and returns its metadata taken after the
// read from the open file (a write before that changes its change time).
func readWithStat(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() > maxUnpackedBytes {
		return nil, nil, fmt.Errorf("%s has %d bytes, more than a module may", path, fi.Size())
	}
	data := make([]byte, fi.Size()) // one allocation: the module is ≈ 4 MB
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if fi, err = f.Stat(); err != nil { // the file read, even if path was replaced since
		return nil, nil, err
	}
	if int64(len(data)) != fi.Size() {
		return nil, nil, fmt.Errorf("%s changed while it was read", path)
	}
	return data, fi, nil
}

// maxUnpackedBytes bounds the cached copy of a module read back (the embedded
// modules decompress to at most 64 MiB, tools-wasm's bound).
const maxUnpackedBytes = 64 << 20

// keepModule writes wasm, just unpacked and checked against its pinned digest
// sha, into the compilation cache directory for the next start (cachedModule):
// to a temporary file renamed into place, so a reader never sees half of it. A
// failure only costs the next start the gunzip; it is logged at debug level.
func (h *Host) keepModule(name, sha string, wasm []byte) {
	path := h.unpackedPath(name, sha)
	if path == "" {
		return
	}
	if err := writeFileAtomic(path, wasm); err != nil {
		h.logger.Debug("keeping a decompressed copy of a first-party module failed; the next start unpacks it again", "module", name, "err", err)
		return
	}
	// Copies of other builds of the module would only pile up (≈ 4 MB each).
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), unpackedPrefix+name+"-*"))
	for _, p := range old {
		if p != path && p != path+cacheStampExt && !strings.HasSuffix(p, ".tmp") {
			_ = os.Remove(p)
		}
	}
}

// unpackedPath is where the decompressed copy of the module name with digest sha
// is kept, or "" without a disk cache or for a name or digest unfit for a file name.
func (h *Host) unpackedPath(name, sha string) string {
	a := h.cacheAuth
	if a == nil || !validDigest(sha) || name == "" || name[0] == '.' || strings.ContainsFunc(name, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '.'
	}) {
		return ""
	}
	return filepath.Join(a.dir, unpackedPrefix+name+"-"+sha)
}

// writeFileAtomic writes data to path (0600) through a temporary file in the same
// directory renamed over it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}

// gatePrefix + a module's sha256 names the record that this binary's static gate
// (its schemas and policy.CheckLoad) passed the first-party module with that
// digest under a grant (recordGatePassed), so a warm start does not scan its
// code again (≈ 10 % of a warm start's CPU). The record is the MAC, under the
// cache key, of the binary's identity (its file's device, inode, size,
// modification and change times: a rebuilt or reinstalled binary, whose gate
// may differ, has other ones), the digest and the grant; the bytes are the ones
// pinned in the binary (checked against the digest before the record is looked
// at), so the same binary with the same grant would give the same verdict.
const gatePrefix = ".oh-gate-"

// gateRuns counts the static gate's scans of lazily loaded modules (for tests).
var gateRuns atomic.Int32

// gateVerdict is the content of the record that the gate passed m, and its path;
// nil without a disk cache, a digest fit for a file name or a binary identity.
func (m *module) gateVerdict() (string, []byte) {
	a := m.host.cacheAuth
	if a == nil || !validDigest(m.info.SHA256) || m.grant == nil {
		return "", nil
	}
	exe := executableID()
	grant, err := json.Marshal(m.grant)
	if exe == "" || err != nil {
		return "", nil
	}
	h := hmac.New(sha256.New, a.key)
	fmt.Fprintf(h, "gate\x00%s\x00%s\x00%s\x00", exe, m.info.SHA256, m.info.Name)
	h.Write(grant)
	return filepath.Join(a.dir, gatePrefix+m.info.SHA256), h.Sum(nil)
}

// gatePassedBefore reports whether this binary's static gate passed m (same
// digest, same grant) at an earlier start.
func (m *module) gatePassedBefore() bool {
	path, want := m.gateVerdict()
	if want == nil {
		return false
	}
	got, err := os.ReadFile(path)
	return err == nil && hmac.Equal(got, want)
}

// recordGatePassed records that the static gate passed m (gatePassedBefore). A
// failure only means the next start runs the gate again.
func (m *module) recordGatePassed() {
	path, verdict := m.gateVerdict()
	if verdict == nil {
		return
	}
	if err := writeFileAtomic(path, verdict); err != nil {
		m.host.logger.Debug("recording the static gate's verdict failed; the next start checks the module again", "module", m.info.Name, "err", err)
	}
}

// executableID identifies the running binary's file by its metadata (device,
// inode, size, modification and change times), or is "" when it cannot be had.
var executableID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	ctime, ok := statCtimeNanos(st)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s %d %d %d %d %d", exe, uint64(st.Dev), uint64(st.Ino), fi.Size(), fi.ModTime().UnixNano(), ctime)
})
