package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// resultDispatcher answers every call with one fixed result, the shape and size of
// a 10-hit memory.search (snippets, and each hit's messages with their text).
type resultDispatcher struct {
	tools  []runtime.Tool
	result json.RawMessage
}

func (d *resultDispatcher) Tools() []runtime.Tool { return d.tools }
func (d *resultDispatcher) Call(_ context.Context, _ runtime.Call) (*runtime.Outcome, error) {
	return &runtime.Outcome{Result: d.result, ModuleSHA256: "sha"}, nil
}

func searchResult(hits int) json.RawMessage {
	r := abi.SearchResult{}
	for i := 0; i < hits; i++ {
		r.Chunks = append(r.Chunks, abi.ChunkHit{
			ID: fmt.Sprintf("%032x", i), SourceKind: "email", SourceID: "email:thread-" + fmt.Sprint(i),
			Snippet: strings.Repeat("the quarterly budget review \"draft\" was moved to Thursday; ", 6),
			Score:   float64(hits - i), TimestampMS: 1780978494000,
			Messages: []abi.HitMessage{
				{Ref: fmt.Sprintf("m%06d@bench.example", i), Author: "Pavel Garcia <pavel.garcia@bench.example>", Time: "2025-12-21T06:14:54Z", TimePrecision: "ms",
					Text: strings.Repeat("Hi Keiko,\n\nthe budget review moved to Thursday & the \"draft\" is ready.\n", 16), Truncated: true},
				{Ref: fmt.Sprintf("m%06d@bench.example", i+1), Author: "Greta Costa <greta.costa@bench.example>", Time: "2025-12-22T18:58:54Z", TimePrecision: "ms",
					Text: strings.Repeat("Thanks — I will bring the invoice totals.\n", 8)},
			},
		})
	}
	b, _ := json.Marshal(r)
	return b
}

// BenchmarkToolCall times one tools/call round trip through the MCP layer (line
// filter, go-sdk, result shaping, audit) over pipes, with a dispatcher that answers
// at once: what the server adds to the read API and the sandbox. "fast" is the
// server as it runs, "sdk-request" with the go-sdk decoding the request
// (Options.NoFastCalls), "sdk" with the go-sdk also encoding the result.
func BenchmarkToolCall(b *testing.B) {
	b.Run("fast", func(b *testing.B) { benchToolCall(b, false, false) })
	b.Run("sdk-request", func(b *testing.B) { benchToolCall(b, false, true) })
	b.Run("sdk", func(b *testing.B) { benchToolCall(b, true, true) })
}

func benchToolCall(b *testing.B, noFast, noFastCalls bool) {
	d := &resultDispatcher{result: searchResult(10)}
	f := newFake()
	d.tools = f.tools
	s, err := New(Options{Dispatcher: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoFastResults: noFast, NoFastCalls: noFastCalls})
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go s.Serve(context.Background(), inR, outW)
	out := bufio.NewReaderSize(outR, 1<<20)
	send := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
	if _, err := out.ReadBytes('\n'); err != nil {
		b.Fatal(err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.SetBytes(int64(len(d.result)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"budget","k":10}}}`, i+2))
		line, err := out.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 && !strings.Contains(string(line), `"structuredContent"`) {
			b.Fatalf("unexpected answer %s", line)
		}
	}
	b.StopTimer()
	inW.Close()
}
