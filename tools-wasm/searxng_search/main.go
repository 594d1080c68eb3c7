//go:build wasip1

// Command searxng_search is the searxng_search tool module (capability web.searxng): its logic is
// firstparty.SearxngSearch; this file only links it to the ABI.
package main

import (
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/searxng"
	"github.com/openhuman/openhuman-core/tools-wasm/firstparty"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		return firstparty.SearxngSearch(r.Arguments, searxng.Host{})
	})
}

func main() {}
