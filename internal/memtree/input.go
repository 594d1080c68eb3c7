package memtree

import (
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Source kinds (abi's).
const (
	KindEmail    = abi.KindEmail
	KindChat     = abi.KindChat
	KindDocument = abi.KindDocument
)

// SourceInput is one source as parsed and cleaned by ingest: a mail thread, a chat
// channel (or one chat batch file), or one document. The store chunks it, extracts
// entities, builds summaries and writes it in one transaction, replacing the chunk set
// a previous ingest of the same (Kind, SourceID) left (with Merge, adding its messages
// to those that ingest stored).
type SourceInput struct {
	Kind     string // KindEmail, KindChat or KindDocument
	SourceID string // stable logical id, e.g. "email:<root message-id>", "slack:#phoenix", "doc:notes/a.md"
	Title    string // thread subject, channel label, document title
	Provider string // "mbox", "eml", "slack", "whatsapp", "markdown", ...
	Tags     []string
	// Messages in time order. A document is one message whose Text holds the whole body
	// (the store splits it on paragraph boundaries).
	Messages []MessageInput
	// Origin names the file (and message number or byte offset) the source came from,
	// for error messages and logs.
	Origin string
	// Merge adds Messages to those an earlier ingest stored under the same (Kind,
	// SourceID) instead of replacing them: a stored message whose Ref is among
	// Messages is replaced by the new one, every other stored message is kept, and
	// the union is chunked and written as any source is (chunks of unchanged leading
	// messages keep their ids; IngestStats count against the stored chunk set).
	// Chat exports set it, so a second export of a channel (the next month, or one
	// that overlaps) adds to the first and removes nothing.
	//
	// The store keeps each message of a Merge source losslessly (table
	// source_messages, schema version 4), since chunks do not hold them whole.
	// Refs are compared trimmed; of messages of one input sharing a Ref the last
	// is kept. A message without a Ref cannot be matched: it is kept, and merges
	// only with an identical message without a Ref (so re-ingesting the same
	// export does not duplicate it). Re-ingesting what the store holds writes
	// nothing. Writing the source without Merge replaces it and forgets its stored
	// messages; a source stored before version 4 (or without Merge) has no stored
	// messages, so its first Merge ingest replaces its chunks.
	Merge bool
}

// MessageInput is one message (or a whole document) inside a source.
type MessageInput struct {
	Ref         string   // source_ref: Message-ID without brackets, "slack:<channel>:<ts>", batch ref, relative path
	Author      string   // display name of the author ("" when unknown)
	AuthorAddr  string   // e-mail address or handle of the author
	To          []string // recipients as "Name <addr>" or bare addresses
	Cc          []string
	Subject     string
	TimestampMS int64  // UTC epoch milliseconds
	Text        string // cleaned body text (quoted history, signatures and footers removed)
	Attachments []abi.Attachment
	// ReplyTo is the Ref of the message this one answers (a Slack thread reply's
	// parent, "slack:<channel>:<thread_ts>"; a Telegram or Discord reply's
	// message), whether or not that message is in the input: the thread link kept
	// as metadata rather than as words of the text. A Merge source stores it with
	// the message (source_messages).
	ReplyTo string
}

// IngestStats reports what writing one source changed.
type IngestStats struct {
	NewChunks       int // chunks written that did not exist before
	UnchangedChunks int // chunks whose id already existed (same content); of a Merge source, those holding a message of the input

	RemovedChunks int // chunks of an earlier ingest of this source that no longer exist
	Entities      int // distinct entities referenced by the source
}
