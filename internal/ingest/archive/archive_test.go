package archive

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeZip writes a zip archive at p holding members (name → content) in name order.
func writeZip(t *testing.T, p string, members map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, members[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A mounted archive reads as a folder at its own path: its members open, list
// and stat like files, and unmounting puts the file back.
func TestMountReadsMembersInPlace(t *testing.T) {
	dir := t.TempDir()
	zp := filepath.Join(dir, "export.zip")
	writeZip(t, zp, map[string]string{"channels.json": `[{"name":"general"}]`, "general/2024-01-02.json": "[]"})
	head, err := os.ReadFile(zp)
	if err != nil {
		t.Fatal(err)
	}
	if !IsZipHead(head) || IsZipHead([]byte("# notes\n")) {
		t.Fatalf("IsZipHead: a zip's head not recognised, or a text file taken for one")
	}
	if IsMember(filepath.Join(zp, "channels.json")) {
		t.Fatalf("a member before the archive is mounted")
	}
	if err := Mount(zp); err != nil {
		t.Fatal(err)
	}
	member := filepath.Join(zp, "channels.json")
	if !IsMember(member) || IsMember(zp) || IsMember(filepath.Join(dir, "other.json")) {
		t.Errorf("IsMember: member %v, the archive itself %v, a file beside it %v", IsMember(member), IsMember(zp), IsMember(filepath.Join(dir, "other.json")))
	}
	b, ok, err := ReadAll(member, 1<<10)
	if err != nil || !ok || string(b) != `[{"name":"general"}]` {
		t.Errorf("ReadAll(member) = %q, %v, %v", b, ok, err)
	}
	if _, ok, err := ReadAll(member, 4); err != nil || ok {
		t.Errorf("ReadAll past its limit: ok %v, err %v (want ok false)", ok, err)
	}
	st, err := Stat(zp)
	if err != nil || !st.IsDir() {
		t.Errorf("a mounted archive stats as a folder: %v, %v", st, err)
	}
	if st, err := Lstat(member); err != nil || st.IsDir() || st.Size() != int64(len(`[{"name":"general"}]`)) {
		t.Errorf("Lstat(member): %v, %v", st, err)
	}
	es, err := ReadDir(zp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "channels.json,general" {
		t.Errorf("ReadDir(archive) = %v", names)
	}
	_, err = Open(filepath.Join(zp, "missing.json"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != filepath.Join(zp, "missing.json") {
		t.Errorf("a missing member: %v (want fs.ErrNotExist naming the path as walked)", err)
	}
	Unmount(zp)
	if IsMember(member) {
		t.Errorf("still a member after Unmount")
	}
	if st, err := Stat(zp); err != nil || st.IsDir() {
		t.Errorf("after Unmount the archive is a file again: %v, %v", st, err)
	}
}

// Mount refuses what would unpack outside the archive, a zip bomb (one member,
// or many small ones) and more members than Limits allow, naming why, and
// mounts nothing then.
func TestMountRefusals(t *testing.T) {
	dir := t.TempDir()
	refused := func(name, want string) {
		t.Helper()
		p := filepath.Join(dir, name)
		err := Mount(p)
		if err == nil {
			Unmount(p)
			t.Errorf("%s: mounted, want refused (%s)", name, want)
			return
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", name, err, want)
		}
		if IsMember(filepath.Join(p, "x")) {
			t.Errorf("%s: refused but mounted", name)
		}
	}
	writeZip(t, filepath.Join(dir, "evil.zip"), map[string]string{"../../outside.md": "# evil\n"})
	refused("evil.zip", "leaves the archive")
	writeZip(t, filepath.Join(dir, "abs.zip"), map[string]string{"/etc/passwd.md": "# evil\n"})
	refused("abs.zip", "leaves the archive")
	writeZip(t, filepath.Join(dir, "bomb.zip"), map[string]string{"big.txt": strings.Repeat("0", 8<<20)})
	refused("bomb.zip", "zip bomb")
	split := map[string]string{}
	for i := 0; i < 16; i++ {
		split[fmt.Sprintf("part%02d.txt", i)] = strings.Repeat("0", 1<<20)
	}
	writeZip(t, filepath.Join(dir, "split.zip"), split)
	refused("split.zip", "16 members expand")
	old := Limits.Members
	Limits.Members = 1
	defer func() { Limits.Members = old }()
	writeZip(t, filepath.Join(dir, "many.zip"), map[string]string{"a.md": "a\n", "b.md": "b\n"})
	refused("many.zip", "2 members, more than the 1")
	if err := os.WriteFile(filepath.Join(dir, "notzip.zip"), []byte("PK\x03\x04 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("notzip.zip", "cannot open")
}

// NestedName knows the archive endings a member may have.
func TestNestedName(t *testing.T) {
	for name, want := range map[string]bool{"inner.zip": true, "Backup.BEAR2BK": true, "x.tar.gz": true, "notes.md": false, "zip": false} {
		if got := NestedName(name); got != want {
			t.Errorf("NestedName(%q) = %v, want %v", name, got, want)
		}
	}
}
