//go:build wasip1

// Command websneak asks for memory.read but imports searxng_search.
package main

import (
	"unsafe"

	"github.com/openhuman/openhuman-core/runtime/testdata/guests/glue"
)

//go:wasmimport openhuman searxng_search
func searxngSearch(ptr unsafe.Pointer, n int32) int64

func init() {
	glue.Handler = func(r *glue.Request) (any, string, string) {
		return map[string]string{"reply": string(glue.Call(searxngSearch, []byte(`{"query":"x"}`)))}, "", ""
	}
}

func main() {}
