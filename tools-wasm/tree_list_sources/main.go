//go:build wasip1

// Command tree_list_sources is the tree.list_sources tool module (capability memory.read): its logic is
// firstparty.ListSources; this file only links it to the ABI.
package main

import (
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/memory"
	"github.com/openhuman/openhuman-core/tools-wasm/firstparty"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		return firstparty.ListSources(r.Arguments, memory.Raw{})
	})
}

func main() {}
