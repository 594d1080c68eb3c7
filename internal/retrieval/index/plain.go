package index

import (
	"context"
	"errors"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ErrEmpty is returned (wrapped) by a plain read of a store that holds nothing
// yet (no store file): the read API answers as for an empty store.
var ErrEmpty = errors.New("the memory tree is empty")

// Plain is what the read API's plain reads (a chunk, browse, the top entities,
// the sources) ask of a store: rows as stored. Checking requests, resolving filters, clipping and
// fitting results under abi.MaxResultBytes and writing hints are the read
// API's (internal/memory); a store only reads.
type Plain interface {
	// Chunk reads chunk id (32 lower-case hex digits) whole, with its entity
	// ids in order and its attachments as stored; nil when the store has no
	// such chunk.
	Chunk(ctx context.Context, id string) (*abi.Chunk, error)
	// Entities lists up to k entities of kind ("": every kind) from offset, by
	// mentions (most first), then last seen (newest first), then id, and counts
	// the entities of that kind.
	Entities(ctx context.Context, kind string, k, offset int) (ents []abi.Entity, total int, err error)
	// Browse reads one tree.browse page for req (checked by the read API): its
	// filter values resolved to stored ones, the page's chunks newest first (by
	// chunk time, then id) with their text, and how many chunks the page is
	// drawn from.
	Browse(ctx context.Context, req abi.ChunksListRequest) (*BrowsePage, error)
	// HoldsChunks reports whether the store holds any chunk.
	HoldsChunks(ctx context.Context) (bool, error)

	// Generation names the store's current write generation (every ingest
	// commit makes a new one): what the read API derives from the source list
	// it keeps per generation.
	Generation(ctx context.Context) (string, error)
	// Sources returns every source holding chunks, newest first (by its last
	// message, then id), and the generation they are of. The slice may be
	// shared: callers must not modify it.
	Sources(ctx context.Context) ([]abi.Source, string, error)
	// SourcePage reads the page [offset, offset+k) of the sources holding
	// chunks of kinds (every kind when empty), in Sources' order, and counts
	// them, without reading the whole list.
	SourcePage(ctx context.Context, kinds []string, k, offset int) ([]abi.Source, int, error)
}

// BrowsePage is one page of Plain.Browse.
type BrowsePage struct {
	Hits  []Hit
	Total int // the chunks the page is drawn from
	// Resolved says what each filter value that is not a stored id was taken
	// to mean; Hint names the values that match nothing and says so when the
	// store is empty.
	Resolved []abi.Resolution
	Hint     string
}
