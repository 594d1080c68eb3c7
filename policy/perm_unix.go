//go:build unix

package policy

import (
	"fmt"
	"os"
	"syscall"
)

// CheckNotWritableByOthers refuses a file or directory that users other than
// its owner may write: write permission for others, or for a group other than
// the process's own (a user-private group, the default with umask 002, holds
// only its user): what decides which code runs with which capabilities must be
// the owner's alone.
func CheckNotWritableByOthers(path, what string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("checking %s %s: %w", what, path, err)
	}
	perm := st.Mode().Perm()
	groupOther := false
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && perm&0o020 != 0 {
		groupOther = int(sys.Gid) != os.Getgid()
	}
	if perm&0o002 != 0 || groupOther {
		who := "other users"
		if perm&0o002 == 0 {
			who = "the members of its group"
		}
		return fmt.Errorf("refusing %s %s: it is writable by %s (mode %04o), who could change what runs with which capabilities; run `chmod go-w %s`", what, path, who, perm, path)
	}
	return nil
}
