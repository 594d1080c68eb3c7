package mcpserver

// Back-pressure on stdio. A client may pipeline as many requests as it likes;
// the session serves at most MaxCallsPerSession calls holding at most
// MaxArgBytesPerSession argument bytes at once (sessioncap.go). Rather than
// answering the calls beyond those bounds with an error (a client that
// pipelines is not misbehaving), the line reader stops reading stdin while the
// session is full and goes on as soon as an answer is written: the pipe's own
// buffer then holds the client back, and every request is answered in turn.
// Over HTTP a request cannot wait unread, so /mcp keeps refusing with its reason.

const (
	// stdioMaxPending is how many requests the reader lets be in flight before
	// it stops reading: the session's call bound, so a call the reader passes
	// on is never refused by it.
	stdioMaxPending = MaxCallsPerSession
	// stdioMaxPendingBytes is how many bytes of tools/call lines may be in
	// flight before it stops: one more line (at most MaxLineBytes) then stays
	// within the session's argument-byte bound.
	stdioMaxPendingBytes = MaxArgBytesPerSession - MaxLineBytes
)

// heldLines counts the bytes of the tools/call lines in flight, by id key.
type heldLines struct {
	bytes map[string]int
	total int
}

// holdBytes notes n bytes of the request key in flight. Call with c.mu held.
func (c *stdioConn) holdBytes(key string, n int) {
	if c.held.bytes == nil {
		c.held.bytes = map[string]int{}
	}
	c.held.bytes[key] += n
	c.held.total += n
}

// releaseBytes forgets the bytes of the request key, answered. Call with c.mu held.
func (c *stdioConn) releaseBytes(key string) {
	if n, ok := c.held.bytes[key]; ok {
		c.held.total -= n
		delete(c.held.bytes, key)
	}
}

// waitForRoom blocks until the session has room for one more request, the
// reader is closed or the session's context ends.
func (c *stdioConn) waitForRoom() {
	waited := false
	for {
		c.mu.Lock()
		n := 0
		for _, v := range c.pending {
			n += v
		}
		full := n >= stdioMaxPending || c.held.total > stdioMaxPendingBytes
		ch, closed := c.answered, c.closed
		c.mu.Unlock()
		if !full || closed {
			return
		}
		if !waited {
			waited = true
			c.log.Debug("mcp: session full; reading stdin again once a call is answered", "in_flight", n)
		}
		select {
		case <-ch:
		case <-c.ctx.Done():
			return
		}
	}
}
