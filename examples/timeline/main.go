//go:build wasip1

// Command timeline is a third-party tool module, memory.timeline: the chunks that
// mention an entity, in date order, with counts per month. It needs only the
// memory.read capability.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o timeline.wasm ./examples/timeline
//	openhuman-core tools pack timeline.wasm --manifest examples/timeline/tool.toml
package main

import (
	"github.com/openhuman/openhuman-core/examples/timeline/timeline"
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/memory"
)

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		return timeline.Run(r.Arguments, memory.Host{})
	})
}

func main() {}
