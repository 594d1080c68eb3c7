package runtime

import "syscall"

// statCtimeNanos is the inode change time of st in nanoseconds.
func statCtimeNanos(st *syscall.Stat_t) (int64, bool) { return st.Ctim.Nano(), true }
