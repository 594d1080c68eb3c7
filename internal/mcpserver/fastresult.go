package mcpserver

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"unicode/utf8"
)

// A tool result goes to the wire without the SDK encoding it.
//
// The go-sdk encodes a CallToolResult by marshalling it and then compacting the
// encoding twice more (the result into a RawMessage, the response around it): for
// a result that is already compact JSON that is four scans of it and its copy as a
// text block, ≈ 70 % of the MCP layer's CPU for a 10-hit memory.search with its
// messages. So the handler hands the SDK a result with two short placeholders (the
// text block and structuredContent) and keeps the real bytes here; when the SDK
// writes the response frame, the session's writer puts the result in the
// placeholders' places, encoded exactly as the SDK would have encoded it (the text
// as encoding/json writes a string, with HTML escaping; structuredContent as
// encoding/json compacts a RawMessage inside json.Marshal, with HTML escaping).
// Everything else in the frame (jsonrpc, id, resultType, key order) is the SDK's
// own. TestFastResultFramesMatchTheSDK checks that both paths write the same bytes.

// fastResults holds the results of one session's calls from the handler to the
// frame that answers them.
type fastResults struct {
	prefix string // `oh-result-<random>-`: a placeholder is prefix + sequence number

	mu      sync.Mutex
	seq     uint64
	pending map[string][]byte // placeholder -> compact JSON object, valid UTF-8
}

func newFastResults() *fastResults {
	var nonce [12]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand panics rather than return an error)
	return &fastResults{prefix: "oh-result-" + hex.EncodeToString(nonce[:]) + "-", pending: map[string][]byte{}}
}

// put keeps result and returns its placeholder.
func (f *fastResults) put(result []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	token := f.prefix + strconv.FormatUint(f.seq, 10)
	f.pending[token] = result
	return token
}

// take returns and forgets the result of token.
func (f *fastResults) take(token string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.pending[token]
	if ok {
		delete(f.pending, token)
	}
	return r, ok
}

// tokens returns the placeholders in frame, in order (each quoted string that
// starts with the prefix).
func (f *fastResults) tokens(frame []byte) []string {
	var out []string
	pat := []byte(`"` + f.prefix)
	for rest := frame; ; {
		i := bytes.Index(rest, pat)
		if i < 0 {
			return out
		}
		rest = rest[i+1:]
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return out
		}
		out = append(out, string(rest[:end]))
		rest = rest[end+1:]
	}
}

// forget drops the results whose placeholders are in frame (a frame not written).
func (f *fastResults) forget(frame []byte) {
	for _, t := range f.tokens(frame) {
		f.take(t)
	}
}

// structuredKey precedes the structuredContent placeholder in the SDK's frame.
const structuredKey = `"structuredContent":`

// fill returns frame with each placeholder replaced by its result: as a JSON
// string after any key but structuredContent, as the object itself after it. A
// placeholder whose result is gone (cannot happen: each is written once) is left
// as it is. ok is false when frame holds no placeholder.
func (f *fastResults) fill(frame []byte) (out []byte, ok bool) {
	toks := f.tokens(frame)
	if len(toks) == 0 {
		return frame, false
	}
	results := make(map[string][]byte, len(toks))
	size := len(frame)
	for _, t := range toks {
		if _, seen := results[t]; seen {
			continue
		}
		if r, found := f.take(t); found {
			results[t] = r
			size += 2*len(r) + len(r)/8 + 16 // the text (escaped) and the object
		}
	}
	out = getFrameBuf(size + 1) // + the newline writeFilled adds
	rest := frame
	for _, t := range toks {
		quoted := `"` + t + `"`
		i := bytes.Index(rest, []byte(quoted))
		if i < 0 { // cannot happen: tokens found it
			break
		}
		out = append(out, rest[:i]...)
		r, found := results[t]
		switch {
		case !found:
			out = append(out, quoted...)
		case bytes.HasSuffix(out, []byte(structuredKey)):
			out = appendHTMLEscaped(out, r)
		default:
			out = appendJSONString(out, r)
		}
		rest = rest[i+len(quoted):]
	}
	return append(out, rest...), true
}

// frameBufs recycles the buffers frames are built in (a 10-hit search's frame
// is ≈ 30–60 KB; allocating it zeroed each time was a tenth of the layer's CPU).
var frameBufs sync.Pool

// maxPooledFrame is the largest buffer kept for reuse.
const maxPooledFrame = 1 << 20

func getFrameBuf(n int) []byte {
	if p, ok := frameBufs.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, max(n, 16<<10))
}

func putFrameBuf(b []byte) {
	if cap(b) <= maxPooledFrame {
		b = b[:0]
		frameBufs.Put(&b)
	}
}

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes encoding/json writes in a string as they are
// when it escapes HTML: everything from space up but `"`, `\`, `<`, `>` and `&`.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

// appendJSONString appends s as encoding/json encodes a string with HTML escaping
// (json.Marshal's default): `"` and `\` escaped with a backslash, \b \f \n \r \t by
// name, other control bytes and `<` `>` `&` as \u00XX, U+2028 and U+2029 as \u202X,
// and each byte that does not start a valid UTF-8 sequence as \ufffd.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRune(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendHTMLEscaped appends the compact JSON value v as encoding/json writes a
// RawMessage inside json.Marshal: `<` `>` `&` as \u00XX and U+2028 and U+2029 as
// \u202X (in valid JSON they occur only inside strings), the rest unchanged.
func appendHTMLEscaped(dst, v []byte) []byte {
	start := 0
	for i, b := range v {
		switch {
		case b == '<' || b == '>' || b == '&':
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			start = i + 1
		case b == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && v[i+2]&^1 == 0xA8:
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[v[i+2]&0xF])
			start = i + 3
		}
	}
	return append(dst, v[start:]...)
}
