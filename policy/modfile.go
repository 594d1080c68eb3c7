package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/openhuman/openhuman-core/internal/smallfile"
)

// FileRefusal is a module file refused before its bytes were read whole: not a
// regular file, or larger than MaxModuleBytes.
type FileRefusal struct {
	Path   string
	Size   int64
	Reason string
}

func (e *FileRefusal) Error() string { return fmt.Sprintf("refused %s: %s", e.Path, e.Reason) }

// ReadModuleFile reads a module file for the loader or `tools audit`: it opens
// path without blocking (a FIFO named *.wasm hung the server before
// initialize), accepts only a regular file of at most MaxModuleBytes
// (checked on the open file before reading), and returns its bytes and hex
// sha256. Nothing is parsed.
func ReadModuleFile(path string) (data []byte, digest string, err error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, "", &FileRefusal{Path: path, Reason: fmt.Sprintf("not a regular file (%s); only regular files are loaded", smallfile.Kind(st.Mode()))}
	}
	if err := CheckModuleSize(st.Size()); err != nil {
		return nil, "", &FileRefusal{Path: path, Size: st.Size(), Reason: err.Error()}
	}
	// One allocation of the size fstat gave (a file that grows meanwhile grows
	// the buffer, up to the limit).
	var buf bytes.Buffer
	buf.Grow(int(st.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxModuleBytes+1)); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	data = buf.Bytes()
	if err := CheckModuleSize(int64(len(data))); err != nil { // grew while read
		return nil, "", &FileRefusal{Path: path, Size: int64(len(data)), Reason: err.Error()}
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), nil
}
