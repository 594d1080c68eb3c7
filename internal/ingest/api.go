package ingest

import (
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/textsafe"
)

// What a run reports. The types live in readkit, which every format family
// writes its report through; callers name them here.
type (
	// Summary reports what a Run did.
	Summary = readkit.Summary
	// FileError is one input that could not be (fully) ingested.
	FileError = readkit.FileError
	// FileOutcome is one file handed to a reader, with its format and yield
	// (Summary.Outcomes, ingest --report).
	FileOutcome = readkit.FileOutcome
)

// SafeName returns a file name fit for one output line: as it is when every
// character is printable, else Go-quoted.
func SafeName(p string) string { return textsafe.Name(p) }
