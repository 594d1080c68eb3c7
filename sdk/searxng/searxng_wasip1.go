//go:build wasip1

package searxng

import (
	"unsafe"

	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

//go:wasmimport openhuman searxng_search
func hostSearxngSearch(ptr unsafe.Pointer, n int32) int64

// Search asks the host to query SearXNG (host function searxng_search). The reply
// carries the raw response body (untrusted: parse it defensively) and the effective
// max_results and language. A host error (SearXNG disabled, unreachable, non-2xx)
// comes back as an *abi.Error the handler can return as is.
func Search(req abi.SearxngRequest) (*abi.SearxngReply, error) {
	var out abi.SearxngReply
	if err := sdk.CallHost(abi.FnSearxngSearch, hostSearxngSearch, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Host is the web.searxng capability as a value, for code written against an interface.
type Host struct{}

// Search calls Search.
func (Host) Search(req abi.SearxngRequest) (*abi.SearxngReply, error) { return Search(req) }
