package readkit

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/textsafe"
)

// FileError is one input that could not be (fully) ingested.
type FileError struct {
	Path  string // the file (or folder) as walked
	Where string // "message 12 (byte 4096)", "byte 4096", "line 3"; "" when the whole file
	Err   error
}

// Error renders "path: where: err", the path quoted when it holds characters that
// could forge an output line (newlines, terminal controls, invalid UTF-8).
func (e FileError) Error() string {
	p := textsafe.Name(e.Path)
	if e.Where == "" {
		return p + ": " + oneLine(e.Err.Error())
	}
	return p + ": " + oneLine(e.Where) + ": " + oneLine(e.Err.Error())
}

// oneLine escapes the control characters of s (a header quoted in an error may
// hold a newline), so that it cannot break or forge an output line.
func oneLine(s string) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Unwrap returns the cause.
func (e FileError) Unwrap() error { return e.Err }

// Summary reports what a Run did.
type Summary struct {
	Files, Sources, ChunksNew, ChunksUnchanged, ChunksRemoved, Entities, Failures int
	// Contacts counts the people read from address books (vCard, contacts CSV).
	Contacts int
	Seconds  float64
	Errors   []FileError
	// Skipped counts files of no known format (and symbolic links), which are not
	// failures; SkippedBy counts them by reason and Skips names each.
	Skipped   int
	SkippedBy map[string]int
	Skips     []FileError
	// Notes are repairs and guesses worth telling (unknown charset decoded as
	// Windows-1252, a date taken from the file time, a part of a message lost);
	// Warnings counts them.
	Notes    []FileError
	Warnings int
	// Unread names each path given to Run that yielded nothing, with why.
	Unread []FileError
	// Interrupted says the run was cancelled before it read everything.
	Interrupted bool
	// ReadFiles lists the files and folders handed to readers (Options.Report).
	ReadFiles []FileRead
}

// Line is the one-line summary printed after every ingest.
func (s *Summary) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ingest: %d files, %d sources, %d chunks new, %d unchanged, %d removed, %d entities, %d failures",
		s.Files, s.Sources, s.ChunksNew, s.ChunksUnchanged, s.ChunksRemoved, s.Entities, s.Failures)
	if s.Contacts > 0 {
		fmt.Fprintf(&b, ", %d contacts", s.Contacts)
	}
	fmt.Fprintf(&b, ", %d skipped", s.Skipped)
	if len(s.SkippedBy) > 0 {
		reasons := make([]string, 0, len(s.SkippedBy))
		for r := range s.SkippedBy {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if s.SkippedBy[reasons[i]] != s.SkippedBy[reasons[j]] {
				return s.SkippedBy[reasons[i]] > s.SkippedBy[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		parts := make([]string, len(reasons))
		for i, r := range reasons {
			parts[i] = fmt.Sprintf("%d %s", s.SkippedBy[r], r)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, "; "))
	}
	fmt.Fprintf(&b, ", %d warnings", s.Warnings)
	if s.Interrupted {
		b.WriteString(", interrupted")
	}
	fmt.Fprintf(&b, ", %.1f s", s.Seconds)
	return b.String()
}

// Skip reasons counted in Summary.SkippedBy.
const (
	ReasonUnknown    = "not a known mail, chat or document format"
	ReasonSymlink    = "symbolic link: not followed"
	ReasonNotRegular = "not a regular file"
	reasonHidden     = "hidden"
)

// MaxWalkDepth bounds folder nesting.
const MaxWalkDepth = 64

// ReadHead returns the first HeadBytes of a file (nil when it cannot be read; the
// reader then reports the error).
func ReadHead(p string) []byte {
	f, err := archive.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, HeadBytes)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

func ModTime(p string) time.Time {
	if st, err := archive.Stat(p); err == nil {
		return st.ModTime().UTC()
	}
	return time.Now().UTC()
}
