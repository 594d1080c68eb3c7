//go:build wasip1

// Command tree_browse is the tree.browse tool module (capability memory.read): its logic is
// firstparty.Browse; this file only links it to the ABI.
package main

import (
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/memory"
	"github.com/openhuman/openhuman-core/tools-wasm/firstparty"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		return firstparty.Browse(r.Arguments, memory.Raw{})
	})
}

func main() {}
