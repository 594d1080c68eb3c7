package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/jsoncheck"
	"github.com/openhuman/openhuman-core/internal/rpcwire"
	"github.com/openhuman/openhuman-core/internal/textsafe"
)

// MaxLineBytes is the largest JSON-RPC message (one line, a batch included) the
// server accepts.
const MaxLineBytes = 1 << 20

// MaxBatch is the largest number of messages in one JSON-RPC batch (protocol
// 2025-03-26 and older), as for serve's /rpc; a longer batch is refused whole.
const MaxBatch = 100

// requestIDMetaKey is the _meta key under which the line filter hands a
// tools/call's JSON-RPC id to the tool handler (the SDK does not expose it).
const requestIDMetaKey = "openhuman-core/request_id"

// JSON-RPC error codes the line filter answers with (internal/rpcwire's).
const (
	codeParseError     = rpcwire.CodeParseError
	codeInvalidRequest = rpcwire.CodeInvalidRequest
	codeMethodNotFound = rpcwire.CodeMethodNotFound
	codeInvalidParams  = rpcwire.CodeInvalidParams
	codeInternalError  = rpcwire.CodeInternalError
)

// stdioConn sits between a byte stream and go-sdk's IOTransport. Its reader side
// passes on only well-formed JSON-RPC lines and answers everything else itself
// (keeping the session alive); its writer side sees every frame the SDK writes, so
// at EOF the reader can wait until each request it passed on has been answered.
type stdioConn struct {
	src          io.Reader
	in           *bufio.Reader
	out          io.Writer
	log          *slog.Logger
	maxLine      int
	drainTimeout time.Duration

	wmu sync.Mutex // serialises frames on out

	mu            sync.Mutex
	pending       map[string]int // canonical id -> requests passed on and not yet answered
	writing       int            // answers taken off pending whose frames are being written
	answered      chan struct{}  // closed and replaced whenever a response is written
	initForwarded bool
	initKey       string          // canonical id of the first initialize passed on
	initResult    json.RawMessage // its result, once written
	initDone      chan struct{}   // closed when initResult is known (or the first initialize failed)
	cancelled     map[string]bool // pending requests the client cancelled: their answers are not sent
	version       string          // protocol version the first initialize negotiated
	onInit        func()          // Options.OnInitialized; nil once called
	onEOF         func()          // Options.OnStdinClosed; nil once called

	fast *fastResults // tool results waiting for the frame that answers them
	held heldLines    // bytes of the tools/call lines in flight (backpressure.go)

	// The fast tools/call path (fastcall.go); srv nil: every call goes to the SDK.
	ctx   context.Context               // the session's: fast calls end with it
	srv   *Server                       // set once the SDK session exists
	ss    *mcp.ServerSession            // that session
	calls map[string]context.CancelFunc // fast calls in flight by id key
	// sessionSet is closed once Serve has set srv and ss (or decided not to):
	// the SDK may answer initialize before Serve's goroutine runs again, and a
	// call read then waits for them instead of leaving the fast path.
	sessionSet chan struct{}

	buf    []byte // the next line for the SDK
	eof    bool
	closed bool
}

func newStdioConn(src io.Reader, out io.Writer, log *slog.Logger, drainTimeout time.Duration) *stdioConn {
	return &stdioConn{
		src:          src,
		in:           bufio.NewReaderSize(src, 64<<10),
		out:          out,
		log:          log,
		maxLine:      MaxLineBytes,
		drainTimeout: drainTimeout,
		pending:      map[string]int{},
		cancelled:    map[string]bool{},
		answered:     make(chan struct{}),
		initDone:     make(chan struct{}),
		fast:         newFastResults(),
		ctx:          context.Background(),
		calls:        map[string]context.CancelFunc{},
		sessionSet:   make(chan struct{}),
	}
}

// reader is the io.ReadCloser handed to the SDK.
func (c *stdioConn) reader() io.ReadCloser { return connReader{c} }

// writer is the io.WriteCloser handed to the SDK.
func (c *stdioConn) writer() io.WriteCloser { return connWriter{c} }

type connReader struct{ c *stdioConn }

