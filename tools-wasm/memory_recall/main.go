//go:build wasip1

// Command memory_recall is the memory.recall tool module (capability memory.read): its logic is
// firstparty.MemoryRecall; this file only links it to the ABI.
package main

import (
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/memory"
	"github.com/openhuman/openhuman-core/tools-wasm/firstparty"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		return firstparty.MemoryRecall(r.Arguments, memory.Raw{})
	})
}

func main() {}
