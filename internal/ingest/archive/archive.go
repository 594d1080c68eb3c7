package archive

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openhuman/openhuman-core/internal/textsafe"
)

// Archives are read in place. When the runner meets a .zip file (or any file that
// starts as one: Bear's .bear2bk, Takeout's parts) it checks it (Limits),
// mounts its member tree at the archive's own path, and walks it as a folder:
// "export.zip/channels.json" then names a member, each member is detected like a
// file on disk, and the readers, which open files through Open, ReadDir, Stat
// and Lstat, read members as they read files. Nothing is unpacked: a member is
// decompressed from the archive while it is read, and nothing is written outside
// the store. The mounts of a run are dropped when it ends.

// Limits bound what one archive may unpack to, against zip bombs and
// hostile archives. A real export (a Slack workspace, a WhatsApp chat with media, a
// Takeout part) stays far below them.
var Limits = struct {
	Members    int    // entries in the central directory
	totalBytes uint64 // sum of the members' uncompressed sizes
	// ratio is the largest uncompressed/compressed size of one member above
	// ratioFloor bytes, and of the whole archive once its members unpack to
	// more than ratioFloor (issue 39, finding 5: a bomb split into members of
	// 1 MiB or less passed the per-member check, 255 KB → 337 MB): text
	// compresses 5-20 times, a bomb thousands of times.
	ratio      uint64
	ratioFloor uint64
}{Members: 200_000, totalBytes: 16 << 30, ratio: 200, ratioFloor: 1 << 20}

// mount is one archive mounted at its path.
type mount struct {
	at   string // the archive's path as walked, cleaned
	zr   *zip.ReadCloser
	refs int
}

var (
	mountsMu sync.RWMutex
	mounts   = map[string]*mount{}
	// nMounts lets the file functions skip the mount table when nothing is mounted
	// (the common case: no archive among the inputs).
	nMounts atomic.Int32
)

// IsZipHead reports whether a file's first bytes are a zip archive's.
func IsZipHead(head []byte) bool {
	return bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06"))
}

// Mount opens the zip archive at p, checks it against Limits and
// mounts its members at p. The caller unmounts it (Unmount) when done.
func Mount(p string) error {
	p = filepath.Clean(p)
	mountsMu.Lock()
	defer mountsMu.Unlock()
	if m := mounts[p]; m != nil {
		m.refs++
		return nil
	}
	zr, err := zip.OpenReader(p)
	if err != nil {
		return fmt.Errorf("zip archive: cannot open: %w", err)
	}
	if err := checkArchive(&zr.Reader); err != nil {
		zr.Close()
		return err
	}
	mounts[p] = &mount{at: p, zr: zr, refs: 1}
	nMounts.Add(1)
	return nil
}

// Unmount drops one mount of p made by Mount.
func Unmount(p string) {
	p = filepath.Clean(p)
	mountsMu.Lock()
	defer mountsMu.Unlock()
	m := mounts[p]
	if m == nil {
		return
	}
	if m.refs--; m.refs == 0 {
		m.zr.Close()
		delete(mounts, p)
		nMounts.Add(-1)
	}
}

