package memtree

import (
	"context"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ErrNotFound is returned (wrapped) by GetChunk when no chunk has the given id
// (abi.ErrNotFound, which the host answers with not_found).
var ErrNotFound = abi.ErrNotFound

// ErrInvalid is returned (wrapped) when a read request is malformed (e.g. k out
// of range; abi.ErrInvalid, which the host answers with invalid_params).
var ErrInvalid = abi.ErrInvalid

// Reader is the memory tree's read API: one method per read RPC and per
// memory.read host function. Implementations are safe for concurrent use.
type Reader interface {
	Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error)
	Recall(ctx context.Context, req abi.RecallRequest) (*abi.RecallResult, error)
	GetChunk(ctx context.Context, req abi.ChunkGetRequest) (*abi.ChunkResult, error)
	ListChunks(ctx context.Context, req abi.ChunksListRequest) (*abi.ListResult, error)
	TopEntities(ctx context.Context, req abi.EntitiesTopRequest) (*abi.EntitiesResult, error)
	ListSources(ctx context.Context, req abi.SourcesListRequest) (*abi.SourcesResult, error)
}
