package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// multiRow is an INSERT the writer runs for many rows at once, with the rows' values
// bound as parameters of a multi-row VALUES list: rowsPerStmt rows a statement, then
// one statement per remaining row. Binding costs the writer a copy of each value;
// passing the rows as one JSON array to json_each instead made SQLite parse each
// row's JSON again for every column it extracted, all on the single writer
// goroutine (the chat of a -scale 250000 corpus, 200k messages: source_messages
// written in 9.1 and 9.5 s through json_each, 4.5 and 4.0 s bound, interleaved on
// a shared machine).
type multiRow struct {
	cols      int
	bulk, one string // the statement for rowsPerStmt rows and for one row
}

// rowsPerStmt is how many rows a multiRow statement binds (SQLite allows 32,766
// parameters a statement).
const rowsPerStmt = 64

// newMultiRow registers the statements of head ("INSERT INTO t(a, b) VALUES") with
// cols values a row, followed by tail (an ON CONFLICT clause or "").
func newMultiRow(head string, cols int, tail string) multiRow {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	bulk := head + strings.TrimSuffix(strings.Repeat(row+",", rowsPerStmt), ",") + " " + tail
	return multiRow{cols: cols, bulk: writerSQL(bulk), one: writerSQL(head + row + " " + tail)}
}

// exec writes n rows in tx; fill appends row i's cols values to args and returns it.
func (m multiRow) exec(ctx context.Context, s *Store, tx *sql.Tx, n int, fill func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	args := make([]any, 0, m.cols*min(n, rowsPerStmt))
	i := 0
	if n >= rowsPerStmt {
		st, err := s.prepared(ctx, tx, m.bulk)
		if err != nil {
			return err
		}
		for ; i+rowsPerStmt <= n; i += rowsPerStmt {
			args = args[:0]
			for j := i; j < i+rowsPerStmt; j++ {
				args = fill(j, args)
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
	}
	if i < n {
		st, err := s.prepared(ctx, tx, m.one)
		if err != nil {
			return err
		}
		for ; i < n; i++ {
			args = fill(i, args[:0])
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("row %d: %w", i+1, err)
			}
		}
	}
	return nil
}
