//go:build wasip1

package memory

import (
	"encoding/json"
	"unsafe"

	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

//go:wasmimport openhuman memory_search
func hostMemorySearch(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman memory_recall
func hostMemoryRecall(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman chunk_get
func hostChunkGet(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman chunks_list
func hostChunksList(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman entities_top
func hostEntitiesTop(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman sources_list
func hostSourcesList(ptr unsafe.Pointer, n int32) int64

// Search runs the memory tree's keyword search (host function memory_search).
// A host error comes back as an *abi.Error the handler can return as is.
func Search(req abi.SearchRequest) (*abi.SearchResult, error) {
	var out abi.SearchResult
	if err := sdk.CallHost(abi.FnMemorySearch, hostMemorySearch, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Recall runs the memory tree's meaning-based recall (host function memory_recall).
func Recall(req abi.RecallRequest) (*abi.RecallResult, error) {
	var out abi.RecallResult
	if err := sdk.CallHost(abi.FnMemoryRecall, hostMemoryRecall, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetChunk reads one chunk with its full text (host function chunk_get). An unknown
// id is an *abi.Error with code not_found.
func GetChunk(req abi.ChunkGetRequest) (*abi.ChunkResult, error) {
	var out abi.ChunkResult
	if err := sdk.CallHost(abi.FnChunkGet, hostChunkGet, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListChunks lists chunks newest first with filters (host function chunks_list).
func ListChunks(req abi.ChunksListRequest) (*abi.ListResult, error) {
	var out abi.ListResult
	if err := sdk.CallHost(abi.FnChunksList, hostChunksList, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TopEntities lists the most-referenced entities (host function entities_top).
func TopEntities(req abi.EntitiesTopRequest) (*abi.EntitiesResult, error) {
	var out abi.EntitiesResult
	if err := sdk.CallHost(abi.FnEntitiesTop, hostEntitiesTop, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSources lists the ingested sources (host function sources_list).
func ListSources(req abi.SourcesListRequest) (*abi.SourcesResult, error) {
	var out abi.SourcesResult
	if err := sdk.CallHost(abi.FnSourcesList, hostSourcesList, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Host is the memory.read capability as a value, for code written against an
// interface (its methods call the package functions).
type Host struct{}

// Search calls Search.
func (Host) Search(req abi.SearchRequest) (*abi.SearchResult, error) { return Search(req) }

// Recall calls Recall.
func (Host) Recall(req abi.RecallRequest) (*abi.RecallResult, error) { return Recall(req) }

// GetChunk calls GetChunk.
func (Host) GetChunk(req abi.ChunkGetRequest) (*abi.ChunkResult, error) { return GetChunk(req) }

// ListChunks calls ListChunks.
func (Host) ListChunks(req abi.ChunksListRequest) (*abi.ListResult, error) { return ListChunks(req) }

// TopEntities calls TopEntities.
func (Host) TopEntities(req abi.EntitiesTopRequest) (*abi.EntitiesResult, error) {
	return TopEntities(req)
}

// ListSources calls ListSources.
func (Host) ListSources(req abi.SourcesListRequest) (*abi.SourcesResult, error) {
	return ListSources(req)
}

// Raw is the memory.read capability returning each host result undecoded (the
// reply's "ok" JSON), for tools that pass results through: decoding and re-encoding
// JSON is most of a Go guest's work per call.
type Raw struct{}

func rawCall(fn string, call func(unsafe.Pointer, int32) int64, req any) (json.RawMessage, error) {
	return sdk.CallHostRaw(fn, call, req)
}

// Search calls memory_search.
func (Raw) Search(req abi.SearchRequest) (json.RawMessage, error) {
	return rawCall(abi.FnMemorySearch, hostMemorySearch, req)
}

// Recall calls memory_recall.
func (Raw) Recall(req abi.RecallRequest) (json.RawMessage, error) {
	return rawCall(abi.FnMemoryRecall, hostMemoryRecall, req)
}

// GetChunk calls chunk_get.
func (Raw) GetChunk(req abi.ChunkGetRequest) (json.RawMessage, error) {
	return rawCall(abi.FnChunkGet, hostChunkGet, req)
}

// ListChunks calls chunks_list.
func (Raw) ListChunks(req abi.ChunksListRequest) (json.RawMessage, error) {
	return rawCall(abi.FnChunksList, hostChunksList, req)
}

// TopEntities calls entities_top.
func (Raw) TopEntities(req abi.EntitiesTopRequest) (json.RawMessage, error) {
	return rawCall(abi.FnEntitiesTop, hostEntitiesTop, req)
}

// ListSources calls sources_list.
func (Raw) ListSources(req abi.SourcesListRequest) (json.RawMessage, error) {
	return rawCall(abi.FnSourcesList, hostSourcesList, req)
}
