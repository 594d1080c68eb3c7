//go:build wasip1

// Command echo is a well-behaved (and, on request, badly behaved) test tool with
// capability memory.read.
package main

import (
	"encoding/json"
	"strings"
	"unsafe"

	"github.com/openhuman/openhuman-core/runtime/testdata/guests/glue"
)

//go:wasmimport openhuman memory_search
func memorySearch(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman memory_recall
func memoryRecall(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman chunk_get
func chunkGet(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman chunks_list
func chunksList(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman entities_top
func entitiesTop(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman sources_list
func sourcesList(ptr unsafe.Pointer, n int32) int64

//go:wasmimport openhuman log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

var hostFns = map[string]func(unsafe.Pointer, int32) int64{
	"memory_search": memorySearch, "memory_recall": memoryRecall, "chunk_get": chunkGet,
	"chunks_list": chunksList, "entities_top": entitiesTop, "sources_list": sourcesList,
}

var hoard [][]byte
var counter int

func init() {
	glue.Handler = func(r *glue.Request) (any, string, string) {
		counter++
		switch r.Tool {
		case "echo":
			return map[string]any{"arguments": r.Arguments, "client": r.Client, "request_id": r.RequestID, "calls": counter}, "", ""
		case "search":
			// Pass the arguments to memory_search and return its reply's ok value.
			var reply struct {
				OK    json.RawMessage   `json:"ok"`
				Error map[string]string `json:"error"`
			}
			json.Unmarshal(glue.Call(memorySearch, r.Arguments), &reply)
			if reply.Error != nil {
				return nil, reply.Error["code"], reply.Error["message"]
			}
			return reply.OK, "", ""
		case "host":
			// {"fn": "...", "req": <raw request>} -> the raw HostReply.
			var a struct {
				Fn  string          `json:"fn"`
				Req json.RawMessage `json:"req"`
			}
			json.Unmarshal(r.Arguments, &a)
			return map[string]json.RawMessage{"reply": glue.Call(hostFns[a.Fn], a.Req)}, "", ""
		case "log":
			for i := 0; i < 200; i++ {
				msg := []byte("line from the guest " + strings.Repeat("x", (200-i)*20))
				hostLog(1, unsafe.Pointer(&msg[0]), int32(len(msg)))
			}
			return map[string]any{}, "", ""
		case "loop":
			for {
				counter++
			}
		case "alloc":
			for {
				hoard = append(hoard, make([]byte, 1<<20))
			}
		case "big":
			glue.Raw = []byte(`{"result":{"s":"` + strings.Repeat("x", 2<<20) + `"}}`)
			return nil, "", ""
		case "garbage":
			glue.Raw = []byte(`not json`)
			return nil, "", ""
		case "panic":
			panic("guest panics on purpose")
		case "fail":
			return nil, "invalid_params", "k must be between 1 and 50"
		}
		return nil, "invalid_params", "unknown tool " + r.Tool
	}
}

func main() {}