// checkArchive refuses an archive that would unpack outside itself or to more
// than Limits allow, naming the member at fault.
func checkArchive(zr *zip.Reader) error {
	if len(zr.File) > Limits.Members {
		return fmt.Errorf("zip archive: %d members, more than the %d read from one archive: not read (unpack it and ingest the folder)", len(zr.File), Limits.Members)
	}
	var total, packed uint64
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, "/")
		if name == "" || strings.ContainsAny(name, "\\\x00") || !fs.ValidPath(name) {
			return fmt.Errorf("zip archive: member %s leaves the archive (absolute path, \"..\" or backslash): archive refused", textsafe.Name(f.Name))
		}
		total += f.UncompressedSize64
		packed += f.CompressedSize64
		if total > Limits.totalBytes {
			return fmt.Errorf("zip archive: members unpack to more than %d GiB: archive refused (a zip bomb, or unpack it and ingest the folder)", Limits.totalBytes>>30)
		}
		if f.UncompressedSize64 > Limits.ratioFloor && f.UncompressedSize64 > Limits.ratio*max(f.CompressedSize64, 1) {
			return fmt.Errorf("zip archive: member %s expands %d times (%d bytes from %d): archive refused as a zip bomb", textsafe.Name(f.Name), f.UncompressedSize64/max(f.CompressedSize64, 1), f.UncompressedSize64, f.CompressedSize64)
		}
	}
	if total > Limits.ratioFloor && total > Limits.ratio*max(packed, 1) {
		return fmt.Errorf("zip archive: its %d members expand %d times in all (%d bytes from %d), more than the %d times text does: archive refused as a zip bomb", len(zr.File), total/max(packed, 1), total, packed, Limits.ratio)
	}
	return nil
}

// resolve finds the mount holding p: the archive's file tree and the member name
// ("." for the archive itself). ok is false when p is on disk.
func resolve(p string) (fsys fs.FS, name string, ok bool) {
	if nMounts.Load() == 0 {
		return nil, "", false
	}
	p = filepath.Clean(p)
	mountsMu.RLock()
	defer mountsMu.RUnlock()
	for at, m := range mounts {
		if p == at {
			return m.zr, ".", true
		}
		if strings.HasPrefix(p, at+string(filepath.Separator)) {
			return m.zr, filepath.ToSlash(p[len(at)+1:]), true
		}
	}
	return nil, "", false
}

// IsMember reports whether p names a member of a mounted archive.
func IsMember(p string) bool {
	_, name, ok := resolve(p)
	return ok && name != "."
}

// Open opens a file on disk or in a mounted archive.
func Open(p string) (fs.File, error) {
	return onMountOrDisk(p, fs.FS.Open, func(p string) (fs.File, error) { return os.Open(p) })
}

// ReadDir lists a folder on disk or in a mounted archive, sorted by name (a
// mounted archive lists as a folder).
func ReadDir(p string) ([]fs.DirEntry, error) {
	return onMountOrDisk(p, fs.ReadDir, os.ReadDir)
}

// Stat stats a file or folder on disk or in a mounted archive (a mounted
// archive stats as a folder).
func Stat(p string) (fs.FileInfo, error) {
	return onMountOrDisk(p, fs.Stat, os.Stat)
}

// Lstat is Stat without following a symbolic link on disk (an archive's
// symbolic links are never followed: they stat as links).
func Lstat(p string) (fs.FileInfo, error) {
	if _, _, ok := resolve(p); ok {
		return Stat(p)
	}
	return os.Lstat(p)
}

// onMountOrDisk runs inArchive on the member p names when p is in a mounted
// archive (its error worded by archiveErr), else onDisk on p.
func onMountOrDisk[T any](p string, inArchive func(fsys fs.FS, name string) (T, error), onDisk func(string) (T, error)) (T, error) {
	if fsys, name, ok := resolve(p); ok {
		v, err := inArchive(fsys, name)
		if err != nil {
			var zero T
			return zero, archiveErr(p, err)
		}
		return v, nil
	}
	return onDisk(p)
}

// archiveErr words an error about an archive member with its path as walked and
// keeps fs.ErrNotExist recognisable.
func archiveErr(p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return fmt.Errorf("%s: %w", p, err)
}

// ReadAll reads a whole file, at most limit bytes (ok is false past it).
func ReadAll(p string, limit int64) ([]byte, bool, error) {
	f, err := Open(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, err
	}
	return b, int64(len(b)) <= limit, nil
}

// NestedName reports whether a member name is an archive of its own.
func NestedName(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".zip", ".bear2bk", ".tar", ".gz", ".tgz", ".7z", ".rar", ".bz2", ".xz":
		return true
	}
	return false
}

// SortEntries sorts folder entries by name.
func SortEntries(es []fs.DirEntry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
}
