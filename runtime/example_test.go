package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

// Example runs the embedded first-party memory module (which serves memory.search
// and the five other memory tools) in its sandbox over a one-message store: load,
// wait for the compile, call memory.search, read the result.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "openhuman-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	// A store with one e-mail, opened read-only as the MCP server does.
	path := filepath.Join(dir, "chunks.db")
	w, err := memtree.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = w.Ingest(ctx, memtree.SourceInput{Kind: memtree.KindEmail, SourceID: "email:budget@corp.example", Title: "Budget", Provider: "eml",
		Messages: []memtree.MessageInput{{Ref: "budget@corp.example", Author: "Alice", AuthorAddr: "alice@corp.example", Subject: "Budget",
			TimestampMS: 1767600000000, Text: "The quarterly budget review is on Thursday."}}})
	w.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := memtree.OpenReadOnly(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	mod, err := toolswasm.Get("memory.search")
	if err != nil {
		fmt.Println(err)
		return
	}
	host, err := runtime.New(ctx, runtime.Options{
		Reader:   memory.Default(store),
		Builtins: []runtime.BuiltinModule{{Name: mod.Name + ".wasm", SHA256: mod.SHA256, Wasm: mod.Wasm}},
		CacheDir: filepath.Join(dir, "wazero"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close(ctx)
	for _, t := range host.Tools() { // answered from the manifest, before compiling
		fmt.Println("tool:", t.Name, t.Module.Capabilities)
	}

	out, err := host.Call(ctx, runtime.Call{Tool: "memory.search", Arguments: json.RawMessage(`{"query":"budget","k":5}`), Client: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	var res abi.SearchResult
	if err := json.Unmarshal(out.Result, &res); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("hits:", len(res.Chunks), "from", res.Chunks[0].SourceID)
	fmt.Println("host calls:", out.Usage.HostCalls)
	// Output:
	// tool: memory.search [memory.read]
	// tool: memory.recall [memory.read]
	// tool: tree.read_chunk [memory.read]
	// tool: tree.browse [memory.read]
	// tool: tree.top_entities [memory.read]
	// tool: tree.list_sources [memory.read]
	// hits: 1 from email:budget@corp.example
	// host calls: map[memory_search:1]
}
