//go:build wasip1

// Command extism-activity is a third-party tool written against the Extism Go PDK
// (abi "extism/1") instead of the openhuman SDK: memory.activity counts, per month,
// the chunks that mention an entity. It calls the openhuman host function
// chunks_list, which the host registers under the import module "extism:host/user"
// when the module is granted memory.read.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o activity.wasm ./examples/extism-activity
//	openhuman-core tools pack activity.wasm --manifest examples/extism-activity/tool.toml
package main

import (
	"encoding/json"

	pdk "github.com/extism/go-pdk"

	"github.com/openhuman/openhuman-core/examples/extism-activity/activity"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// chunks_list takes and returns Extism memory offsets holding JSON.
//
//go:wasmimport extism:host/user chunks_list
func hostChunksList(offset uint64) uint64

// host calls chunks_list through Extism memory blocks.
type host struct{}

func (host) ChunksList(req []byte) []byte {
	in := pdk.AllocateBytes(req)
	defer in.Free()
	out := pdk.FindMemory(hostChunksList(in.Offset()))
	defer out.Free()
	return out.ReadBytes()
}

// activity is the tool's export (the manifest's `export`). Its input is the
// openhuman/1 call request; its output the call response.
//
//go:wasmexport activity
func run() int32 {
	var call abi.CallRequest
	var resp abi.CallResponse
	if err := json.Unmarshal(pdk.Input(), &call); err != nil {
		resp.Error = &abi.Error{Code: abi.CodeInternal, Message: "the host sent a request that is not a call request: " + err.Error()}
	} else if res, err := activity.Run(call.Arguments, host{}); err != nil {
		resp.Error = err
	} else if raw, err := json.Marshal(res); err != nil {
		resp.Error = &abi.Error{Code: abi.CodeInternal, Message: err.Error()}
	} else {
		resp.Result = raw
	}
	out, _ := json.Marshal(resp)
	pdk.Output(out)
	return 0
}

func main() {}
