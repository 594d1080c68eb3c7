package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ErrNotSupported is returned (wrapped) by the plain reads this backend does
// not answer yet.
var ErrNotSupported = errors.New("not supported on the PostgreSQL backend yet")

var _ memory.Store = (*Store)(nil)

// Chunk reads chunk id whole, with its entity ids in order (index.Plain; the
// read API shapes it): nil when there is none.
func (s *Store) Chunk(ctx context.Context, id string) (*abi.Chunk, error) {
	var c abi.Chunk
	var ref *string
	var refs, tags, atts string
	var key int64
	var seq, tokens int32
	err := s.pool.QueryRow(ctx, `SELECT key, id, kind, source_id, source_ref, source_refs_json, title, ts, ts_start, ts_end,
		seq, token_count, text, tags_json, attachments_json FROM chunks WHERE id = $1`, id).
		Scan(&key, &c.ID, &c.SourceKind, &c.SourceID, &ref, &refs, &c.Title, &c.TimestampMS, &c.TimeRangeStartMS, &c.TimeRangeEndMS,
			&seq, &tokens, &c.Text, &tags, &atts)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.Seq, c.TokenCount = int(seq), int(tokens)
	if ref != nil {
		c.SourceRef = *ref
	}
	_ = json.Unmarshal([]byte(refs), &c.SourceRefs)
	_ = json.Unmarshal([]byte(tags), &c.Tags)
	_ = json.Unmarshal([]byte(atts), &c.Attachments)
	rows, err := s.pool.Query(ctx, `SELECT entity_id FROM chunk_entities WHERE chunk_key = $1 ORDER BY entity_id COLLATE "C"`, key)
	if err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	if c.Entities, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	return &c, nil
}

// Entities lists up to k entities of kind ("": any) from offset, by reference
// count, then most recently seen, then id (in byte order, as SQLite's), with the
// count of that kind (index.Plain).
func (s *Store) Entities(ctx context.Context, kind string, k, offset int) ([]abi.Entity, int, error) {
	where, args := "", []any{k, offset}
	if kind != "" {
		where, args = " WHERE kind = $3", append(args, kind) // entities_kind serves both
	}
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM entities`+strings.ReplaceAll(where, "$3", "$1"), args[2:]...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count entities: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, kind, surface, ref_count, last_seen FROM entities`+where+`
		ORDER BY ref_count DESC, last_seen DESC, id COLLATE "C" LIMIT $1 OFFSET $2`, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []abi.Entity
	for rows.Next() {
		var e abi.Entity
		var count int32
		if err := rows.Scan(&e.EntityID, &e.Kind, &e.Surface, &count, &e.LastSeenMS); err != nil {
			return nil, 0, err
		}
		e.Count = int(count)
		out = append(out, e)
	}
	return out, int(total), rows.Err()
}

// HoldsChunks reports whether the store holds any chunk (index.Plain).
func (s *Store) HoldsChunks(ctx context.Context) (bool, error) {
	var holds bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chunks)`).Scan(&holds)
	return holds, err
}

// Browse is not built on this backend yet.
func (s *Store) Browse(ctx context.Context, req abi.ChunksListRequest) (*index.BrowsePage, error) {
	return nil, fmt.Errorf("browse chunks: %w", ErrNotSupported)
}

// Generation, Sources and SourcePage (the sources list) are not built on this
// backend yet.
func (s *Store) Generation(ctx context.Context) (string, error) {
	return "", ErrNotSupported
}

// Sources is not built on this backend yet.
func (s *Store) Sources(ctx context.Context) ([]abi.Source, string, error) {
	return nil, "", ErrNotSupported
}

// SourcePage is not built on this backend yet.
func (s *Store) SourcePage(ctx context.Context, kinds []string, k, offset int) ([]abi.Source, int, error) {
	return nil, 0, ErrNotSupported
}
