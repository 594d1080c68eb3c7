package memtree

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/internal/analysis"
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

// ReadMessageChunks reads rows of (id, source key, kind, title, seq, ts,
// ts_end, text, source_refs_json, ref_spans_json) into the chunks whose
// messages a hit cites, by id (index.MessageChunk): refs and spans that do
// not parse, or do not pair up, are dropped together.
func ReadMessageChunks(rows Rows) (map[string]index.MessageChunk, error) {
	out := map[string]index.MessageChunk{}
	for rows.Next() {
		var id, refs, spans string
		var c index.MessageChunk
		if err := rows.Scan(&id, &c.Source, &c.Kind, &c.Title, &c.Seq, &c.TS, &c.TSEnd, &c.Text, &refs, &spans); err != nil {
			return nil, fmt.Errorf("read cited messages: %w", err)
		}
		if json.Unmarshal([]byte(refs), &c.Refs) != nil || json.Unmarshal([]byte(spans), &c.Spans) != nil || len(c.Spans) != len(c.Refs) {
			c.Refs, c.Spans = nil, nil
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	return out, nil
}

// ReadPeople reads rows of person entity ids into people, by the name their id
// spells ("person:dana-lee" under "dana lee"), as index.Backend People looks
// them up.
func ReadPeople(rows Rows, people map[string][]string) error {
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("load people: %w", err)
		}
		name := strings.Join(analysis.Words(strings.TrimPrefix(id, "person:")), " ")
		people[name] = append(people[name], id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load people: %w", err)
	}
	return nil
}

// ReadSources appends to out the sources rows list, as (kind, source id,
// title, chunk count, first ms, last ms).
func ReadSources(rows Rows, out []abi.Source) ([]abi.Source, error) {
	for rows.Next() {
		var src abi.Source
		if err := rows.Scan(&src.SourceKind, &src.SourceID, &src.Title, &src.ChunkCount, &src.FirstMS, &src.MostRecentMS); err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		out = append(out, src)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	return out, nil
}
