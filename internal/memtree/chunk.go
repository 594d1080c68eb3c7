package memtree

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// MaxChunkTokens is the chunk budget; tokens are approximated as characters / 4.
const MaxChunkTokens = 512

const maxChunkChars = MaxChunkTokens * 4

// Chat chunks end at a pause longer than chatGapMS or after chatMaxMessages messages.
const (
	chatGapMS       = 2 * 60 * 60 * 1000
	chatMaxMessages = 8
)

// ChatChunkGapMS and ChatChunkMessages are where a chat chunk ends at the latest
// (a pause, a number of messages), for ingesters that tell whether two messages
// may share a chunk.
const (
	ChatChunkGapMS    = chatGapMS
	ChatChunkMessages = chatMaxMessages
)

// chunk is one chunk built from a source, before it is written.
type chunk struct {
	ID          string
	Seq         int
	Text        string
	Refs        []string
	Spans       [][2]int // byte range of each ref's text in Text, aligned with Refs
	TS          int64    // first message time
	TSStart     int64
	TSEnd       int64
	Attachments []abi.Attachment
	Entities    map[string]entityRef // canonical id → kind/surface
}

// unit is one message (or document paragraph) rendered as text, the smallest thing
// chunking packs.
type unit struct {
	text   string
	msg    int // index of the message it came from
	header bool
}

// tokenCount approximates tokens as ceil(runes/4).
func tokenCount(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

// chunkID is hex of the first 128 bits of sha256(kind NUL sourceID NUL seq(u32 BE) NUL text).
func chunkID(kind, sourceID string, seq int, text string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(sourceID))
	h.Write([]byte{0})
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(seq))
	h.Write(b[:])
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func day(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }

