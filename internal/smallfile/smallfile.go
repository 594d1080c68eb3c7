// Package smallfile reads the small files a person configures openhuman-core
// with (config.toml, policy.toml, core.token) without trusting what is at the
// path: a FIFO would block the reader forever and a device such as /dev/zero
// or a huge file would take its memory (issue 39: each crashed or hung every
// command). Read refuses anything but a regular file, opening without blocking,
// and reads at most a limit.
package smallfile

import (
	"fmt"
	"io"
	"os"
)

// Read returns the contents of the regular file at path, of at most limit
// bytes. A missing file is an error satisfying errors.Is(err, fs.ErrNotExist);
// a file that is not regular or is larger than limit is an error saying so.
func Read(path string, limit int64) ([]byte, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, Kind(st.Mode()))
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s has %d bytes, more than the %d read of such a file", path, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while it was read", path, limit)
	}
	return data, nil
}

// Kind names what a file that is not a regular file is, for refusals ("a named
// pipe (FIFO)", "a directory", …).
func Kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}
