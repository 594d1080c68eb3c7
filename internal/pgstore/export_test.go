package pgstore

import (
	"context"
	"fmt"
)

// CheckCounts recounts, from the chunks and links themselves, what the writer
// maintains: the store's chunk and term totals, every term's document frequency
// and every entity's count of linked chunks (no entity without one).
func (s *Store) CheckCounts(ctx context.Context) error {
	checks := []struct{ what, q string }{
		{"store_stats.chunks", `SELECT count(*) FROM store_stats WHERE chunks <> (SELECT count(*) FROM chunks)`},
		{"store_stats.term_total", `SELECT count(*) FROM store_stats WHERE term_total <> (SELECT coalesce(sum(term_count), 0) FROM chunks)`},
		{"term_df", `SELECT count(*) FROM (
			SELECT term, df FROM term_df
			EXCEPT SELECT t, count(*) FROM chunks, unnest(tsvector_to_array(terms)) t GROUP BY t) d`},
		{"term_df (missing terms)", `SELECT count(*) FROM (
			SELECT t, count(*) FROM chunks, unnest(tsvector_to_array(terms)) t GROUP BY t
			EXCEPT SELECT term, df FROM term_df) d`},
		{"entities.ref_count", `SELECT count(*) FROM entities e WHERE ref_count <> (SELECT count(*) FROM chunk_entities l WHERE l.entity_id = e.id) OR ref_count <= 0`},
		{"linked entities exist", `SELECT count(*) FROM chunk_entities l WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = l.entity_id)`},
	}
	for _, c := range checks {
		var bad int
		if err := s.pool.QueryRow(ctx, c.q).Scan(&bad); err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		if bad != 0 {
			return fmt.Errorf("%s: %d rows out of step with the chunks", c.what, bad)
		}
	}
	return nil
}
