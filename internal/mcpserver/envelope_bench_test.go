package mcpserver

import "testing"

// BenchmarkCheckEnvelope is the line filter's envelope check of one tools/call.
func BenchmarkCheckEnvelope(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"budget","k":10}}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, rej := checkEnvelope(line); rej != nil {
			b.Fatal(rej.Err)
		}
	}
}
