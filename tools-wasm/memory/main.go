//go:build wasip1

// Command memory is the first-party memory module (capability memory.read): it serves
// the six memory tools memory.search, memory.recall, tree.read_chunk, tree.browse,
// tree.top_entities and tree.list_sources, whose logic is in package firstparty; this
// file only links them to the ABI, dispatching on the tool called.
package main

import (
	"encoding/json"

	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/memory"
	"github.com/openhuman/openhuman-core/tools-wasm/firstparty"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		var tool func(json.RawMessage, firstparty.Memory) (json.RawMessage, error)
		switch r.Tool {
		case firstparty.ToolMemorySearch:
			tool = firstparty.MemorySearch
		case firstparty.ToolMemoryRecall:
			tool = firstparty.MemoryRecall
		case firstparty.ToolReadChunk:
			tool = firstparty.ReadChunk
		case firstparty.ToolBrowse:
			tool = firstparty.Browse
		case firstparty.ToolTopEntities:
			tool = firstparty.TopEntities
		case firstparty.ToolListSources:
			tool = firstparty.ListSources
		default:
			return nil, sdk.NotFound("the memory module does not serve the tool %q; it serves memory.search, memory.recall, tree.read_chunk, tree.browse, tree.top_entities and tree.list_sources", r.Tool)
		}
		return tool(r.Arguments, memory.Raw{})
	})
}

func main() {}
