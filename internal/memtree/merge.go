package memtree

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Merge sources (SourceInput.Merge) keep their messages in source_messages (schema
// version 4), one row per message, because the chunk rows cannot give them back.
// Prepare encodes each message (off the writer); writeSource, inside the write
// transaction, reads the (key, hash) pairs the store holds for the source and
//
//   - writes the rows of new and changed messages (one statement; none when the input
//     is what the store holds, so re-ingesting an export writes nothing);
//   - when the store holds messages the input lacks, reads them back and prepares the
//     union again on the writer; otherwise it writes the source as Prepare made it.
//
// The union then replaces the chunk set as for any other source, so chunks of
// unchanged leading messages keep their ids and IngestStats stay truthful. The merge
// is computed from what the transaction sees, so a BatchWriter replay, which writes
// the batch's sources again on the same store state, writes the same rows.

// anonKeyPrefix starts the key of a message without a Ref: the prefix, 16 hex digits
// of its content's hash and its occurrence among equal messages of the input ("1",
// "2", ...). Such a message merges only with an identical one at the same occurrence,
// so re-ingesting an export keeps one copy and distinct messages all stay. (A Ref
// never starts with the control character.)
const anonKeyPrefix = "\x1fanon:"

// storedMessage is a MessageInput as source_messages.msg_json holds it.
type storedMessage struct {
	Ref         string           `json:"r,omitempty"`
	Author      string           `json:"a,omitempty"`
	AuthorAddr  string           `json:"aa,omitempty"`
	To          []string         `json:"to,omitempty"`
	Cc          []string         `json:"cc,omitempty"`
	Subject     string           `json:"s,omitempty"`
	TimestampMS int64            `json:"t,omitempty"`
	Text        string           `json:"x,omitempty"`
	Attachments []abi.Attachment `json:"at,omitempty"`
	ReplyTo     string           `json:"rt,omitempty"`
}

// mergeRow is one message of a Merge source encoded for source_messages.
type mergeRow struct {
	key  string // the trimmed Ref, or an anonKeyPrefix key
	hash int64  // 63 bits of the SHA-256 of msg_json
	ts   int64
	msg  string // msg_json
}

// dedupeRefs keeps, of messages sharing a Ref, the last one (where it stands): within
// one input as across ingests, a later message with a Ref replaces an earlier one.
// Messages without a Ref are all kept.
func dedupeRefs(ms []MessageInput) []MessageInput {
	last := make(map[string]int, len(ms))
	withRef := 0
	for i, m := range ms {
		if r := strings.TrimSpace(m.Ref); r != "" {
			last[r] = i
			withRef++
		}
	}
	if len(last) == withRef {
		return ms
	}
	out := ms[:0]
	for i, m := range ms {
		if r := strings.TrimSpace(m.Ref); r != "" && last[r] != i {
			continue
		}
		out = append(out, m)
	}
	return out
}

// mergeKeys encodes messages (already deduplicated by dedupeRefs) as source_messages rows.
func mergeKeys(ms []MessageInput) ([]mergeRow, error) {
	rows := make([]mergeRow, len(ms))
	anon := map[string]int{}
	for i, m := range ms {
		b, err := json.Marshal(storedMessage{Ref: m.Ref, Author: m.Author, AuthorAddr: m.AuthorAddr, To: m.To, Cc: m.Cc,
			Subject: m.Subject, TimestampMS: m.TimestampMS, Text: m.Text, Attachments: m.Attachments, ReplyTo: m.ReplyTo})
		if err != nil {
			return nil, fmt.Errorf("encode message %d (ref %q): %w", i+1, m.Ref, err)
		}
		sum := sha256.Sum256(b)
		h := int64(binary.BigEndian.Uint64(sum[:8]) >> 1)
		key := strings.TrimSpace(m.Ref)
		if key == "" {
			hx := hex.EncodeToString(sum[:8])
			anon[hx]++
			key = anonKeyPrefix + hx + ":" + strconv.Itoa(anon[hx])
		}
		rows[i] = mergeRow{key: key, hash: h, ts: m.TimestampMS, msg: string(b)}
	}
	return rows, nil
}

func (sm *storedMessage) input() MessageInput {
	return MessageInput{Ref: sm.Ref, Author: sm.Author, AuthorAddr: sm.AuthorAddr, To: sm.To, Cc: sm.Cc,
		Subject: sm.Subject, TimestampMS: sm.TimestampMS, Text: sm.Text, Attachments: sm.Attachments, ReplyTo: sm.ReplyTo}
}

// mergeStored merges the Merge source p with the messages the store holds for it
// (source row srcRow) inside tx: it writes the rows of p's new and changed messages
// and returns the source to write, p itself when p holds every stored message, else
// the union prepared again. It changes nothing in p.
func (s *Store) mergeStored(ctx context.Context, tx *sql.Tx, p *Prepared, srcRow int64) (*Prepared, error) {
	idx := make(map[string]int, len(p.rows))
	for i, r := range p.rows {
		idx[r.key] = i
	}
	same := make([]bool, len(p.rows))
	var missing []string
	rows, err := s.txQuery(ctx, tx, qStoredMessageKeys, srcRow)
	if err != nil {
		return nil, fmt.Errorf("read stored messages: %w", err)
	}
	for rows.Next() {
		var key string
		var h int64
		if err := rows.Scan(&key, &h); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read stored messages: %w", err)
		}
		if i, ok := idx[key]; ok {
			same[i] = p.rows[i].hash == h
		} else {
			missing = append(missing, key)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored messages: %w", err)
	}
	var changed []int
	for i := range p.rows {
		if !same[i] {
			changed = append(changed, i)
		}
	}
	if len(changed) > 0 {
		err := qUpsertMessages.exec(ctx, s, tx, len(changed), func(i int, args []any) []any {
			r := &p.rows[changed[i]]
			return append(args, srcRow, r.key, r.ts, r.hash, r.msg)
		})
		if err != nil {
			return nil, fmt.Errorf("store %d messages: %w", len(changed), err)
		}
	}
	if len(missing) == 0 {
		return p, nil
	}
	// The store holds messages the input lacks: read them and prepare the union.
	msgs := make([]MessageInput, 0, len(p.in.Messages)+len(missing))
	msgs = append(msgs, p.in.Messages...)
	rows, err = s.txQuery(ctx, tx, qStoredMessages, srcRow, jsonOf(missing))
	if err != nil {
		return nil, fmt.Errorf("read %d stored messages: %w", len(missing), err)
	}
	for rows.Next() {
		var js string
		if err := rows.Scan(&js); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read stored messages: %w", err)
		}
		var sm storedMessage
		if err := json.Unmarshal([]byte(js), &sm); err != nil {
			rows.Close()
			return nil, fmt.Errorf("decode a stored message: %w (the store is damaged; ingest the source again without its earlier exports)", err)
		}
		msgs = append(msgs, sm.input())
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored messages: %w", err)
	}
	in := p.in
	in.Messages = msgs
	mp, err := prepare(in, false)
	if err != nil {
		return nil, fmt.Errorf("merge with %d stored messages: %w", len(missing), err)
	}
	return mp, nil
}

