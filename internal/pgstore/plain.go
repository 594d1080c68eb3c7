package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	a := args{id}
	err := s.rd.QueryRow(ctx, `SELECT key, id, kind, source_id, source_ref, source_refs_json, title, ts, ts_start, ts_end,
		seq, token_count, text, tags_json, attachments_json FROM chunks c WHERE id = $1`+a.scoped(index.ScopeFrom(ctx), "c"), a...). // out of scope: as absent as an unknown id
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
	rows, err := s.rd.Query(ctx, `SELECT entity_id FROM chunk_entities WHERE chunk_key = $1 ORDER BY entity_id COLLATE "C"`, key)
	if err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	if c.Entities, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	return &c, nil
}

// Entities lists up to k entities of kind ("": any) from offset, by mentions,
// then most recently seen, then id (in byte order, as SQLite's), with the count
// of that kind (index.Plain). Under a scope, mentions are counted over the
// chunks it reads, and an entity mentioned only outside it is not listed.
func (s *Store) Entities(ctx context.Context, kind string, k, offset int) ([]abi.Entity, int, error) {
	var a args
	kindCond := ""
	if kind != "" {
		kindCond = " AND e.kind = " + a.add(kind)
	}
	inner := `SELECT e.id, e.kind, e.surface, e.ref_count AS n, e.last_seen AS seen FROM entities e WHERE e.ref_count > 0` + kindCond
	if sc := index.ScopeFrom(ctx); !sc.Full() {
		inner = `SELECT e.id, e.kind, e.surface, count(*) AS n, max(c.ts) AS seen FROM chunk_entities ce
			JOIN chunks c ON c.key = ce.chunk_key JOIN entities e ON e.id = ce.entity_id
			WHERE true` + kindCond + a.scoped(sc, "c") + ` GROUP BY e.id, e.kind, e.surface`
	}
	var total int64
	if err := s.rd.QueryRow(ctx, `SELECT count(*) FROM (`+inner+`) t`, a...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count entities: %w", err)
	}
	rows, err := s.rd.Query(ctx, `SELECT id, kind, surface, n, seen FROM (`+inner+`) t
		ORDER BY n DESC, seen DESC, id COLLATE "C" LIMIT `+a.add(k)+` OFFSET `+a.add(offset), a...)
	if err != nil {
		return nil, 0, err
	}
	var out []abi.Entity
	err = forRows(rows, func(r pgx.Rows) error {
		var e abi.Entity
		var n int64
		if err := r.Scan(&e.EntityID, &e.Kind, &e.Surface, &n, &e.LastSeenMS); err != nil {
			return err
		}
		e.Count = int(n)
		out = append(out, e)
		return nil
	})
	return out, int(total), err
}

// HoldsChunks reports whether the store holds any chunk (index.Plain).
func (s *Store) HoldsChunks(ctx context.Context) (bool, error) {
	var holds bool
	err := s.rd.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chunks)`).Scan(&holds)
	return holds, err
}
