//go:build unix

package watch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockState takes an exclusive lock on path+".lock" for the life of the
// process (the kernel drops it when the process ends, also on kill -9), so that
// two watch loops never follow one workspace at once.
func lockState(path string) (release func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("watch: lock %s: %w", path+".lock", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(b[:n]))
			if who != "" {
				who = " (pid " + who + ")"
			}
			return nil, fmt.Errorf("watch: another watch%s already follows this workspace (%s): stop it first, or give this one another OPENHUMAN_WORKSPACE", who, path+".lock")
		}
		return nil, fmt.Errorf("watch: lock %s: %w", path+".lock", err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}
