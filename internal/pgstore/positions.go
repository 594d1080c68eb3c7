package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// positions runs the ranked read of the query's terms: for each chunk inner
// selects (key, id, ts, term_count, terms), one row (key, id, ts, term_count,
// lexeme, positions) per term of terms the chunk holds. done ends the read's
// transaction; call it once the rows are read (and closed).
//
// Two things make it cost what the matches cost, not what the store holds
// (measured with psql's timing of this statement, and EXPLAIN ANALYZE, on
// gencorpus -scale 200000: 33,788 chunks, 2,000 matches ranked):
//
//   - Only the query's lexemes leave the tsvector: setweight marks them, ts_filter
//     keeps them, and unnest expands those alone (the writer never writes weights,
//     terms.go, so every position is D until marked here). Unnesting the whole
//     tsvector (about 100 lexemes a chunk) and filtering the rows cost 4× as much
//     for 2,000 matches (55 ms against 14 ms).
//   - The planner costs @@ as a cheap operator and does not see that each row's
//     tsvector is detoasted and decompressed to test it, so for a term in more
//     than about a tenth of the chunks it scans the whole table (84 ms for
//     "club", in 13% of the chunks) instead of the GIN index (15 ms). The read
//     runs with enable_seqscan off in its own read-only transaction (SET LOCAL:
//     no other statement is affected); a sequential scan is never the better
//     plan for a GIN-indexed match, and the answer does not depend on the plan
//     (inner's rows are every match, or the newest maxRanked in a complete
//     order, and ranked sorts them completely).
func (r reader) positions(ctx context.Context, inner string, a args, terms []string) (pgx.Rows, func(), error) {
	tx, err := r.s.rd.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, fmt.Errorf("full-text query: %w", err)
	}
	done := func() { tx.Rollback(ctx) } // read only: nothing to commit
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		done()
		return nil, nil, fmt.Errorf("full-text query: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT m.key, m.id, m.ts, m.term_count, u.lexeme, u.positions
		FROM (`+inner+`) m, unnest(ts_filter(setweight(m.terms, 'A', `+a.add(terms)+`::text[]), '{a}')) u`, a...)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("full-text query: %w", err)
	}
	return rows, done, nil
}
