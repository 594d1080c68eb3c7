//go:build unix

package principal

import (
	"os"
	"syscall"
)

// inode is fi's inode number: the principals file is replaced by a rename, so
// a new inode says it changed even within one mtime tick.
func inode(fi os.FileInfo) any {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return nil
}
