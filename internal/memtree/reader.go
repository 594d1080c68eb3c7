package memtree

import "github.com/openhuman/openhuman-core/sdk/abi"

// ErrNotFound is returned (wrapped) by GetChunk when no chunk has the given id
// (abi.ErrNotFound, which the host answers with not_found).
var ErrNotFound = abi.ErrNotFound

// ErrInvalid is returned (wrapped) when a read request is malformed (e.g. k out
// of range; abi.ErrInvalid, which the host answers with invalid_params).
var ErrInvalid = abi.ErrInvalid