func (r connReader) Read(p []byte) (int, error) { return r.c.read(p) }
func (r connReader) Close() error {
	r.c.mu.Lock()
	r.c.closed = true
	r.c.mu.Unlock()
	if cl, ok := r.c.src.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

type connWriter struct{ c *stdioConn }

func (w connWriter) Write(p []byte) (int, error) { return w.c.writeFromSDK(p) }
func (w connWriter) Close() error                { return nil }

// read serves the SDK one validated line at a time. At EOF it first waits until
// every request passed on has been answered (bounded by drainTimeout).
func (c *stdioConn) read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.eof {
			if f := c.onEOF; f != nil {
				c.onEOF = nil
				f()
			}
			c.drain()
			return 0, io.EOF
		}
		c.waitForRoom() // backpressure.go: a full session is not read from
		line, size, err := c.readLine()
		if size > c.maxLine {
			c.log.Warn("mcp: rejected an oversized message", "bytes", size)
			// Answered with the request's id when its head names one, so that
			// the client waiting for it is not left waiting.
			c.writeError(leadingID(line), rpcwire.Errorf(codeInvalidRequest, "request of %d bytes exceeds the %d-byte limit", size, c.maxLine))
		} else if len(bytes.TrimSpace(line)) > 0 {
			c.buf = c.filter(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.log.Warn("mcp: reading stdin failed; finishing the requests already read", "err", err)
			}
			c.eof = true
		}
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// drain blocks until no request passed on is still unanswered, or drainTimeout.
func (c *stdioConn) drain() {
	deadline := time.NewTimer(c.drainTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n := c.writing
		for _, v := range c.pending {
			n += v
		}
		ch := c.answered
		closed := c.closed
		c.mu.Unlock()
		if n == 0 || closed {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			c.log.Warn("mcp: stdin closed and some requests are still unanswered; giving up on them", "unanswered", n, "waited", c.drainTimeout)
			return
		}
	}
}

// readLine returns the next line without its newline. A line longer than maxLine
// is read to its end without being kept: line is nil and size tells its length.
func (c *stdioConn) readLine() (line []byte, size int, err error) {
	var acc, head []byte
	for {
		chunk, err := c.in.ReadSlice('\n')
		if len(head) < oversizedHead {
			head = append(head, chunk[:min(len(chunk), oversizedHead-len(head))]...)
		}
		size += len(chunk)
		if size <= c.maxLine+1 { // +1: the newline itself
			acc = append(acc, chunk...)
		} else {
			acc = nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			size--
		}
		if size > c.maxLine {
			return head, size, err
		}
		return bytes.TrimRight(acc, "\r\n"), size, err
	}
}

// oversizedHead is how much of an oversized line is kept to find its id.
const oversizedHead = 4 << 10

// leadingID is the id of a request whose line was cut at head, when the id
// comes before anything longer (as every client writes it: jsonrpc, id,
// method, params); nil when it does not, or is not a string or number of at
// most 256 bytes.
func leadingID(head []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			if len(v) == 0 || len(v) > 256 || !(v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
				return nil
			}
			return v
		}
	}
	return nil
}

