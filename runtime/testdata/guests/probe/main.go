//go:build wasip1

// Command probe stays within the WASI basics and reports what they give it:
// environment, arguments, preopened directories (fd_prestat_get on fds 3..15),
// writes to fds 1..15, clock and randomness.
package main

import (
	"math/rand/v2"
	"os"
	"time"
	"unsafe"

	"github.com/openhuman/openhuman-core/runtime/testdata/guests/glue"
)

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, buf unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_write
func fdWrite(fd int32, iovs unsafe.Pointer, n int32, written unsafe.Pointer) int32

func init() {
	glue.Handler = func(r *glue.Request) (any, string, string) {
		prestat := map[int]int32{}
		var buf [8]byte
		for fd := 3; fd <= 15; fd++ {
			prestat[fd] = fdPrestatGet(int32(fd), unsafe.Pointer(&buf[0]))
		}
		writes := map[int]int32{}
		msg := []byte("probe\n")
		iov := [2]uint32{uint32(uintptr(unsafe.Pointer(&msg[0]))), uint32(len(msg))}
		var written uint32
		for fd := 1; fd <= 15; fd++ {
			writes[fd] = fdWrite(int32(fd), unsafe.Pointer(&iov[0]), 1, unsafe.Pointer(&written))
		}
		rnd := []uint64{rand.Uint64(), rand.Uint64()}
		return map[string]any{
			"env": os.Environ(), "args": os.Args, "prestat": prestat, "writes": writes,
			"now_unix": time.Now().Unix(), "random": rnd,
		}, "", ""
	}
}

func main() {}
