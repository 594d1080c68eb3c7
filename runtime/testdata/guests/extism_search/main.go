//go:build wasip1

// Command extism_search is an Extism-PDK tool module (abi "extism/1"): its export
// "run" takes the openhuman CallRequest as input, calls memory_search through
// extism:host/user, and writes a CallResponse. Tool "ext.http" tries Extism's own
// http_request to a URL given in the arguments, which the host must refuse.
package main

import (
	"encoding/json"

	"github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user memory_search
func memorySearch(offset uint64) uint64

type request struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

func respond(v any) int32 {
	b, _ := json.Marshal(v)
	pdk.Output(b)
	return 0
}

//go:wasmexport run
func run() int32 {
	var req request
	if err := json.Unmarshal(pdk.Input(), &req); err != nil {
		return respond(map[string]any{"error": map[string]string{"code": "invalid_params", "message": err.Error()}})
	}
	switch req.Tool {
	case "ext.search":
		mem := pdk.AllocateBytes(req.Arguments)
		out := pdk.FindMemory(memorySearch(mem.Offset()))
		var reply struct {
			OK    json.RawMessage `json:"ok"`
			Error json.RawMessage `json:"error"`
		}
		json.Unmarshal(out.ReadBytes(), &reply)
		if reply.Error != nil {
			return respond(map[string]json.RawMessage{"error": reply.Error})
		}
		return respond(map[string]json.RawMessage{"result": reply.OK})
	case "ext.http":
		var a struct {
			URL string `json:"url"`
		}
		json.Unmarshal(req.Arguments, &a)
		res := pdk.NewHTTPRequest(pdk.MethodGet, a.URL).Send()
		return respond(map[string]any{"result": map[string]any{"status": res.Status(), "body": string(res.Body())}})
	}
	return respond(map[string]any{"error": map[string]string{"code": "invalid_params", "message": "unknown tool"}})
}

func main() {}