// filter validates one line. It returns the bytes to pass to the SDK (a compact
// line ending in "\n"), or nil after answering the line itself.
func (c *stdioConn) filter(line []byte) []byte {
	line = bytes.TrimSpace(line)
	if perr := rpcwire.CheckJSON(line); perr != nil {
		c.log.Warn("mcp: rejected a message that is not JSON", "reason", perr.Data)
		c.writeError(nil, perr)
		return nil
	}
	if line[0] == '[' {
		return c.filterBatch(line)
	}
	m, rej := checkEnvelope(line)
	switch {
	case rej != nil:
		if !rej.Silent {
			c.log.Warn("mcp: rejected a message", "reason", rej.Err.Data)
			c.writeError(rej.ID, rej.Err)
		} else {
			c.log.Warn("mcp: ignored a notification", "reason", rej.Err.Data)
		}
		return nil
	case m.Kind == rpcwire.KindResponse:
		return compactLine(line) // a response to a server-initiated request
	case m.Kind == rpcwire.KindNotification:
		if m.Method == "notifications/cancelled" {
			c.noteCancel(m.Members["params"])
		}
		return compactLine(line) // never answered
	}
	key := m.Key

	c.mu.Lock()
	initForwarded, initDone := c.initForwarded, c.initDone
	busy := c.pending[key] > 0
	c.mu.Unlock()
	if busy {
		// The SDK would run both and answer once (the client could not tell the
		// answers apart anyway); the second gets an error of its own right away.
		c.log.Warn("mcp: rejected a request whose id is still in flight", "id", string(m.ID), "method", m.Method)
		c.writeError(m.ID, rpcwire.Errorf(codeInvalidRequest, "duplicate request id %s is still in flight: use a new id for each request", m.ID))
		return nil
	}
	switch m.Method {
	case "initialize":
		if p, ok := m.Members["params"]; !ok || string(p) == "null" {
			c.writeError(m.ID, rpcwire.Errorf(codeInvalidParams, "initialize params must be an object with protocolVersion, capabilities and clientInfo"))
			return nil
		}
		if initForwarded {
			// A later initialize never changes the session: answer it with the
			// first one's result (provenance stays as the first one fixed it).
			select {
			case <-initDone:
			case <-time.After(5 * time.Second):
			}
			c.mu.Lock()
			res := c.initResult
			c.mu.Unlock()
			if res == nil {
				c.writeError(m.ID, rpcwire.Errorf(codeInvalidRequest, "the session's first initialize failed; start a new session"))
				return nil
			}
			c.log.Debug("mcp: answered a repeated initialize with the session's first result", "id", string(m.ID))
			c.writeResult(m.ID, res)
			return nil
		}
		c.mu.Lock()
		c.initForwarded, c.initKey = true, key
		c.mu.Unlock()
	case "ping":
	case "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list":
		if !initForwarded {
			c.writeError(m.ID, rpcwire.Errorf(codeInvalidRequest, "%s before initialize: send initialize first", m.Method))
			return nil
		}
	default:
		if strings.HasPrefix(m.Method, "notifications/") {
			c.writeError(m.ID, rpcwire.Errorf(codeInvalidRequest, "%s is a notification: send it without an id", clip(m.Method)))
			return nil
		}
		c.log.Debug("mcp: method not found", "id", string(m.ID), "method", clip(m.Method))
		c.writeError(m.ID, rpcwire.Errorf(codeMethodNotFound, "%s", methodNotFound(m.Method)))
		return nil
	}
	if m.Method == "tools/call" && c.tryFastCall(m, key) {
		return nil
	}
	out := line
	if m.Method == "tools/call" {
		out = injectRequestID(m.Members, key)
	}
	c.mu.Lock()
	c.pending[key]++
	if m.Method == "tools/call" {
		c.holdBytes(key, len(out))
	}
	c.mu.Unlock()
	c.log.Debug("mcp: request", "id", string(m.ID), "method", m.Method)
	return compactLine(out)
}

