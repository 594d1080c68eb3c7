package readkit

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
)

// OpenCSV reads the CSV export at path (at most MaxFileBytes) for a reader, as
// exporters write it: a UTF-8 byte-order mark dropped, rows of any width,
// quotes read leniently. A file it cannot read is a failure told to rep, and ok
// is false.
func OpenCSV(path string, rep *Report) (r *csv.Reader, ok bool) {
	b, err := ReadFileLimited(path)
	if err != nil {
		rep.Fail(FileError{Path: path, Err: err})
		return nil, false
	}
	r = csv.NewReader(bytes.NewReader(TrimUTF8BOM(b)))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	return r, true
}

// csvCancelEvery is how many rows CSVRows reads between two looks at its
// context.
const csvCancelEvery = 256

// CSVRows calls fn with each record r reads after the header, and its row
// number (the header is row 1), until the end of the file or a record that is
// not CSV (a failure told to rep, naming its row: the rows after it are not
// read). It returns false when ctx ended first: the reader stops there.
func CSVRows(ctx context.Context, r *csv.Reader, path string, rep *Report, fn func(row int, rec []string)) bool {
	for n := 2; ; n++ {
		if n%csvCancelEvery == 0 && ctx.Err() != nil {
			return false
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			rep.Fail(FileError{Path: path, Where: fmt.Sprintf("row %d", n), Err: fmt.Errorf("not CSV: %w; the rows after it are not read", err)})
			return true
		}
		fn(n, rec)
	}
}
