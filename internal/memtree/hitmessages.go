package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// The reads hits' cited messages are built from (index.Messages; the read API,
// internal/memory, builds them): the hits' chunks with their messages' spans,
// the chunks near them, and the messages of Merge sources, kept whole in
// source_messages.

// hitTitleMaxChars bounds the titles and names a read result shows (a hit's title,
// a source's title and display name).
const hitTitleMaxChars = 300

// clipRunes cuts s to at most n characters, ending in "…" when cut.
func clipRunes(s string, n int) string {
	t, _ := fit.CutText(s, n)
	return t
}

// MessageChunks reads the chunks with ids and their messages' spans.
func (r storeReader) MessageChunks(ctx context.Context, ids []string) (map[string]index.MessageChunk, error) {
	sc, scArgs := andScope(r.scope, "c") // a chunk outside the call's scope is not read
	return readHitChunks(ctx, r.db, `c.id IN (SELECT value FROM json_each(?))`+sc, append([]any{jsonArg(ids)}, scArgs...)...)
}

// NearChunks reads the chunks within n places of each chunk of around in its
// source, in one query.
func (r storeReader) NearChunks(ctx context.Context, around []index.MessageChunk, n int) ([]index.MessageChunk, error) {
	ranges := make([][3]int64, 0, len(around))
	for _, c := range around {
		ranges = append(ranges, [3]int64{c.Source, int64(c.Seq - n), int64(c.Seq + n)})
	}
	sc, scArgs := andScope(r.scope, "c") // a hit's neighbours are of its source, so in scope with it; said for the reader
	more, err := readHitChunks(ctx, r.db, `c.rowid IN (SELECT c2.rowid FROM json_each(?) j JOIN chunks c2
		ON c2.source_rowid=json_extract(j.value, '$[0]') AND c2.seq BETWEEN json_extract(j.value, '$[1]') AND json_extract(j.value, '$[2]'))`+sc,
		append([]any{jsonArg(ranges)}, scArgs...)...)
	out := make([]index.MessageChunk, 0, len(more))
	for _, m := range more {
		out = append(out, m)
	}
	return out, err
}

// StoredMessages reads the messages of want kept in source_messages: only Merge
// sources keep theirs, so the pairs of the others are not asked for.
func (r storeReader) StoredMessages(ctx context.Context, want []index.SourceRef) (map[index.SourceRef]index.StoredMessage, error) {
	var rowids []int64
	seen := map[int64]bool{}
	for _, w := range want {
		if !seen[w.Source] {
			seen[w.Source] = true
			rowids = append(rowids, w.Source)
		}
	}
	keeps, err := sourcesWithMessages(ctx, r.db, rowids)
	if err != nil {
		return nil, err
	}
	var pairs [][2]any
	for _, w := range want {
		if keeps[w.Source] {
			pairs = append(pairs, [2]any{w.Source, w.Ref})
		}
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	rows, err := r.db.QueryContext(ctx, `SELECT m.source_rowid, m.ref, m.ts, m.msg_json FROM json_each(?) j
		JOIN source_messages m ON m.source_rowid=json_extract(j.value, '$[0]') AND m.ref=json_extract(j.value, '$[1]')`, jsonArg(pairs))
	if err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	defer rows.Close()
	stored := map[index.SourceRef]index.StoredMessage{}
	for rows.Next() {
		var k index.SourceRef
		var m storedMessage
		var js string
		var ts int64
		if err := rows.Scan(&k.Source, &k.Ref, &ts, &js); err != nil {
			return nil, fmt.Errorf("read cited messages: %w", err)
		}
		if json.Unmarshal([]byte(js), &m) != nil {
			continue // damaged row: the read API falls back to the chunk text
		}
		if m.TimestampMS == 0 {
			m.TimestampMS = ts
		}
		stored[k] = index.StoredMessage{Author: m.Author, AuthorAddr: m.AuthorAddr, TimestampMS: m.TimestampMS, Text: normalizeNewlines(m.Text)}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	return stored, nil
}

// sourcesWithMessages returns which of the sources (by rowid) keep their messages
// in source_messages.
func sourcesWithMessages(ctx context.Context, db *sql.DB, rowids []int64) (map[int64]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT j.value FROM json_each(?) j
		WHERE EXISTS (SELECT 1 FROM source_messages m WHERE m.source_rowid=j.value)`, jsonArg(rowids))
	if err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read cited messages: %w", err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	return out, nil
}

// readHitChunks reads the chunks matching cond (over chunks c) with their messages' spans, by id.
func readHitChunks(ctx context.Context, db *sql.DB, cond string, args ...any) (map[string]index.MessageChunk, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.id, c.source_rowid, c.kind, c.title, c.seq, c.ts, c.ts_end, c.text, c.source_refs_json, c.ref_spans_json
		FROM chunks c WHERE `+cond, args...)
	if err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	defer rows.Close()
	return ReadMessageChunks(rows)
}

// jsonArg encodes v as a JSON text parameter (for json_each).
func jsonArg(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
