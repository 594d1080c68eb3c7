// Package rpcwire is what serve's /rpc and the MCP servers share of JSON-RPC
// 2.0: the envelope of a message, which request ids are accepted, the error
// codes and responses, and the words a client is given when a tool call fails
// outside the tool's own reporting. One set of rules and one table, so the two
// servers cannot disagree (they once did about the id 1.0).
//
// # The envelope
//
// Both servers check a message in the same order and answer the first failure
// with the same code, message and data (internal/rpcwire/wiretest holds the
// table both servers' tests send):
//
//  1. CheckJSON: not UTF-8, or not JSON: -32700 "Parse error", id null.
//  2. A batch (a JSON array) that is empty: -32600 "batch must not be empty";
//     one longer than the server's limit: -32600 (SplitBatch).
//  3. Decode, for one object: not an object; an id that CanonicalID refuses
//     (id null); "jsonrpc" not "2.0"; "method" missing or not a string: all
//     -32600 "Invalid Request"; params present, not null and neither object nor
//     array: -32602 "Invalid params". From the id check on, the answer carries
//     the id if it was valid, else null — also for a malformed message without
//     an id, which JSON-RPC answers (§5) rather than treating it as a
//     notification. Only a well-formed notification with bad params is dropped
//     unanswered (Rejection.Silent).
//  4. ObjectParams, per method: every method of both servers takes named
//     params, so an array is -32602 "<method> params must be an object, got an
//     array".
//
// Error data names JSON kinds alike ("a string", "an object", …) and clips
// client-chosen names to 64 bytes (Clip).
//
// # Where the servers differ, on purpose
//
//   - Framing: the stdio server reads one message per line and skips blank
//     lines; /rpc reads one HTTP body, answers an empty one with -32700, and
//     has HTTP-level limits: 401 without the bearer token, 405 for a method
//     other than POST, 413 for a body over its cap, 204 when only
//     notifications were sent. The stdio server refuses a line over
//     MaxLineBytes with -32600.
//   - Batches: the stdio server refuses a batch before initialize and under
//     MCP protocol versions that removed batches (2025-06-18 on), and answers
//     a batch with one error when any element is malformed, because go-sdk
//     takes a batch whole; /rpc answers each element of a batch on its own
//     (JSON-RPC §6). An empty batch is refused by both in every state.
//   - Responses: only the MCP server receives responses (to its own
//     requests), so only it decodes with AllowResponses; on /rpc an object
//     with result and no method is "missing method".
//   - MCP over HTTP (serve's /mcp) decodes messages with go-sdk's Streamable
//     HTTP handler, not with this envelope; it shares the failure table
//     (FailureFormat) through the tool handlers.
//   - Methods: each server has its own methods and its own -32601 data
//     listing them; /rpc has server-defined codes -32001…-32004.
//
// Parsing is on the stdio server's hot path: CanonicalID reads plain ids
// without a decoder, and Decode allocates only the member map, the method and
// the id key.
package rpcwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/openhuman/openhuman-core/internal/audit"
)

// MaxSafeInteger bounds integer ids: go-sdk decodes ids as float64, so larger
// integers would come back changed.
const MaxSafeInteger = 1<<53 - 1

// CanonicalID validates a JSON-RPC request id and returns its key: "s:<string>"
// or "n:<integer>". A string, or a number with an integer value within
// ±MaxSafeInteger (1, -7, 1.0 and 1e3 alike: JSON does not tell them apart),
// is accepted; null, 1.5, booleans, arrays, objects and integers beyond
// ±MaxSafeInteger are not. It is on every request's path: a plain integer or a
// string without escapes is read without a decoder.
func CanonicalID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if key, ok := plainID(raw); ok {
		return key, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", errors.New("id must be a string or an integer")
	}
	if dec.More() {
		return "", errors.New("id must be one JSON value")
	}
	switch t := v.(type) {
	case string:
		return "s:" + t, nil
	case json.Number:
		outside := fmt.Errorf("id %s is outside the supported integer range ±%d", Clip(string(t)), int64(MaxSafeInteger))
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			if i > MaxSafeInteger || i < -MaxSafeInteger {
				return "", outside
			}
			return "n:" + strconv.FormatInt(i, 10), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return "", fmt.Errorf("id must be a string or an integer, got %s", Clip(string(t)))
		}
		if math.IsInf(f, 0) || (f == math.Trunc(f) && math.Abs(f) > MaxSafeInteger) {
			return "", outside
		}
		if f != math.Trunc(f) {
			return "", fmt.Errorf("id must be a string or an integer, got %s", Clip(string(t)))
		}
		return "n:" + strconv.FormatInt(int64(f), 10), nil
	case nil:
		return "", errors.New("id must be a string or an integer, got null")
	case bool:
		return "", errors.New("id must be a string or an integer, got a boolean")
	case []any:
		return "", errors.New("id must be a string or an integer, got an array")
	default:
		return "", errors.New("id must be a string or an integer, got an object")
	}
}

// plainID is CanonicalID's fast path: a decimal integer of at most 15 digits
// (always within ±MaxSafeInteger) or a string of printable ASCII without
// escapes. ok is false for anything else, which the full decode handles.
func plainID(raw []byte) (key string, ok bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return "", false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return "", false
			}
		}
		return "s:" + string(raw[1:len(raw)-1]), true
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return "", false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	if string(raw) == "-0" {
		return "n:0", true
	}
	return "n:" + string(raw), true
}

// FailureFormat is the sentence a client is told about a call of tool that
// failed outside the tool's own reporting, by kind (audit.FailureKind): a
// format with one %s, the error id under which the log and the audit line keep
// the detail.
func FailureFormat(kind, tool string) string {
	switch kind {
	case audit.FailureTimeout:
		return tool + " did not finish within its time limit and was stopped (error id %s); try a narrower request, or raise timeout_ms for its module in policy.toml"
	case audit.FailureMemory:
		return tool + " ran out of memory in its sandbox and was stopped (error id %s); try a narrower request, or raise memory_mib for its module in policy.toml"
	case audit.FailureUnavailable:
		return tool + " is unavailable: its module is not loaded (error id %s); `openhuman-core tools list` shows why"
	default:
		return tool + " failed: internal error (error id %s); the openhuman-core log and audit log have the details"
	}
}
