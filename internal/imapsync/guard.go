package imapsync

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Bounds on what a server can make the client hold. go-imap (v1) allocates a
// literal's announced size at once and reads a response line's fields whole,
// so a hostile or broken server could otherwise grow this process without end
// (a 4 GB literal reached 1.5 GiB resident in 1.3 s; a 100 MB SEARCH line too).
const (
	// MaxMessageBytes is the largest message sync fetches: ingest's bound on one
	// mail message (64 MiB, internal/ingest maxMessageBytes). A larger one is
	// named and skipped by its RFC822.SIZE before its body is asked for.
	MaxMessageBytes = 64 << 20
	// maxLiteralBytes is the largest literal the connection lets through: a
	// message at the bound, with room for the response around it.
	maxLiteralBytes = MaxMessageBytes + 1<<20
	// maxLineBytes is the longest response line outside literals: a UID SEARCH
	// answer for about a million messages of seven-digit UIDs. go-imap holds a
	// line's fields as separate values, about 40 bytes each: a hostile line of
	// one-digit UIDs at 16 MiB peaked at 490–700 MiB, at 8 MiB it stays near a
	// third of a GiB. (A mailbox of more messages than that fails its UID
	// SEARCH ALL, named.)
	maxLineBytes = 8 << 20
)

// guardedConn checks the server's byte stream as it is read: a literal
// ({N} at a line's end) announced over maxLiteral, or a line (outside
// literals) longer than maxLine, fails the read, and the reason is kept for
// the caller (go-imap reports only a closed connection).
type guardedConn struct {
	net.Conn
	maxLiteral, maxLine int64

	line    int64  // bytes of the current line so far, outside literals
	tail    []byte // the line's last bytes, to read a literal's {N}
	literal int64  // bytes of a literal still to pass

	mu  sync.Mutex
	err error
	off bool // STARTTLS: the bytes from here on are TLS records, not IMAP
}

func newGuardedConn(c net.Conn) *guardedConn {
	return &guardedConn{Conn: c, maxLiteral: maxLiteralBytes, maxLine: maxLineBytes}
}

func (g *guardedConn) Read(p []byte) (int, error) {
	if err := g.failed(); err != nil {
		return 0, err
	}
	n, err := g.Conn.Read(p)
	g.mu.Lock()
	off := g.off
	g.mu.Unlock()
	if off {
		return n, err
	}
	if ferr := g.check(p[:n]); ferr != nil {
		g.mu.Lock()
		g.err = ferr
		g.mu.Unlock()
		g.Conn.Close()
		return 0, ferr
	}
	return n, err
}

// stop ends the checks (before a STARTTLS upgrade: go-imap then reads
// through TLS, above this connection).
func (g *guardedConn) stop() {
	g.mu.Lock()
	g.off = true
	g.mu.Unlock()
}

// failed is why the guard ended the connection, or nil.
func (g *guardedConn) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// check follows the stream through b.
func (g *guardedConn) check(b []byte) error {
	for i := 0; i < len(b); {
		if g.literal > 0 {
			skip := min(g.literal, int64(len(b)-i))
			g.literal -= skip
			i += int(skip)
			continue
		}
		c := b[i]
		i++
		if c == '\n' {
			if n, ok := literalAtEnd(g.tail); ok {
				if n > g.maxLiteral {
					return fmt.Errorf("the server announced a literal of %d bytes, over the bound of %d MiB for one message", n, MaxMessageBytes>>20)
				}
				g.literal = n
			}
			g.line, g.tail = 0, g.tail[:0]
			continue
		}
		g.line++
		if g.line > g.maxLine {
			return fmt.Errorf("the server sent a response line longer than %d MiB", g.maxLine>>20)
		}
		if len(g.tail) == 32 {
			copy(g.tail, g.tail[1:])
			g.tail = g.tail[:31]
		}
		g.tail = append(g.tail, c)
	}
	return nil
}

// literalAtEnd reads the {N} or {N+} a line ends with (before its CR).
func literalAtEnd(tail []byte) (int64, bool) {
	tail = bytes.TrimSuffix(tail, []byte("\r"))
	if len(tail) < 3 || tail[len(tail)-1] != '}' {
		return 0, false
	}
	open := bytes.LastIndexByte(tail, '{')
	if open < 0 {
		return 0, false
	}
	digits := bytes.TrimSuffix(tail[open+1:len(tail)-1], []byte("+"))
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil || n < 0 {
		if len(digits) > 0 && len(bytes.Trim(digits, "0123456789")) == 0 {
			return 1 << 62, true // more digits than an int64: over any bound
		}
		return 0, false
	}
	return n, true
}
