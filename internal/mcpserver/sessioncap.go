package mcpserver

import (
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What one session may have in flight (issue 29, finding 13: 2,000 pipelined
// calls with 400 KB arguments held 1.45 GB). A call beyond either bound is
// answered at once with a JSON-RPC error (CodeSessionBusy) and its arguments
// are dropped; calls already in flight are not affected.
const (
	// MaxCallsPerSession bounds the tools/call requests of one session being
	// served at once (waiting for a sandbox included): 4× the live sandboxes.
	MaxCallsPerSession = 32
	// MaxArgBytesPerSession bounds the argument bytes those calls hold.
	MaxArgBytesPerSession = 16 << 20
	// CodeSessionBusy is the JSON-RPC error code of a call refused by them
	// (in the implementation-defined server error range).
	CodeSessionBusy = -32001
)

// sessionLoads counts each session's calls in flight and their argument bytes.
type sessionLoads struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]*sessionLoad
}

type sessionLoad struct {
	calls int
	bytes int64
}

// admit reserves one call of n argument bytes for ss, or returns the error to
// answer with. release undoes a successful admit.
func (l *sessionLoads) admit(ss *mcp.ServerSession, n int) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[*mcp.ServerSession]*sessionLoad{}
	}
	ld := l.m[ss]
	if ld == nil {
		ld = &sessionLoad{}
		l.m[ss] = ld
	}
	switch {
	case ld.calls >= MaxCallsPerSession:
		return nil, &jsonrpc.Error{Code: CodeSessionBusy, Message: fmt.Sprintf("too many tool calls in flight on this session (%d, the limit); wait for answers before sending more", ld.calls)}
	case ld.bytes+int64(n) > MaxArgBytesPerSession:
		return nil, &jsonrpc.Error{Code: CodeSessionBusy, Message: fmt.Sprintf("the tool calls in flight on this session hold %d bytes of arguments and this one %d more, over the %d-byte limit; wait for answers before sending more", ld.bytes, n, MaxArgBytesPerSession)}
	}
	ld.calls++
	ld.bytes += int64(n)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		ld.calls--
		ld.bytes -= int64(n)
		if ld.calls == 0 {
			delete(l.m, ss)
		}
	}, nil
}
