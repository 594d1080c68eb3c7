//go:build unix

package policy

import (
	"os"
	"syscall"
)

// openNonBlocking opens path for reading without blocking on a FIFO or a
// device (O_NONBLOCK): the caller then checks that it is a regular file before
// reading (on a regular file the flag changes nothing).
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
