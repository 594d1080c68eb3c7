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
// is accepted; null, 1.5, booleans, arrays and objects are not.
func CanonicalID(raw json.RawMessage) (string, error) {
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
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			if i > MaxSafeInteger || i < -MaxSafeInteger {
				return "", fmt.Errorf("id %d is outside the supported integer range ±%d", i, int64(MaxSafeInteger))
			}
			return "n:" + strconv.FormatInt(i, 10), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > MaxSafeInteger {
			return "", fmt.Errorf("id must be a string or an integer, got %s", t)
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
