package memtree_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// makeShmUncreatable puts the store where its WAL index (-shm) cannot be created:
// the directory made read-only and, since root ignores directory permissions, a
// directory in the -shm file's place.
func makeShmUncreatable(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path+"-shm", 0o500); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
}

// A store whose directory is read-only (so SQLite cannot create the WAL's -shm
// file) still opens read-only and answers, rather than failing with advice to
// re-create it.
func TestOpenReadOnlyWithoutShm(t *testing.T) {
	st, path := openFixture(t)
	want, err := memory.Default(st).ListSources(context.Background(), abi.SourcesListRequest{})
	if err != nil || len(want.Sources) == 0 {
		t.Fatalf("fixture sources: %+v %v", want, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Fatalf("%s still exists after a clean close", path+suffix)
		}
	}
	makeShmUncreatable(t, path)

	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("OpenReadOnly on a read-only directory: %v", err)
	}
	defer ro.Close()
	got, err := memory.Default(ro).ListSources(context.Background(), abi.SourcesListRequest{})
	if err != nil {
		t.Fatalf("ListSources: %v", err)
	}
	if len(got.Sources) != len(want.Sources) {
		t.Fatalf("read-only store lists %d sources, want %d", len(got.Sources), len(want.Sources))
	}
}

// A store left with an unfinished write-ahead log in a read-only directory either
// reads completely (SQLite can read the log without creating its index in some
// cases) or fails with an error that names the log and asks for write access once
// — never with advice to re-create the store, and never reading only the older
// part of the store.
func TestOpenReadOnlyUnfinishedWAL(t *testing.T) {
	liveStore, live := openFixture(t) // still open: its last writes are in the -wal file
	want, err := memory.Default(liveStore).ListSources(context.Background(), abi.SourcesListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "copy", "chunks.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			t.Fatal("the open store has an empty -wal file; the test needs unfinished writes")
		}
		if err := os.WriteFile(path+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	makeShmUncreatable(t, path)
	ro, err := memtree.OpenReadOnly(path)
	if err == nil {
		defer ro.Close()
		got, err := memory.Default(ro).ListSources(context.Background(), abi.SourcesListRequest{})
		if err != nil {
			t.Fatalf("opened, then ListSources: %v", err)
		}
		if len(got.Sources) != len(want.Sources) {
			t.Fatalf("read %d sources of %d: the write-ahead log was ignored", len(got.Sources), len(want.Sources))
		}
		t.Logf("opened and read all %d sources, the write-ahead log included", len(got.Sources))
		return
	}
	if strings.Contains(err.Error(), "re-create") || !strings.Contains(err.Error(), "-wal") || !strings.Contains(err.Error(), "write access") {
		t.Fatalf("error %q should name the write-ahead log and ask for write access once, not a re-created store", err)
	}
	t.Logf("refused with: %v", err)
}
