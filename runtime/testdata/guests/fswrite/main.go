//go:build wasip1

// Command fswrite imports a host function that does not exist.
package main

import (
	"unsafe"

	"github.com/openhuman/openhuman-core/runtime/testdata/guests/glue"
)

//go:wasmimport openhuman fs_write
func fsWrite(ptr unsafe.Pointer, n int32) int64

func init() {
	glue.Handler = func(r *glue.Request) (any, string, string) {
		return map[string]string{"reply": string(glue.Call(fsWrite, []byte(`{"path":"/tmp/x"}`)))}, "", ""
	}
}

func main() {}
