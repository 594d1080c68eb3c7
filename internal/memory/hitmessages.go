package memory

import (
	"context"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Search and recall hits carry their cited messages (abi.HitMessage: ref, author,
// time, text), so a client can answer from a hit without calling tree.read_chunk.
// What a store keeps for each message:
//
//   - Sources ingested with Merge (chat exports) keep every message whole
//     (index.StoredMessage): exact time, author, full text.
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

// neighbourChunks is how many chunks either side of a hit (same source) are read
// for a cited message the hit's own chunk does not hold.
const neighbourChunks = 2

// reChatPrefix matches the "author (YYYY-MM-DD HH:MM): " a chat message is rendered with.
var reChatPrefix = lazyre.New(`^(.*?) \((\d{4}-\d{2}-\d{2} \d{2}:\d{2})\): `)

// citedRefs returns a hit's cited refs in order: SourceRef, then SourceRefs,
// each once, at most abi.MaxHitMessages.
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
	if len(out) > abi.MaxHitMessages {
		out = out[:abi.MaxHitMessages]
	}
	return out
}

// HitMessages fills each hit's Messages from its cited refs (at most
// abi.MaxHitMessages), read through m, and returns the bound applied to their
// texts (0 when no hit cites a message).
func HitMessages(ctx context.Context, m index.Messages, hits []abi.ChunkHit) (int, error) {
	if len(hits) == 0 {
		return 0, nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	chunks, err := m.MessageChunks(ctx, ids)
	if err != nil {
		return 0, err
	}
	// Refs a hit cites that its chunk does not hold (a neighbour's): look in the
	// chunks around it, and in the stored messages of its source.
	var wantStored []index.SourceRef
	var around []index.MessageChunk // chunks of hits with a ref outside them
	for _, h := range hits {
		c, ok := chunks[h.ID]
		if !ok {
			continue
		}
		outside := false
		for _, r := range citedRefs(h) {
			wantStored = append(wantStored, index.SourceRef{Source: c.Source, Ref: r})
			if indexOf(c.Refs, r) < 0 {
				outside = true
			}
		}
		if outside {
			around = append(around, c)
		}
	}
	near := map[int64][]index.MessageChunk{} // source → chunks near a hit
	if len(around) > 0 {
		more, err := m.NearChunks(ctx, around, neighbourChunks)
		if err != nil {
			return 0, err
		}
		for _, c := range more {
			near[c.Source] = append(near[c.Source], c)
		}
	}
	var stored map[index.SourceRef]index.StoredMessage
	if len(wantStored) > 0 {
		if stored, err = m.StoredMessages(ctx, wantStored); err != nil {
			return 0, err
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
		for _, r := range citedRefs(*h) {
			var msg abi.HitMessage
			if sm, ok := stored[index.SourceRef{Source: c.Source, Ref: r}]; ok {
				msg = fromStored(r, sm)
			} else if from := holder(&c, near[c.Source], r); from != nil {
				msg = fromChunk(from, r)
			} else {
				msg = abi.HitMessage{Ref: r}
			}
			msg.Author = clipRunes(msg.Author, hitAuthorMaxChars)
			h.Messages = append(h.Messages, msg)
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

// holder returns the chunk, among c and its neighbours, that holds ref.
func holder(c *index.MessageChunk, near []index.MessageChunk, ref string) *index.MessageChunk {
	if indexOf(c.Refs, ref) >= 0 {
		return c
	}
	for i := range near {
		if indexOf(near[i].Refs, ref) >= 0 {
			return &near[i]
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
func fromStored(ref string, m index.StoredMessage) abi.HitMessage {
	author := strings.TrimSpace(m.Author)
	if author == "" {
		author = strings.TrimSpace(m.AuthorAddr)
	}
	out := abi.HitMessage{Ref: ref, Author: author, Text: strings.TrimSpace(m.Text)}
	if m.TimestampMS != 0 {
		out.Time, out.TimePrecision = isoTime(m.TimestampMS), abi.PrecisionMS
	}
	return out
}

// fromChunk builds a hit message from the part of chunk c that holds ref.
func fromChunk(c *index.MessageChunk, ref string) abi.HitMessage {
	out := abi.HitMessage{Ref: ref}
	i := indexOf(c.Refs, ref)
	if i < 0 || i >= len(c.Spans) {
		return out
	}
	sp := c.Spans[i]
	if sp[0] < 0 || sp[1] > len(c.Text) || sp[0] > sp[1] {
		return out
	}
	seg := c.Text[sp[0]:sp[1]]
	first := sp[0] == 0          // the chunk's first message: its time is the chunk's
	last := sp[1] == len(c.Text) // its last: its time is the chunk's end
	switch c.Kind {
	case abi.KindChat:
		if m := reChatPrefix.FindStringSubmatch(seg); m != nil {
			if a := strings.TrimSpace(m[1]); a != "unknown" {
				out.Author = a
			}
			if t, err := time.Parse("2006-01-02 15:04", m[2]); err == nil {
				out.Time, out.TimePrecision = isoTime(t.UnixMilli()), abi.PrecisionMinute
			}
			seg = seg[len(m[0]):]
		}
	case abi.KindEmail:
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
		if t := strings.TrimSpace(c.Title); t != "" && strings.HasPrefix(seg, t+"\n\n") {
			seg = seg[len(t)+2:]
		}
		first = true
	}
	switch {
	case first && c.TS != 0:
		out.Time, out.TimePrecision = isoTime(c.TS), abi.PrecisionMS
	case last && c.TSEnd != 0:
		out.Time, out.TimePrecision = isoTime(c.TSEnd), abi.PrecisionMS
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