// servedMethods are the requests this server answers: it declares the tools
// and resources capabilities (no subscriptions), so prompts/*, logging/*,
// completion/* and resources/subscribe are not found (the SDK would answer
// some of them with empty lists).
var servedMethods = map[string]bool{"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true}

func methodNotFound(method string) string {
	return fmt.Sprintf("method %q not found: this server offers only tools and resources (initialize, ping, tools/list, tools/call, resources/list, resources/read, resources/templates/list)", clip(method))
}

// clip shortens a client-chosen name for messages and logs.
func clip(s string) string { return textsafe.String(rpcwire.Clip(s)) }

// checkEnvelope validates one JSON object as a JSON-RPC 2.0 message the SDK can
// take without ending the session: rpcwire's envelope (shared with serve's
// /rpc), then MCP's own rule that params are always an object.
func checkEnvelope(line []byte) (rpcwire.Msg, *rpcwire.Rejection) {
	m, rej := rpcwire.Decode(line, rpcwire.AllowResponses)
	if rej != nil || m.Kind == rpcwire.KindResponse {
		return m, rej
	}
	if perr := rpcwire.ObjectParams(m.Method, m.Params); perr != nil {
		return m, &rpcwire.Rejection{ID: m.ID, Err: perr, Silent: m.Kind == rpcwire.KindNotification}
	}
	return m, nil
}

// filterBatch passes a JSON-RPC batch to the SDK when the session negotiated a
// protocol version that has batches (before 2025-06-18) and every element is a
// message the SDK can take; otherwise it answers the batch with one error.
func (c *stdioConn) filterBatch(line []byte) []byte {
	reject := func(data string) []byte {
		c.log.Warn("mcp: rejected a JSON-RPC batch", "reason", data)
		c.writeError(nil, rpcwire.Errorf(codeInvalidRequest, "%s", data))
		return nil
	}
	if rpcwire.EmptyBatch(line) { // refused in every protocol version, as by /rpc
		e := rpcwire.EmptyBatchError()
		c.log.Warn("mcp: rejected a JSON-RPC batch", "reason", e.Data)
		c.writeError(nil, e)
		return nil
	}
	c.mu.Lock()
	version, initialized := c.version, c.initResult != nil
	c.mu.Unlock()
	if !initialized {
		return reject("a JSON-RPC batch before initialize is not allowed: send initialize on its own line first")
	}
	if version >= "2025-06-18" {
		return reject(fmt.Sprintf("this session speaks MCP %s, which has no JSON-RPC batches (removed in 2025-06-18); send one message per line", version))
	}
	// The line is at most MaxLineBytes (readLine); the count is checked while
	// splitting, so nothing of an oversized batch is kept or run.
	elems, perr := rpcwire.SplitBatch(line, MaxBatch)
	if perr != nil {
		return reject(perr.Data)
	}
	out := make([]json.RawMessage, 0, len(elems))
	var notes []byte // notifications, passed on as lines of their own (see below)
	var keys []string
	seen := map[string]bool{}
	for i, e := range elems {
		e = bytes.TrimSpace(e)
		m, rej := checkEnvelope(e)
		key, kind := m.Key, m.Kind
		switch {
		case rej != nil:
			return reject(fmt.Sprintf("batch element %d: %s", i, rej.Err.Data))
		case kind == rpcwire.KindRequest && m.Method == "initialize":
			return reject(fmt.Sprintf("batch element %d: initialize must not be part of a batch", i))
		case kind == rpcwire.KindRequest && !servedMethods[m.Method]:
			return reject(fmt.Sprintf("batch element %d: %s", i, methodNotFound(m.Method)))
		case kind == rpcwire.KindRequest || kind == rpcwire.KindResponse:
			c.mu.Lock()
			busy := c.pending[key] > 0
			c.mu.Unlock()
			if seen[key] || busy {
				return reject(fmt.Sprintf("batch element %d: id %s is already in use", i, m.ID))
			}
			seen[key] = true
		}
		switch {
		case kind == rpcwire.KindRequest && m.Method == "tools/call":
			e = injectRequestID(m.Members, key)
		case kind == rpcwire.KindNotification && m.Method == "notifications/cancelled":
			c.noteCancel(m.Members["params"])
		}
		if kind == rpcwire.KindNotification {
			// go-sdk v1.8.0 counts a notification inside a batch as a request
			// awaiting an answer, so such a batch is never answered: send
			// notifications separately (JSON-RPC leaves the order open).
			notes = append(notes, compactLine(e)...)
			continue
		}
		if kind == rpcwire.KindRequest {
			keys = append(keys, key)
		}
		out = append(out, e)
	}
	c.mu.Lock()
	for _, k := range keys {
		c.pending[k]++
	}
	c.mu.Unlock()
	c.log.Debug("mcp: batch", "messages", len(elems), "requests", len(keys))
	if len(out) == 0 {
		return notes
	}
	return append(notes, compactLine(mustMarshal(out))...)
}

// noteCancel remembers a cancelled pending request: MCP says its answer is not
// sent (the SDK would send one). The SDK still cancels the call's context.
func (c *stdioConn) noteCancel(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	key, err := canonicalID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	if c.pending[key] > 0 {
		c.cancelled[key] = true
	}
	if cancel := c.calls[key]; cancel != nil {
		cancel() // a fast call (fastcall.go); the SDK cancels its own
	}
	c.mu.Unlock()
}

// canonicalID maps a JSON-RPC id to the key the SDK's answer will carry:
// "s:<string>" or "n:<integer>".
func canonicalID(raw json.RawMessage) (string, error) {
	return rpcwire.CanonicalID(raw) // serve's /rpc applies the same rule
}

// idLabel is the request id as the tool module and audit log see it.
func idLabel(key string) string {
	if len(key) >= 2 {
		return key[2:]
	}
	return key
}

// injectRequestID adds the canonical id to params._meta so the tool handler can
// name the request in the module call and the audit log.
func injectRequestID(raw map[string]json.RawMessage, key string) []byte {
	params := map[string]json.RawMessage{}
	if p, ok := raw["params"]; ok && string(p) != "null" {
		if err := json.Unmarshal(p, &params); err != nil {
			return mustMarshal(raw)
		}
	}
	meta := map[string]json.RawMessage{}
	if mr, ok := params["_meta"]; ok && len(mr) > 0 && mr[0] == '{' {
		if err := json.Unmarshal(mr, &meta); err != nil {
			meta = map[string]json.RawMessage{}
		}
	}
	meta[requestIDMetaKey] = mustMarshal(idLabel(key))
	params["_meta"] = mustMarshal(meta)
	out := make(map[string]json.RawMessage, len(raw))
	for k, v := range raw {
		out[k] = v
	}
	out["params"] = mustMarshal(params)
	return mustMarshal(out)
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: marshal %T: %v", v, err)) // only called on decoded JSON
	}
	return b
}

