package index

import "context"

// MessageChunk is a chunk as a hit's cited messages are read from it.
type MessageChunk struct {
	Source      int64 // the backend's number for the chunk's source (opaque)
	Kind, Title string
	Seq         int   // its place in its source
	TS, TSEnd   int64 // the times of its first and (messages are in time order) last message
	Text        string
	Refs        []string
	Spans       [][2]int // each ref's byte span in Text (Refs and Spans nil when damaged)
}

// SourceRef names one message of a source.
type SourceRef struct {
	Source int64
	Ref    string
}

// StoredMessage is a message a store keeps whole (sources ingested by merge,
// e.g. chat exports): exact time, author, full text (newlines as "\n").
type StoredMessage struct {
	Author, AuthorAddr string
	TimestampMS        int64
	Text               string
}

// Messages is a read call that also reads what hits' cited messages are built
// from (the read API, internal/memory, builds them).
type Messages interface {
	// MessageChunks reads the chunks with ids, by id (a missing chunk is left
	// out).
	MessageChunks(ctx context.Context, ids []string) (map[string]MessageChunk, error)
	// NearChunks reads, for each chunk of around, the chunks of its source
	// within n places of it (itself included).
	NearChunks(ctx context.Context, around []MessageChunk, n int) ([]MessageChunk, error)
	// StoredMessages reads the messages of want a store keeps whole (none
	// when it keeps none).
	StoredMessages(ctx context.Context, want []SourceRef) (map[SourceRef]StoredMessage, error)
}
