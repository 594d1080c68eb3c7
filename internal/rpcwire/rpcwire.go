// Package rpcwire is what serve's /rpc and the MCP servers (stdio and /mcp)
// share of JSON-RPC: which request ids are accepted, and the words a client is
// given when a tool call fails outside the tool's own reporting. One rule and one
// table, so the two servers cannot disagree (they once did about the id 1.0).
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