func compactLine(b []byte) []byte {
	if valid, compact := jsoncheck.Check(b); valid && compact {
		return append(append(make([]byte, 0, len(b)+1), b...), '\n')
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return append(append([]byte(nil), b...), '\n')
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// wireError is the error member of a response (internal/rpcwire's).
type wireError = rpcwire.Error

// writeError answers a message the SDK never sees. id nil is written as null.
func (c *stdioConn) writeError(id json.RawMessage, e *rpcwire.Error) {
	c.writeLine(rpcwire.AppendErrorResponse(nil, id, e))
}

func (c *stdioConn) writeResult(id json.RawMessage, result json.RawMessage) {
	line := mustMarshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{"2.0", id, result})
	c.writeLine(line)
}

func (c *stdioConn) writeLine(line []byte) {
	line = bytes.TrimRight(line, "\n")
	if !utf8.Valid(line) {
		// Never write invalid UTF-8: strict clients drop the session. In valid JSON
		// non-ASCII bytes only occur inside strings, so the repair keeps it JSON.
		c.log.Warn("mcp: an outgoing frame held invalid UTF-8; replaced with U+FFFD")
		line = repairUTF8(line)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.out.Write(append(line, '\n')); err != nil {
		c.log.Warn("mcp: writing to stdout failed", "err", err)
	}
}

// writeFilled writes a frame whose tool results were put in by fastResults.fill:
// only the SDK's own part of it (sdkFrame) needs the UTF-8 check, the results
// are valid UTF-8 already (shape) and escaping keeps them so.
func (c *stdioConn) writeFilled(sdkFrame, filled []byte) {
	if !utf8.Valid(sdkFrame) {
		c.writeLine(filled)
		return
	}
	filled = append(filled, '\n')
	c.wmu.Lock()
	_, err := c.out.Write(filled)
	c.wmu.Unlock()
	if err != nil {
		c.log.Warn("mcp: writing to stdout failed", "err", err)
	}
	putFrameBuf(filled) // Write does not keep it (io.Writer)
}

// repairUTF8 replaces each byte that does not start a valid UTF-8 sequence with
// U+FFFD, as encoding/json does for Go strings (so a repaired result reads the
// same as any other string the SDK encodes).
func repairUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// outgoing is what the writer needs from a frame the SDK writes.
type outgoing struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error"`
}

// writeFromSDK writes one frame from the SDK, noting which requests it answers.
// Errors are cleaned first (cleanSDKError).
func (c *stdioConn) writeFromSDK(p []byte) (int, error) {
	frame := bytes.TrimSpace(p)
	var answered []string
	if key, ok := c.resultKey(frame); ok {
		answered = append(answered, key)
	} else if len(frame) > 0 && frame[0] == '{' {
		var o outgoing
		if err := json.Unmarshal(frame, &o); err == nil && o.Method == nil && o.ID != nil {
			if key, err := canonicalID(o.ID); err == nil {
				answered = append(answered, key)
				c.noteInitAnswer(key, o.Result)
			}
			if o.Error != nil {
				if e, changed := c.cleanSDKError(o.Error.Code, o.Error.Message, o.Error.Data); changed {
					frame = replaceError(frame, e)
				}
			}
		}
	} else if len(frame) > 0 && frame[0] == '[' {
		var batch []outgoing
		if err := json.Unmarshal(frame, &batch); err == nil {
			var elems []json.RawMessage
			rewrite := false
			if json.Unmarshal(frame, &elems) != nil || len(elems) != len(batch) {
				elems = nil
			}
			for i, o := range batch {
				if key, err := canonicalID(o.ID); err == nil && o.Method == nil {
					answered = append(answered, key)
				}
				if o.Error != nil && elems != nil {
					if e, changed := c.cleanSDKError(o.Error.Code, o.Error.Message, o.Error.Data); changed {
						elems[i], rewrite = replaceError(elems[i], e), true
					}
				}
			}
			if rewrite {
				frame = mustMarshal(elems)
			}
		}
	}
	// The ids are freed before the frame is written, so a client that reuses an id
	// as soon as it reads the answer is not told the id is still in flight; until
	// the frame is out they count as writing, which the EOF drain waits for too.
	suppress, moved := false, 0
	c.mu.Lock()
	if len(answered) == 1 && frame[0] == '{' && c.cancelled[answered[0]] {
		delete(c.cancelled, answered[0])
		suppress = true
	}
	for _, k := range answered {
		if c.pending[k] > 0 {
			c.pending[k]--
			if c.pending[k] == 0 {
				delete(c.pending, k)
				c.releaseBytes(k)
			}
			moved++
		}
	}
	c.writing += moved
	c.mu.Unlock()
	if suppress {
		c.fast.forget(frame)
		c.log.Debug("mcp: answer to a cancelled request not sent", "id", idLabel(answered[0]))
	} else if filled, ok := c.fast.fill(frame); ok {
		c.writeFilled(frame, filled)
	} else {
		c.writeLine(frame)
	}
	c.mu.Lock()
	onInit := c.onInit
	if c.initResult == nil {
		onInit = nil
	} else {
		c.onInit = nil
	}
	c.mu.Unlock()
	if onInit != nil {
		onInit()
	}
	if len(answered) > 0 {
		c.mu.Lock()
		c.writing -= moved
		close(c.answered)
		c.answered = make(chan struct{})
		c.mu.Unlock()
	}
	return len(p), nil
}

// resultPrefix starts every response with a result the SDK writes: its wire
// struct encodes jsonrpc, id, method, params, result, error in that order, with
// the empty ones omitted.
const resultPrefix = `{"jsonrpc":"2.0","id":`

// resultKey reads the id of a frame that is a response carrying a result, from
// its head alone: `{"jsonrpc":"2.0","id":ID,"result":`. A tool result is most of
// the frame (its JSON twice, as text and as structuredContent), and decoding it
// whole to learn the id cost a fifth of the MCP layer's time per call. Anything
// else (errors, requests, batches, and the session's first initialize answer,
// whose result is kept) is left to the full decode (ok false).
func (c *stdioConn) resultKey(frame []byte) (string, bool) {
	if !bytes.HasPrefix(frame, []byte(resultPrefix)) {
		return "", false
	}
	rest := frame[len(resultPrefix):]
	n := 0
	if len(rest) > 0 && rest[0] == '"' {
		n = 1
		for n < len(rest) && rest[n] != '"' {
			if rest[n] == '\\' {
				n++
			}
			n++
		}
		n++ // the closing quote
	} else {
		for n < len(rest) && (rest[n] == '-' || rest[n] >= '0' && rest[n] <= '9') {
			n++
		}
	}
	if n == 0 || n > len(rest) || !bytes.HasPrefix(rest[n:], []byte(`,"result":`)) {
		return "", false
	}
	key, err := canonicalID(rest[:n])
	if err != nil {
		return "", false
	}
	c.mu.Lock()
	initPending := key == c.initKey && c.initResult == nil
	c.mu.Unlock()
	if initPending {
		return "", false
	}
	return key, true
}

func (c *stdioConn) noteInitAnswer(key string, result json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if key != c.initKey || c.initKey == "" || c.initResult != nil {
		return
	}
	select {
	case <-c.initDone:
		return
	default:
	}
	if len(result) > 0 && string(result) != "null" {
		c.initResult = append(json.RawMessage(nil), result...)
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(result, &r) == nil {
			c.version = r.ProtocolVersion
		}
	} else {
		// The first initialize failed: let a later one through to the SDK.
		c.initForwarded = false
		c.initKey = ""
		close(c.initDone)
		c.initDone = make(chan struct{})
		return
	}
	close(c.initDone)
}

// cleanSDKError rewrites an error the SDK answered with, when it must not reach
// the client as it is: code 0 (the SDK's code for some parameter failures)
// becomes a JSON-RPC code; an unmarshalling error, which quotes the raw request,
// is reworded without it; an internal error is replaced by a short message with
// an error id, under which the log keeps the detail.
func (c *stdioConn) cleanSDKError(code int, message string, data json.RawMessage) (wireError, bool) {
	e := wireError{Code: code, Message: message}
	if len(data) > 0 {
		var d string
		if json.Unmarshal(data, &d) == nil {
			e.Data = d
		}
	}
	changed := false
	if code == 0 {
		e.Code, e.Message, e.Data, changed = codeInternalError, "Internal error", message, true
		if strings.Contains(message, "unmarshal") || strings.Contains(message, "params") {
			e.Code, e.Message = codeInvalidParams, "Invalid params"
		}
	}
	text := e.Message + " " + e.Data
	switch {
	case strings.Contains(text, "unmarshal"):
		e.Message, e.Data, changed = "Invalid params", describeUnmarshal(text), true
		if e.Code == codeInternalError {
			e.Code = codeInvalidParams
		}
	case e.Code == codeInternalError:
		id := audit.NewErrorID()
		c.log.Warn("mcp: internal error answered to the client", "error_id", id, "err", strings.TrimSpace(text))
		e.Message, e.Data, changed = "Internal error", fmt.Sprintf("internal error (error id %s); the openhuman-core log has the details", id), true
	}
	return e, changed
}

// replaceError puts e in place of the "error" member of one response object.
func replaceError(frame []byte, e wireError) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(frame, &m); err != nil {
		return frame
	}
	m["error"] = mustMarshal(e)
	return mustMarshal(m)
}