// inputChunk returns whether a chunk of p merged with stored messages holds one of
// p's own messages (a chunk without refs is counted as p's).
func inputChunk(p *Prepared) func(c *chunk) bool {
	mine := make(map[string]bool, len(p.rows))
	for _, r := range p.rows {
		mine[r.key] = true
	}
	return func(c *chunk) bool { return OwnRefs(mine, c.Refs) }
}

// OwnRefs reports whether a merged chunk citing refs is the input's own (mine
// holds the input's message keys): it cites one of them, or nothing.
func OwnRefs(mine map[string]bool, refs []string) bool {
	if len(refs) == 0 {
		return true
	}
	for _, r := range refs {
		if mine[r] {
			return true
		}
	}
	return false
}

// Writer statements of Merge sources, prepared at Open.
var (
	qStoredMessageKeys = writerSQL(`SELECT ref, hash FROM source_messages WHERE source_rowid=?`)
	qStoredMessages    = writerSQL(`SELECT msg_json FROM source_messages
		WHERE source_rowid=?1 AND ref IN (SELECT value FROM json_each(?2)) ORDER BY ts, ref`)
	qUpsertMessages = newMultiRow(`INSERT INTO source_messages(source_rowid, ref, ts, hash, msg_json) VALUES`, 5,
		`ON CONFLICT(source_rowid, ref) DO UPDATE SET ts=excluded.ts, hash=excluded.hash, msg_json=excluded.msg_json`)
	qDeleteMessages = writerSQL(`DELETE FROM source_messages WHERE source_rowid=?`)
)
