//go:build !unix

package policy

import "os"

// openNonBlocking opens path for reading (there are no FIFOs in a directory
// listing here that could block an open).
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