// The patterns of describeUnmarshal compile on first use (a malformed request):
// their counted repetitions made them 0.3 ms of every process's package init.
var (
	reHandling    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`handling '([^']{1,64})'`) })
	reStructField = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`Go struct field ([A-Za-z0-9_.]{1,200}) of type ([][*A-Za-z0-9_.{} ]{1,100})`)
	})
)

// describeUnmarshal says what was wrong with a request's params from the SDK's
// unmarshalling error ("handling 'tools/call': invalid params: unmarshaling
// "<raw params>" into a *mcp.CallToolParamsRaw: json: cannot unmarshal "5}"
// into Go struct field mcp.CallToolParamsRaw.name of type string") without
// repeating any of the request's bytes.
func describeUnmarshal(msg string) string {
	method := "the request's"
	if m := reHandling().FindStringSubmatch(msg); m != nil {
		method = m[1]
	}
	f := reStructField().FindStringSubmatch(msg)
	if f == nil {
		return fmt.Sprintf("%s params do not have the shape MCP defines for this method", method)
	}
	path := strings.Split(strings.TrimPrefix(f[1], "mcp."), ".")
	field := strings.Join(path[1:], ".")
	if field == "" {
		return fmt.Sprintf("%s params must be %s", method, goTypeKind(f[2]))
	}
	return fmt.Sprintf("%s params: %s must be %s", method, field, goTypeKind(f[2]))
}

// goTypeKind names the JSON kind a Go type decodes from.
func goTypeKind(t string) string {
	t = strings.TrimLeft(strings.TrimSpace(t), "*")
	switch {
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	case t == "interface {}" || t == "any" || strings.HasSuffix(t, "RawMessage"):
		return "a JSON value"
	default:
		return "an object"
	}
}
