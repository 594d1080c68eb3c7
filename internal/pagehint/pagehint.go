// Package pagehint lets a package hand back the memory pages of embedded data
// it has read once and will not read again (a compressed table it has
// decoded): on Linux their page-table entries are dropped, so they leave the
// process's resident set; a later read maps them again from the executable.
// Elsewhere it does nothing.
package pagehint

// Release drops the resident pages lying wholly inside b, which must be
// read-only data of the executable (an embedded file, never written): the
// pages at its ends, which other variables may share, are kept. It returns
// the bytes released (0 where the platform has no such hint or the call fails).
func Release(b []byte) int { return release(b) }
