package pagehint

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestReleaseDropsResidentPages: a 4 MiB file mapped private and read (as the
// executable's embedded tables are) leaves the resident set when released,
// all but its end pages, and reads the same bytes afterwards.
func TestReleaseDropsResidentPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("page hints are Linux only; elsewhere Release does nothing")
	}
	want := make([]byte, 4<<20)
	for i := range want {
		want[i] = byte(i*7 + i>>12)
	}
	path := filepath.Join(t.TempDir(), "table")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, len(want), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	// Offset by 100 bytes, as a table rarely starts on a page.
	table := m[100 : len(m)-100]
	if !bytes.Equal(table, want[100:len(want)-100]) {
		t.Fatal("mapped bytes differ from the file")
	}
	before := rssFileKB(t)
	n := Release(table)
	after := rssFileKB(t)
	page := os.Getpagesize()
	if n != len(m)-2*page {
		t.Errorf("released %d bytes, want %d (all but the two end pages)", n, len(m)-2*page)
	}
	if before-after < int64(n/1024)*3/4 {
		t.Errorf("RssFile %d → %d kB after releasing %d kB", before, after, n/1024)
	}
	if !bytes.Equal(table, want[100:len(want)-100]) {
		t.Fatal("the table reads differently after Release")
	}
}

// TestReleaseOfLessThanAPage releases nothing: the pages at a slice's ends may
// hold other variables.
func TestReleaseOfLessThanAPage(t *testing.T) {
	b := make([]byte, 100)
	if n := Release(b); n != 0 {
		t.Errorf("released %d bytes of a 100-byte slice", n)
	}
	if n := Release(nil); n != 0 {
		t.Errorf("released %d bytes of nil", n)
	}
}

func rssFileKB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssFile:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestAnonymousMemoryIsKept: memory that is not a file's (the heap) is never
// released, since dropping its pages would read zeros.
func TestAnonymousMemoryIsKept(t *testing.T) {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i%251 + 1)
	}
	if n := Release(b); n != 0 {
		t.Fatalf("released %d bytes of heap memory", n)
	}
	for i, c := range b {
		if c != byte(i%251+1) {
			t.Fatalf("byte %d changed to %d", i, c)
		}
	}
}
