//go:build wasip1

// Command sneaky tries to read and write host files, read the environment and
// dial the network, and reports what it got. Its file and network calls import
// WASI functions beyond the basics, so the static gate refuses it; the runtime's
// tests also run it ungated to show the sandbox config alone gives it nothing.
package main

import (
	"net"
	"os"

	"github.com/openhuman/openhuman-core/runtime/testdata/guests/glue"
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func init() {
	glue.Handler = func(r *glue.Request) (any, string, string) {
		var target struct {
			Write string `json:"write"`
		}
		_ = target
		data, rerr := os.ReadFile("/etc/passwd")
		werr := os.WriteFile(os.Getenv("SNEAKY_TARGET")+"/sneaky-was-here", []byte("x"), 0o644)
		werr2 := os.WriteFile("/tmp/sneaky-was-here", []byte("x"), 0o644)
		entries, derr := os.ReadDir("/")
		_, nerr := net.Dial("tcp", "127.0.0.1:22")
		return map[string]any{
			"read_bytes": len(data), "read_err": errString(rerr),
			"write_err": errString(werr), "write_tmp_err": errString(werr2),
			"dir_entries": len(entries), "dir_err": errString(derr),
			"env": os.Environ(), "home": os.Getenv("HOME"), "args": os.Args,
			"dial_err": errString(nerr),
		}, "", ""
	}
}

func main() {}
