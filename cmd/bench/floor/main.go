// Command floor is the bench command's floor: the least an MCP stdio server can
// cost. With -mode sdk it is a minimal official go-sdk server with one tool
// (memory.search, answering a fixed small result); with -mode bare it is a bare Go
// process that answers every request line with a canned JSON-RPC result, without
// parsing it. The bench times both beside openhuman-core in the same run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type searchArgs struct {
	Query string `json:"query"`
	K     int    `json:"k,omitempty"`
}

type searchOut struct {
	Hits []string `json:"hits"`
}

func main() {
	mode := flag.String("mode", "sdk", "sdk (a go-sdk server with one tool) or bare (canned replies)")
	flag.Parse()
	switch *mode {
	case "bare":
		bare()
	case "sdk":
		srv := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "0"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "memory.search", Description: "floor"},
			func(_ context.Context, _ *mcp.CallToolRequest, in searchArgs) (*mcp.CallToolResult, searchOut, error) {
				return nil, searchOut{Hits: []string{in.Query}}, nil
			})
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "floor: -mode must be sdk or bare")
		os.Exit(2)
	}
}

// bare answers each line that carries an "id" with a canned result naming that id
// (the id is copied textually: the bench sends small integer ids).
func bare() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if i := bytes.Index(line, []byte(`"id":`)); i >= 0 {
			rest := line[i+5:]
			j := bytes.IndexAny(rest, ",}")
			if j > 0 {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", bytes.TrimSpace(rest[:j]))
				out.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}
