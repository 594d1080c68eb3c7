package runtime

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tetratelabs/wazero"
)

// openCache opens the on-disk compilation cache. A cache that cannot be used — no
// user cache directory (no HOME), a directory that cannot be created or written, or
// one that another user owns or others may write (its entries are native code the
// host would run outside the sandbox) — is not an error: the host compiles in
// memory and says so in one warning line.
func openCache(dir string, log *slog.Logger) (wazero.CompilationCache, *cacheAuth) {
	c, auth, err := usableCache(dir)
	if err != nil {
		log.Warn("compilation cache not used; compiling tool modules in memory (every start compiles them again)", "err", err)
		return nil, nil
	}
	if auth.removed > 0 {
		log.Warn("compilation cache: deleted entries without a valid MAC (forged, corrupt or from an older version); they are compiled again", "dir", auth.dir, "entries", auth.removed)
	}
	return c, auth
}

func usableCache(dir string) (wazero.CompilationCache, *cacheAuth, error) {
	check := []string{dir}
	if dir == "" {
		ucd, err := os.UserCacheDir()
		if err != nil {
			return nil, nil, fmt.Errorf("no user cache directory (set XDG_CACHE_HOME or HOME): %w", err)
		}
		dir = filepath.Join(ucd, "openhuman", "wazero")
		check = []string{filepath.Dir(dir), dir} // both are ours to create
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("creating the compilation cache %s: %w", dir, err)
	}
	for _, d := range check {
		if err := safeCacheDir(d); err != nil {
			return nil, nil, err
		}
	}
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return nil, nil, fmt.Errorf("compilation cache %s is not writable: %w", dir, err)
	}
	probe.Close()
	_ = os.Remove(probe.Name())
	auth, err := openCacheAuth(dir)
	if err != nil {
		return nil, nil, err
	}
	removed, err := auth.verify()
	if err != nil {
		return nil, nil, fmt.Errorf("checking the compilation cache %s: %w", dir, err)
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the compilation cache %s: %w", dir, err)
	}
	auth.removed = removed
	return c, auth, nil
}

// safeCacheDir refuses a cache directory that is a symlink or not a directory, is
// owned by another user, may be written by group or others, or is marked read-only.
func safeCacheDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("compilation cache %s: %w", d, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("compilation cache %s is not a directory (%s)", d, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("compilation cache %s is owned by uid %d, not by this user (uid %d)", d, st.Uid, os.Getuid())
	}
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 {
		return fmt.Errorf("compilation cache %s may be written by other users (mode %04o); run chmod 700 on it after checking its contents, or remove it", d, perm)
	}
	if perm&0o200 == 0 {
		return fmt.Errorf("compilation cache %s is read-only (mode %04o): %w", d, perm, fs.ErrPermission)
	}
	return nil
}
