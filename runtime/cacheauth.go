package runtime

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cache entries are native code the host runs outside the sandbox, so each one is
// authenticated: an HMAC-SHA256 of its path and contents under a per-user key kept
// 0600 in the cache directory, stored beside the entry. An entry without a valid
// MAC is deleted before wazero can read it (wazero then compiles again).
const (
	cacheKeyName = ".openhuman-cache.key"
	cacheMACExt  = ".oh-mac"
	// cacheStampExt names an entry's stamp (stampOf): the MAC of its path and
	// file metadata, written once its contents were checked, so that a later start
	// checks the metadata instead of reading and hashing the contents again.
	cacheStampExt = ".oh-stamp"
	cacheKeySize  = 32
)

// legacyPrefixes name files that earlier versions kept beside the entries (the
// markers of the tiered start, decompressed first-party modules, the static
// gate's verdicts): they are not entries, and are left alone.
var legacyPrefixes = []string{".oh-compiled-", ".oh-module-", ".oh-gate-"}

func isLegacy(name string) bool {
	for _, p := range legacyPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

type cacheAuth struct {
	dir string
	key []byte
	mu  sync.Mutex // one signing walk at a time
	// removed counts the entries verify deleted when the cache was opened.
	removed int
}

// openCacheAuth reads the cache's key, creating it on first use. A key that is not
// a private regular file of this user makes the cache unusable.
func openCacheAuth(dir string) (*cacheAuth, error) {
	path := filepath.Join(dir, cacheKeyName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		key := make([]byte, cacheKeySize)
		if _, err := rand.Read(key); err != nil {
			f.Close()
			return nil, fmt.Errorf("making the compilation cache key: %w", err)
		}
		_, werr := f.Write(key)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(path)
			return nil, fmt.Errorf("writing the compilation cache key %s: %w", path, werr)
		}
		return &cacheAuth{dir: dir, key: key}, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating the compilation cache key %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("compilation cache key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || fi.Size() != cacheKeySize {
		return nil, fmt.Errorf("compilation cache key %s is not a private %d-byte file (mode %s, %d bytes)", path, cacheKeySize, fi.Mode(), fi.Size())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("compilation cache key %s is owned by uid %d, not by this user", path, st.Uid)
	}
	key, err := os.ReadFile(path)
	if err != nil || len(key) != cacheKeySize {
		return nil, fmt.Errorf("reading the compilation cache key %s: %w", path, errors.Join(err, errors.New("wrong size")))
	}
	return &cacheAuth{dir: dir, key: key}, nil
}

func (a *cacheAuth) mac(rel string, data []byte) []byte {
	h := hmac.New(sha256.New, a.key)
	h.Write([]byte(rel))
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum(nil)
}

// entries walks the cache's entries (not the key, MACs, probes or wazero's
// temporary files).
func (a *cacheAuth) entries(fn func(path, rel string) error) error {
	return filepath.WalkDir(a.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() || name == cacheKeyName || strings.HasSuffix(name, cacheMACExt) || strings.HasSuffix(name, cacheStampExt) || strings.HasSuffix(name, ".tmp") || strings.HasPrefix(name, ".write-probe-") || isLegacy(name) {
			return nil
		}
		rel, err := filepath.Rel(a.dir, p)
		if err != nil {
			return err
		}
		return fn(p, rel)
	})
}

// verify deletes every entry that is not a regular file with a valid MAC and
// returns how many it deleted.
//
// An entry whose stamp matches its metadata is not read: its contents were
// checked against its MAC by an earlier start (or signed by the compile that
// wrote them) and have not been written since. Sound because the stamp is a MAC
// under the cache key (it cannot be made for other metadata without the key,
// which also signs entries) and it covers the inode's change time, which every
// write, truncation, rename or chmod of the file sets to the current time and no
// unprivileged process can set back; a file replaced by another gets another
// inode or change time. What it no longer catches is what the filesystem does
// not record: bytes changed under it (a failing disk, a write to the raw
// device) — the same trust the binary's own code gets from the disk.
func (a *cacheAuth) verify() (int, error) {
	removed := 0
	err := a.entries(func(p, rel string) error {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			stamp := a.stampOf(rel, fi)
			if old, err := os.ReadFile(p + cacheStampExt); err == nil && stamp != nil && hmac.Equal(old, stamp) {
				if _, err := os.Lstat(p + cacheMACExt); err == nil {
					return nil
				}
			}
			data, derr := os.ReadFile(p)
			sum, serr := os.ReadFile(p + cacheMACExt)
			if derr == nil && serr == nil && hmac.Equal(sum, a.mac(rel, data)) {
				a.writeStamp(p, stamp)
				return nil
			}
		}
		removed++
		_ = os.Remove(p + cacheMACExt)
		_ = os.Remove(p + cacheStampExt)
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("removing the unauthenticated cache entry %s: %w", p, err)
		}
		return nil
	})
	return removed, err
}

// stampSettle is how long ago an entry must last have changed before it is
// stamped. Filesystems set change times from a coarse clock (a few ms, a second
// or more on some), so a write in the same tick as the check that stamped an
// entry could leave its change time as it was; an entry changed that recently is
// read and checked on every start until it has settled (git's "racily clean"
// rule). Tests that check stamps set it to 0.
var stampSettle = 2 * time.Second

// stampOf is the MAC of an entry's path and the metadata that any change of its
// contents changes (device, inode, size, modification and change times), or nil
// when the platform gives no such metadata or the entry changed less than
// stampSettle ago (the entry is then always read).
// fi must be taken before the contents it vouches for are read.
func (a *cacheAuth) stampOf(rel string, fi fs.FileInfo) []byte {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	ctime, ok := statCtimeNanos(st)
	if !ok || time.Since(time.Unix(0, ctime)) < stampSettle {
		return nil
	}
	meta := fmt.Sprintf("stamp\x00%s\x00%d %d %d %d %d", rel, uint64(st.Dev), uint64(st.Ino), fi.Size(), fi.ModTime().UnixNano(), ctime)
	h := hmac.New(sha256.New, a.key)
	h.Write([]byte(meta))
	return h.Sum(nil)
}

// writeStamp records stamp for the entry at p (nothing for a nil stamp). A
// failure only means the next start reads the entry again.
func (a *cacheAuth) writeStamp(p string, stamp []byte) {
	if stamp == nil {
		return
	}
	tmp := p + cacheStampExt + ".tmp"
	if err := os.WriteFile(tmp, stamp, 0o600); err != nil {
		_ = os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, p+cacheStampExt); err != nil {
		_ = os.Remove(tmp)
	}
}

// sign writes the MAC of every entry that has none (entries wazero wrote in this
// process; the directory is private to this user) and returns those entries.
func (a *cacheAuth) sign() ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var signed []string
	err := a.entries(func(p, rel string) error {
		if _, err := os.Lstat(p + cacheMACExt); err == nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tmp := p + cacheMACExt + ".tmp"
		if err := os.WriteFile(tmp, a.mac(rel, data), 0o600); err != nil {
			return fmt.Errorf("writing the MAC of cache entry %s: %w", p, err)
		}
		if err := os.Rename(tmp, p+cacheMACExt); err != nil {
			return fmt.Errorf("writing the MAC of cache entry %s: %w", p, err)
		}
		if fi.Mode().IsRegular() {
			a.writeStamp(p, a.stampOf(rel, fi))
		}
		signed = append(signed, rel)
		return nil
	})
	return signed, err
}
