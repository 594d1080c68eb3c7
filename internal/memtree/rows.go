package memtree

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The row readers both SQL backends share (this package and internal/pgstore):
// the same columns read into the same results, over database/sql's rows or
// pgx's, so that a hit, a chunk's text or a chat hit's next chunk is shaped in
// one place whichever backend holds the store.

// HitColumns are the chunk columns ScanHit reads, in order (the chunk table as c).
const HitColumns = `c.id, c.kind, c.source_id, c.source_ref, c.source_refs_json, c.title, c.ts, c.seq, c.tags_json`

// hitColumns is HitColumns, under the name this package's statements use.
const hitColumns = HitColumns

// RowScanner is one row to read: *sql.Row, *sql.Rows, pgx.Row and pgx.Rows all are.
type RowScanner interface{ Scan(dest ...any) error }

// Rows is what the row readers need of a result set: *sql.Rows and pgx.Rows
// both have it. Closing it stays with the caller.
type Rows interface {
	RowScanner
	Next() bool
	Err() error
}

// ScanHit reads HitColumns plus any extra destinations into a hit: the source
// ref empty when NULL, the title cut to hitTitleMaxChars, empty ref and tag
// lists nil.
func ScanHit(r RowScanner, extra ...any) (abi.ChunkHit, error) {
	var h abi.ChunkHit
	var ref sql.NullString
	var refs, tags string
	dest := append([]any{&h.ID, &h.SourceKind, &h.SourceID, &ref, &refs, &h.Title, &h.TimestampMS, &h.Seq, &tags}, extra...)
	if err := r.Scan(dest...); err != nil {
		return h, err
	}
	h.SourceRef = ref.String
	h.Title = clipRunes(h.Title, hitTitleMaxChars)
	_ = json.Unmarshal([]byte(refs), &h.SourceRefs)
	_ = json.Unmarshal([]byte(tags), &h.Tags)
	if len(h.SourceRefs) == 0 {
		h.SourceRefs = nil
	}
	if len(h.Tags) == 0 {
		h.Tags = nil
	}
	return h, nil
}

// ReadTexts reads rows of (id, title, text, ref_spans_json) into index.Backend
// Texts' answer; spans that do not parse are left out. what names the read in
// errors.
func ReadTexts(rows Rows, what string, n int) (map[string]index.ChunkText, error) {
	out := make(map[string]index.ChunkText, n)
	for rows.Next() {
		var id, spans string
		var c index.ChunkText
		if err := rows.Scan(&id, &c.Title, &c.Text, &spans); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if json.Unmarshal([]byte(spans), &c.Spans) != nil {
			c.Spans = nil
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ReadKeyedHits reads rows of (HitColumns, key, text) into index.Backend Hits'
// answer. what names the read in errors.
func ReadKeyedHits(rows Rows, what string) (map[index.Key]index.Hit, error) {
	out := map[index.Key]index.Hit{}
	for rows.Next() {
		var k int64
		var h index.Hit
		var err error
		if h.ChunkHit, err = ScanHit(rows, &k, &h.Text); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out[index.Key(k)] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ReadFollowing reads rows of (HitColumns, text, previous chunk id) into the
// next chunk after each previous one, for index.Backend Following (see
// index.InHitOrder).
func ReadFollowing(rows Rows) (map[string]index.Hit, error) {
	after := map[string]index.Hit{} // previous chunk id → next chunk
	for rows.Next() {
		var h index.Hit
		var prev string
		var err error
		if h.ChunkHit, err = ScanHit(rows, &h.Text, &prev); err != nil {
			return nil, fmt.Errorf("read the next chunks: %w", err)
		}
		after[prev] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the next chunks: %w", err)
	}
	return after, nil
}
