//go:build wasip1

// Command memory_search is the memory.search tool module (capability memory.read): its logic is
// firstparty.MemorySearch; this file only links it to the ABI.
package main

import (
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/memory"
	"github.com/openhuman/openhuman-core/tools-wasm/firstparty"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		return firstparty.MemorySearch(r.Arguments, memory.Raw{})
	})
}

func main() {}
