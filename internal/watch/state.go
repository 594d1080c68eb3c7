package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// fileState is what the loop remembers of one file it read: enough to tell,
// without reading it, whether it changed since.
type fileState struct {
	Size    int64 `json:"size"`
	MtimeNS int64 `json:"mtime_ns"`
}

// state is what the loop has ingested, per watched root: the files it read, by
// path relative to the root. It is written after the store commits a batch, so a
// crash between the two only makes the next start read that batch again, which
// the store turns into a no-op (an unchanged source writes nothing).
type state struct {
	Version int                             `json:"version"`
	Roots   map[string]map[string]fileState `json:"roots"`
}

const stateVersion = 1

// loadState reads the state file; a missing file is an empty state (a first pass).
func loadState(path string) (*state, error) {
	st := &state{Version: stateVersion, Roots: map[string]map[string]fileState{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("watch state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, st); err != nil || st.Version != stateVersion {
		// Not ours, or torn by something other than our rename: start over. Reading
		// every root again is a no-op for what the store already holds.
		return &state{Version: stateVersion, Roots: map[string]map[string]fileState{}}, nil
	}
	if st.Roots == nil {
		st.Roots = map[string]map[string]fileState{}
	}
	return st, nil
}

// save writes the state atomically: a temporary file, fsync, rename, fsync of
// the folder. A kill at any moment leaves the old state or the new one.
func (s *state) save(path string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("watch state: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("watch state: %w", err)
	}
	f, err := os.CreateTemp(dir, ".watch-state-*")
	if err != nil {
		return fmt.Errorf("watch state: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("watch state %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("watch state %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("watch state %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("watch state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
