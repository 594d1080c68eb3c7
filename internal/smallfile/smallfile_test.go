//go:build unix

package smallfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A regular file is read; a FIFO (no writer) is refused without blocking, a
// device without reading it, a file over the limit from its size; a missing
// file is fs.ErrNotExist.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "config.toml")
	os.WriteFile(ok, []byte("a = 1\n"), 0o600)
	if b, err := Read(ok, 16); err != nil || string(b) != "a = 1\n" {
		t.Errorf("regular file: %q %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(fifo, 16); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("FIFO: %v", err)
	}
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	if _, err := Read(zero, 16); err == nil || !strings.Contains(err.Error(), "a device") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := Read(ok, 3); err == nil || !strings.Contains(err.Error(), "6 bytes, more than the 3") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), 16); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
