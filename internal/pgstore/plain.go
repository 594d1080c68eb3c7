package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

var _ memory.Store = (*Store)(nil)

var reChunkID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// GetChunk reads one chunk whole, with its entities.
func (s *Store) GetChunk(ctx context.Context, req abi.ChunkGetRequest) (*abi.ChunkResult, error) {
	id := strings.ToLower(strings.TrimSpace(req.ID))
	if !reChunkID.MatchString(id) {
		return nil, fmt.Errorf("get chunk: id %q is not a chunk id (32 hex characters, as returned in `id` by search, recall or browse): %w", req.ID, abi.ErrInvalid)
	}
	var c abi.Chunk
	var ref *string
	var refs, tags, atts string
	var key int64
	var seq, tokens int32
	a := args{id}
	sc := a.scoped(index.ScopeFrom(ctx), "c") // out of scope: as absent as an unknown id
	err := s.rd.QueryRow(ctx, `SELECT key, id, kind, source_id, source_ref, source_refs_json, title, ts, ts_start, ts_end,
		seq, token_count, text, tags_json, attachments_json FROM chunks c WHERE id = $1`+sc, a...).
		Scan(&key, &c.ID, &c.SourceKind, &c.SourceID, &ref, &refs, &c.Title, &c.TimestampMS, &c.TimeRangeStartMS, &c.TimeRangeEndMS,
			&seq, &tokens, &c.Text, &tags, &atts)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get chunk %s: no such chunk; chunk ids come from memory.search, memory.recall or tree.browse results of this store (a re-ingest of a changed source replaces its ids): %w", id, abi.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get chunk %s: %w", id, err)
	}
	c.Seq, c.TokenCount = int(seq), int(tokens)
	if ref != nil {
		c.SourceRef = *ref
	}
	_ = json.Unmarshal([]byte(refs), &c.SourceRefs)
	_ = json.Unmarshal([]byte(tags), &c.Tags)
	_ = json.Unmarshal([]byte(atts), &c.Attachments)
	rows, err := s.rd.Query(ctx, `SELECT entity_id FROM chunk_entities WHERE chunk_key = $1 ORDER BY entity_id`, key)
	if err != nil {
		return nil, fmt.Errorf("get chunk %s: entities: %w", id, err)
	}
	if c.Entities, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, fmt.Errorf("get chunk %s: entities: %w", id, err)
	}
	if len(c.SourceRefs) == 0 {
		c.SourceRefs = nil
	}
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	if len(c.Entities) == 0 {
		c.Entities = nil
	}
	return &abi.ChunkResult{Chunk: c}, nil
}