func minute(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04") }

// renderUnits turns a source's messages into the text units chunking packs.
func renderUnits(in *SourceInput) []unit {
	var out []unit
	switch in.Kind {
	case KindEmail:
		for i, m := range in.Messages {
			var b strings.Builder
			from := strings.TrimSpace(m.Author)
			addr := strings.TrimSpace(m.AuthorAddr)
			switch {
			case from != "" && addr != "":
				fmt.Fprintf(&b, "From: %s <%s>\n", from, addr)
			case from != "" || addr != "":
				fmt.Fprintf(&b, "From: %s\n", from+addr)
			}
			if len(m.To) > 0 {
				fmt.Fprintf(&b, "To: %s\n", strings.Join(m.To, ", "))
			}
			if len(m.Cc) > 0 {
				fmt.Fprintf(&b, "Cc: %s\n", strings.Join(m.Cc, ", "))
			}
			if m.TimestampMS != 0 {
				fmt.Fprintf(&b, "Date: %s\n", day(m.TimestampMS))
			}
			subj := strings.TrimSpace(m.Subject)
			if subj == "" {
				subj = strings.TrimSpace(in.Title)
			}
			if subj != "" {
				fmt.Fprintf(&b, "Subject: %s\n", subj)
			}
			body := strings.TrimSpace(normalizeNewlines(m.Text))
			if body != "" {
				b.WriteString("\n")
				b.WriteString(body)
			}
			if t := strings.TrimSpace(b.String()); t != "" {
				out = append(out, unit{text: t, msg: i})
			}
		}
	case KindChat:
		for i, m := range in.Messages {
			text := strings.TrimSpace(normalizeNewlines(m.Text))
			if text == "" {
				continue
			}
			author := strings.TrimSpace(m.Author)
			if author == "" {
				author = strings.TrimSpace(m.AuthorAddr)
			}
			if author == "" {
				author = "unknown"
			}
			out = append(out, unit{text: fmt.Sprintf("%s (%s): %s", author, minute(m.TimestampMS), text), msg: i})
		}
	default: // document: title line, then paragraphs
		if t := strings.TrimSpace(in.Title); t != "" {
			out = append(out, unit{text: t, msg: 0, header: true})
		}
		for i, m := range in.Messages {
			for _, p := range splitParagraphs(normalizeNewlines(m.Text)) {
				out = append(out, unit{text: p, msg: i})
			}
		}
	}
	return out
}

func normalizeNewlines(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// splitParagraphs splits on blank lines and trims each paragraph.
func splitParagraphs(s string) []string {
	var out []string
	var cur []string
	flush := func() {
		if p := strings.TrimSpace(strings.Join(cur, "\n")); p != "" {
			out = append(out, p)
		}
		cur = cur[:0]
	}
	for _, ln := range strings.Split(s, "\n") {
		if strings.TrimSpace(ln) == "" {
			flush()
			continue
		}
		cur = append(cur, strings.TrimRight(ln, " \t"))
	}
	flush()
	return out
}

// splitOversized cuts one unit's text into pieces of at most max runes: on lines
// first, then hard cuts at rune boundaries.
func splitOversized(s string, max int) []string {
	var out []string
	var cur strings.Builder
	curN := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
		curN = 0
	}
	for _, ln := range strings.Split(s, "\n") {
		n := utf8.RuneCountInString(ln)
		if n > max {
			flush()
			r := []rune(ln)
			for len(r) > 0 {
				k := min(max, len(r))
				if t := strings.TrimSpace(string(r[:k])); t != "" {
					out = append(out, t)
				}
				r = r[k:]
			}
			continue
		}
		if curN > 0 && curN+1+n > max {
			flush()
		}
		if curN > 0 {
			cur.WriteByte('\n')
			curN++
		}
		cur.WriteString(ln)
		curN += n
	}
	flush()
	return out
}

// buildChunks packs a source's units greedily into chunks of at most maxChars runes,
// on unit (message/paragraph) boundaries.
func buildChunks(in *SourceInput, maxChars int) []chunk {
	units := renderUnits(in)
	// Split oversized units first.
	var flat []unit
	for _, u := range units {
		if utf8.RuneCountInString(u.text) <= maxChars {
			flat = append(flat, u)
			continue
		}
		for _, p := range splitOversized(u.text, maxChars) {
			flat = append(flat, unit{text: p, msg: u.msg})
		}
	}
	var out []chunk
	var parts []string
	var msgs []int
	size := 0
	flush := func() {
		if len(parts) == 0 {
			return
		}
		c := chunk{Seq: len(out), Text: strings.Join(parts, "\n\n")}
		seen := map[int]bool{}
		refIdx := map[string]int{}
		first := true
		off := 0
		for pi, mi := range msgs {
			start, end := off, off+len(parts[pi])
			off = end + 2
			m := in.Messages[mi]
			if r := strings.TrimSpace(m.Ref); r != "" {
				if i, ok := refIdx[r]; ok {
					c.Spans[i][1] = end
				} else {
					refIdx[r] = len(c.Refs)
					c.Refs = append(c.Refs, r)
					c.Spans = append(c.Spans, [2]int{start, end})
				}
			}
			if seen[mi] {
				continue
			}
			seen[mi] = true
			if first {
				c.TS, c.TSStart, c.TSEnd = m.TimestampMS, m.TimestampMS, m.TimestampMS
				first = false
			}
			c.TSStart = min(c.TSStart, m.TimestampMS)
			c.TSEnd = max(c.TSEnd, m.TimestampMS)
			c.Attachments = append(c.Attachments, m.Attachments...)
		}
		c.ID = chunkID(in.Kind, in.SourceID, c.Seq, c.Text)
		c.Entities = chunkEntities(in, c.Text, seen)
		out = append(out, c)
		parts, msgs, size = nil, nil, 0
	}
	lastTS := int64(0)
	for i, u := range flat {
		n := utf8.RuneCountInString(u.text)
		ts := in.Messages[u.msg].TimestampMS
		// Chat: a pause in the conversation starts a new chunk, so a chunk holds one
		// exchange and a hit cites few messages.
		gap := in.Kind == KindChat && i > 0 && (ts-lastTS > chatGapMS || len(parts) >= chatMaxMessages)
		if size > 0 && (size+2+n > maxChars || gap) {
			flush()
		}
		lastTS = ts
		if size > 0 {
			size += 2
		}
		parts = append(parts, u.text)
		msgs = append(msgs, u.msg)
		size += n
	}
	flush()
	return out
}

// sortMessages orders messages by time, keeping input order for ties.
func sortMessages(ms []MessageInput) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].TimestampMS < ms[j].TimestampMS })
}
