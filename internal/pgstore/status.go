package pgstore

import (
	"context"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Status reads what the store holds, in the SQLite store's shape: Path names
// the server and database (never a password), Bytes is the database's size;
// summaries, vectors, paraphrases and the last ingest are not kept on this
// backend yet (zero).
func (s *Store) Status(ctx context.Context) (memtree.StoreStatus, error) {
	st := memtree.StoreStatus{Path: s.where, Exists: true, BinarySchemaVersion: len(migrations),
		Sources: map[string]int{}, Chunks: map[string]int{}, Vectors: map[string]int{}}
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT version FROM schema_version), pg_database_size(current_database()),
		(SELECT count(*) FROM entities)`).Scan(&st.SchemaVersion, &st.Bytes, &st.Entities); err != nil {
		return st, fmt.Errorf("store status: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT kind, count(*), sum(chunk_count) FROM sources WHERE chunk_count > 0 GROUP BY kind`)
	if err != nil {
		return st, fmt.Errorf("store status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var n, chunks int64
		if err := rows.Scan(&kind, &n, &chunks); err != nil {
			return st, fmt.Errorf("store status: %w", err)
		}
		st.Sources[kind], st.Chunks[kind] = int(n), int(chunks)
		st.TotalChunks += int(chunks)
	}
	return st, rows.Err()
}
