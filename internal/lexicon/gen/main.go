// Command gen compiles the WordNet database into package lexicon's embedded table.
//
//	go run ./gen -wordnet /usr/share/wordnet -out table.bin.gz
//
// The input comes from the Debian package wordnet-base; the output is deterministic.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/openhuman/openhuman-core/internal/lexicon/wnbuild"
)

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "folder with WordNet's data.*, index.* and *.exc files")
	out := flag.String("out", "table.bin.gz", "table file to write")
	flag.Parse()
	b, err := wnbuild.Build(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen: write table:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gen: wrote %s (%d bytes)\n", *out, len(b))
}
