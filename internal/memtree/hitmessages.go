package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Search and recall hits carry their cited messages (abi.HitMessage: ref, author,
// time, text), so a client can answer from a hit without calling tree.read_chunk.
// What the store keeps for each message:
//
//   - Sources ingested with Merge (chat exports) keep every message whole in
//     source_messages: exact time, author, full text.
//   - Otherwise the chunk text is all there is. A chat message is rendered
//     "author (YYYY-MM-DD HH:MM): text", so its time is known to the minute; an
//     e-mail as "From:/To:/Cc:/Date: YYYY-MM-DD/Subject:" headers, a blank line and
//     the body, so its time is known to the day; a document passage has no author
//     and the document's time. The first and last messages of a chunk have exact
//     times (ts and ts_end: a source's messages are in time order).
//
// No UTC offset is stored (ingest keeps instants), so times are given in UTC.

// hitAuthorMaxChars bounds a hit message's author.
const hitAuthorMaxChars = 200

// hitTitleMaxChars bounds the titles and names a read result shows (a hit's title,
// a source's title and display name, an entity's surface form).
const hitTitleMaxChars = 300

// neighbourChunks is how many chunks either side of a hit (same source) are read
// for a cited message the hit's own chunk does not hold.
const neighbourChunks = 2

// reChatPrefix matches the "author (YYYY-MM-DD HH:MM): " a chat message is rendered with.
var reChatPrefix = lazyre.New(`^(.*?) \((\d{4}-\d{2}-\d{2} \d{2}:\d{2})\): `)

// hitChunk is what hit messages are built from: one chunk's stored messages.
type hitChunk struct {
	sourceRowID int64
	kind, title string
	seq         int
	ts, tsEnd   int64 // the times of its first and (messages are in time order) last message
	text        string
	refs        []string
	spans       [][2]int
}

// citedRefs returns a hit's cited refs in order: SourceRef, then SourceRefs, each once.
func citedRefs(h abi.ChunkHit) []string {
	var out []string
	seen := map[string]bool{}
	add := func(r string) {
		if r = strings.TrimSpace(r); r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	add(h.SourceRef)
	for _, r := range h.SourceRefs {
		add(r)
	}
	return out
}

// addHitMessages fills each hit's Messages from its cited refs (at most
// abi.MaxHitMessages) and returns the bound applied to their texts (0 when no hit
// cites a message). The chunks it reads are those scope reads (a hit's
// neighbours are of its own source, so in scope with it).
func addHitMessages(ctx context.Context, db *sql.DB, hits []abi.ChunkHit, scope index.Scope) (int, error) {
	if len(hits) == 0 || db == nil {
		return 0, nil
	}
	sc, scArgs := andScope(scope, "c")
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	chunks, err := readHitChunks(ctx, db, `c.id IN (SELECT value FROM json_each(?))`+sc, append([]any{jsonArg(ids)}, scArgs...)...)
	if err != nil {
		return 0, err
	}
	// Refs a hit cites that its chunk does not hold (a neighbour's): look in the
	// chunks around it, and in the stored messages of its source.
	type srcRef struct {
		rowid int64
		ref   string
	}
	var wantStored []srcRef
	var neighbours []int // indexes of hits with a ref outside their chunk
	for i, h := range hits {
		c, ok := chunks[h.ID]
		if !ok {
			continue
		}
		refs := citedRefs(h)
		if len(refs) > abi.MaxHitMessages {
			refs = refs[:abi.MaxHitMessages]
		}
		outside := false
		for _, r := range refs {
			wantStored = append(wantStored, srcRef{c.sourceRowID, r})
			if indexOf(c.refs, r) < 0 {
				outside = true
			}
		}
		if outside {
			neighbours = append(neighbours, i)
		}
	}
	near := map[int64][]*hitChunk{} // source rowid → chunks near a hit
	if len(neighbours) > 0 {
		ranges := make([][3]int64, 0, len(neighbours))
		for _, i := range neighbours {
			c := chunks[hits[i].ID]
			ranges = append(ranges, [3]int64{c.sourceRowID, int64(c.seq - neighbourChunks), int64(c.seq + neighbourChunks)})
		}
		more, err := readHitChunks(ctx, db, `c.rowid IN (SELECT c2.rowid FROM json_each(?) j JOIN chunks c2
			ON c2.source_rowid=json_extract(j.value, '$[0]') AND c2.seq BETWEEN json_extract(j.value, '$[1]') AND json_extract(j.value, '$[2]'))`+sc,
			append([]any{jsonArg(ranges)}, scArgs...)...)
		if err != nil {
			return 0, err
		}
		for _, m := range more {
			near[m.sourceRowID] = append(near[m.sourceRowID], m)
		}
	}
	stored := map[srcRef]storedMessage{}
	if len(wantStored) > 0 {
		// Only Merge sources keep their messages: ask for the pairs of those.
		var rowids []int64
		seen := map[int64]bool{}
		for _, w := range wantStored {
			if !seen[w.rowid] {
				seen[w.rowid] = true
				rowids = append(rowids, w.rowid)
			}
		}
		keeps, err := sourcesWithMessages(ctx, db, rowids)
		if err != nil {
			return 0, err
		}
		kept := wantStored[:0]
		for _, w := range wantStored {
			if keeps[w.rowid] {
				kept = append(kept, w)
			}
		}
		wantStored = kept
	}
	if len(wantStored) > 0 {
		pairs := make([][2]any, len(wantStored))
		for i, w := range wantStored {
			pairs[i] = [2]any{w.rowid, w.ref}
		}
		rows, err := db.QueryContext(ctx, `SELECT m.source_rowid, m.ref, m.ts, m.msg_json FROM json_each(?) j
			JOIN source_messages m ON m.source_rowid=json_extract(j.value, '$[0]') AND m.ref=json_extract(j.value, '$[1]')`, jsonArg(pairs))
		if err != nil {
			return 0, fmt.Errorf("read cited messages: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k srcRef
			var m storedMessage
			var js string
			var ts int64
			if err := rows.Scan(&k.rowid, &k.ref, &ts, &js); err != nil {
				return 0, fmt.Errorf("read cited messages: %w", err)
			}
			if json.Unmarshal([]byte(js), &m) != nil {
				continue // damaged row: fall back to the chunk text
			}
			if m.TimestampMS == 0 {
				m.TimestampMS = ts
			}
			stored[k] = m
		}
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("read cited messages: %w", err)
		}
	}
	total := 0
	for i := range hits {
		h := &hits[i]
		h.Messages = nil
		c, ok := chunks[h.ID]
		if !ok {
			continue
		}
		refs := citedRefs(*h)
		if len(refs) > abi.MaxHitMessages {
			refs = refs[:abi.MaxHitMessages]
		}
		for _, r := range refs {
			var m abi.HitMessage
			if sm, ok := stored[srcRef{c.sourceRowID, r}]; ok {
				m = fromStored(r, sm)
			} else if from := holder(c, near[c.sourceRowID], r); from != nil {
				m = fromChunk(from, r)
			} else {
				m = abi.HitMessage{Ref: r}
			}
			m.Author = clipRunes(m.Author, hitAuthorMaxChars)
			h.Messages = append(h.Messages, m)
		}
		total += len(h.Messages)
	}
	if total == 0 {
		return 0, nil
	}
	bound := max(abi.HitMessageMinChars, min(abi.HitMessageMaxChars, abi.HitMessageBudgetChars/total))
	fit.BoundTexts(hits, bound)
	return bound, nil
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

// holder returns the chunk, among c and its neighbours, that holds ref.
func holder(c *hitChunk, near []*hitChunk, ref string) *hitChunk {
	if indexOf(c.refs, ref) >= 0 {
		return c
	}
	for _, n := range near {
		if indexOf(n.refs, ref) >= 0 {
			return n
		}
	}
	return nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// fromStored builds a hit message from a message kept whole.
func fromStored(ref string, m storedMessage) abi.HitMessage {
	author := strings.TrimSpace(m.Author)
	if author == "" {
		author = strings.TrimSpace(m.AuthorAddr)
	}
	out := abi.HitMessage{Ref: ref, Author: author, Text: strings.TrimSpace(normalizeNewlines(m.Text))}
	if m.TimestampMS != 0 {
		out.Time, out.TimePrecision = isoTime(m.TimestampMS), abi.PrecisionMS
	}
	return out
}

// fromChunk builds a hit message from the part of chunk c that holds ref.
func fromChunk(c *hitChunk, ref string) abi.HitMessage {
	out := abi.HitMessage{Ref: ref}
	i := indexOf(c.refs, ref)
	if i < 0 || i >= len(c.spans) {
		return out
	}
	sp := c.spans[i]
	if sp[0] < 0 || sp[1] > len(c.text) || sp[0] > sp[1] {
		return out
	}
	seg := c.text[sp[0]:sp[1]]
	first := sp[0] == 0          // the chunk's first message: its time is the chunk's
	last := sp[1] == len(c.text) // its last: its time is the chunk's end
	switch c.kind {
	case KindChat:
		if m := reChatPrefix.FindStringSubmatch(seg); m != nil {
			if a := strings.TrimSpace(m[1]); a != "unknown" {
				out.Author = a
			}
			if t, err := time.Parse("2006-01-02 15:04", m[2]); err == nil {
				out.Time, out.TimePrecision = isoTime(t.UnixMilli()), abi.PrecisionMinute
			}
			seg = seg[len(m[0]):]
		}
	case KindEmail:
		if head, body, ok := strings.Cut(seg, "\n\n"); ok || isMailHeader(seg) {
			if !isMailHeader(head) {
				break
			}
			for _, ln := range strings.Split(head, "\n") {
				switch {
				case strings.HasPrefix(ln, "From: "):
					out.Author = strings.TrimSpace(strings.TrimPrefix(ln, "From: "))
				case strings.HasPrefix(ln, "Date: "):
					if t, err := time.Parse("2006-01-02", strings.TrimSpace(strings.TrimPrefix(ln, "Date: "))); err == nil {
						out.Time, out.TimePrecision = isoTime(t.UnixMilli()), abi.PrecisionDay
					}
				}
			}
			seg = body
		}
	default: // a document passage: no author; the document's time
		if t := strings.TrimSpace(c.title); t != "" && strings.HasPrefix(seg, t+"\n\n") {
			seg = seg[len(t)+2:]
		}
		first = true
	}
	switch {
	case first && c.ts != 0:
		out.Time, out.TimePrecision = isoTime(c.ts), abi.PrecisionMS
	case last && c.tsEnd != 0:
		out.Time, out.TimePrecision = isoTime(c.tsEnd), abi.PrecisionMS
	}
	out.Text = strings.TrimSpace(seg)
	return out
}

// isMailHeader reports whether s starts like the headers ingest renders an e-mail with.
func isMailHeader(s string) bool {
	for _, p := range []string{"From: ", "To: ", "Cc: ", "Date: ", "Subject: "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// isoTime formats ms as RFC 3339 in UTC, with milliseconds when they are not zero.
func isoTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.999Z07:00")
}

// clipRunes cuts s to at most n characters, ending in "…" when cut.
func clipRunes(s string, n int) string {
	t, _ := fit.CutText(s, n)
	return t
}

// readHitChunks reads the chunks matching cond (over chunks c) with their messages' spans, by id.
func readHitChunks(ctx context.Context, db *sql.DB, cond string, args ...any) (map[string]*hitChunk, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.id, c.source_rowid, c.kind, c.title, c.seq, c.ts, c.ts_end, c.text, c.source_refs_json, c.ref_spans_json
		FROM chunks c WHERE `+cond, args...)
	if err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	defer rows.Close()
	out := map[string]*hitChunk{}
	for rows.Next() {
		var id, refs, spans string
		c := &hitChunk{}
		if err := rows.Scan(&id, &c.sourceRowID, &c.kind, &c.title, &c.seq, &c.ts, &c.tsEnd, &c.text, &refs, &spans); err != nil {
			return nil, fmt.Errorf("read cited messages: %w", err)
		}
		if json.Unmarshal([]byte(refs), &c.refs) != nil || json.Unmarshal([]byte(spans), &c.spans) != nil || len(c.spans) != len(c.refs) {
			c.refs, c.spans = nil, nil
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cited messages: %w", err)
	}
	return out, nil
}

// jsonArg encodes v as a JSON text parameter (for json_each).
func jsonArg(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
