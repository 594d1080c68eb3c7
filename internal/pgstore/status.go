package pgstore

import (
	"context"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Status reads what the store holds, in the SQLite store's shape: Path names
// the server and database (never a password), Bytes is the database's size,
// Vectors counts the chunk vectors per model ("model/dim"); summaries,
// paraphrases (a file of the machine) and the last ingest are not kept on this
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
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("store status: %w", err)
	}
	rows.Close()
	return st, s.vectorCounts(ctx, st.Vectors)
}

// vectorCounts fills into the number of stored vectors of each model
// ("model/dim").
func (s *Store) vectorCounts(ctx context.Context, into map[string]int) error {
	rows, err := s.pool.Query(ctx, `SELECT m.model || '/' || m.dim, count(v.chunk_key) FROM embed_models m
		LEFT JOIN chunk_vectors v ON v.model_key = m.key GROUP BY m.key ORDER BY m.key`)
	if err != nil {
		return fmt.Errorf("store status: vectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return fmt.Errorf("store status: vectors: %w", err)
		}
		into[k] = int(n)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store status: vectors: %w", err)
	}
	return nil
}
