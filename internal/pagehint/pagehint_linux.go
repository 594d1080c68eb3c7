package pagehint

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

func release(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end := start + uintptr(len(b))
	lo := (start + page - 1) &^ (page - 1)
	hi := end &^ (page - 1)
	if hi <= lo || !fileBacked(lo, hi) {
		return 0
	}
	// MADV_DONTNEED on a private file mapping maps the file's own bytes again
	// on the next read: data that was never written cannot change. (On memory
	// that is not file-backed it would read zeros, hence fileBacked.
	// MADV_PAGEOUT, which never changes contents, leaves such pages resident.)
	if err := syscall.Madvise(b[lo-start:hi-start], syscall.MADV_DONTNEED); err != nil {
		return 0
	}
	return int(hi - lo)
}

// fileBacked reports whether [lo, hi) lies in one private mapping of a file
// (/proc/self/maps: an inode and a path).
func fileBacked(lo, hi uintptr) bool {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		a, b, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		from, err1 := strconv.ParseUint(a, 16, 64)
		to, err2 := strconv.ParseUint(b, 16, 64)
		if err1 != nil || err2 != nil || uint64(lo) < from || uint64(hi) > to {
			continue
		}
		return strings.HasSuffix(fs[1], "p") && fs[4] != "0" && strings.HasPrefix(fs[5], "/")
	}
	return false
}
