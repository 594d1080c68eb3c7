// Package wiretest holds the malformed JSON-RPC messages that serve's /rpc and
// the stdio MCP server must answer alike, with the answer both give. The
// servers' tests send each Input over their own transport and compare the
// answer with the Case exactly; internal/rpcwire's own test checks the table
// against the decoder. Only tests import it.
package wiretest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/internal/rpcwire"
)

// Case is one malformed message (one line on stdio, one body on /rpc) and the
// error response both servers answer it with.
type Case struct {
	Name  string
	Input string
	ID    string // the answer's id as raw JSON: "null" when the id was absent or unusable
	Code  int
	Data  string // the exact error.data; error.message is rpcwire.Message(Code)
}

var hugeInteger = "1" + strings.Repeat("0", 100)

// Malformed is the shared table. Methods are ones neither server serves or
// both would refuse the same way, so only the envelope decides the answer.
var Malformed = []Case{
	{"not JSON", `{not json`, "null", rpcwire.CodeParseError, "message is not valid JSON: invalid character 'n' looking for beginning of object key string (at byte 2)"},
	{"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}", "null", rpcwire.CodeParseError, "message is not valid UTF-8"},
	{"a number", `42`, "null", rpcwire.CodeInvalidRequest, "message must be a JSON object, got a number"},
	{"a string", `"ping"`, "null", rpcwire.CodeInvalidRequest, "message must be a JSON object, got a string"},
	{"missing jsonrpc", `{"id":1,"method":"x/y"}`, "1", rpcwire.CodeInvalidRequest, `jsonrpc must be "2.0"`},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":"a","method":"x/y"}`, `"a"`, rpcwire.CodeInvalidRequest, `jsonrpc must be "2.0"`},
	{"jsonrpc a number", `{"jsonrpc":2.0,"id":2,"method":"x/y"}`, "2", rpcwire.CodeInvalidRequest, `jsonrpc must be "2.0"`},
	{"wrong jsonrpc without id", `{"jsonrpc":"1.0","method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, `jsonrpc must be "2.0"`},
	{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id must be a string or an integer, got an object"},
	{"array id", `{"jsonrpc":"2.0","id":[1],"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id must be a string or an integer, got an array"},
	{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id must be a string or an integer, got a boolean"},
	{"null id", `{"jsonrpc":"2.0","id":null,"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id must be a string or an integer, got null"},
	{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id must be a string or an integer, got 1.5"},
	{"id 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id 9007199254740992 is outside the supported integer range ±9007199254740991"},
	{"id -2^53-1", `{"jsonrpc":"2.0","id":-9007199254740993,"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id -9007199254740993 is outside the supported integer range ±9007199254740991"},
	{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, "id 1e400 is outside the supported integer range ±9007199254740991"},
	{"id of 101 digits", `{"jsonrpc":"2.0","id":` + hugeInteger + `,"method":"x/y"}`, "null", rpcwire.CodeInvalidRequest, fmt.Sprintf("id %s… is outside the supported integer range ±9007199254740991", hugeInteger[:64])},
	{"missing method", `{"jsonrpc":"2.0","id":3}`, "3", rpcwire.CodeInvalidRequest, "missing method"},
	{"method a number", `{"jsonrpc":"2.0","id":4,"method":7}`, "4", rpcwire.CodeInvalidRequest, "method must be a string, got a number"},
	{"method null without id", `{"jsonrpc":"2.0","method":null}`, "null", rpcwire.CodeInvalidRequest, "method must be a string, got null"},
	{"params a string", `{"jsonrpc":"2.0","id":5,"method":"x/y","params":"q"}`, "5", rpcwire.CodeInvalidParams, "x/y params must be an object, got a string"},
	{"params a number", `{"jsonrpc":"2.0","id":"p","method":"x/y","params":3}`, `"p"`, rpcwire.CodeInvalidParams, "x/y params must be an object, got a number"},
	{"empty batch", `[]`, "null", rpcwire.CodeInvalidRequest, "batch must not be empty"},
	{"empty batch with spaces", "[ \t ]", "null", rpcwire.CodeInvalidRequest, "batch must not be empty"},
}

// Answer is the part of an error response the Cases fix.
type Answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *rpcwire.Error  `json:"error"`
	Result  json.RawMessage `json:"result"`
}

// Check compares one server's answer (the raw response object) with c and
// says what differs; "" when it is the answer c wants.
func (c Case) Check(resp []byte) string {
	var a Answer
	if err := json.Unmarshal(resp, &a); err != nil {
		return fmt.Sprintf("answer is not a JSON-RPC response object: %v: %.200s", err, resp)
	}
	switch {
	case a.JSONRPC != "2.0":
		return fmt.Sprintf("jsonrpc %q: %.200s", a.JSONRPC, resp)
	case a.Error == nil:
		return fmt.Sprintf("no error: %.200s", resp)
	case string(a.ID) != c.ID:
		return fmt.Sprintf("id %s, want %s", a.ID, c.ID)
	case a.Error.Code != c.Code || a.Error.Message != rpcwire.Message(c.Code) || a.Error.Data != c.Data:
		return fmt.Sprintf("error %d %q %q, want %d %q %q", a.Error.Code, a.Error.Message, a.Error.Data, c.Code, rpcwire.Message(c.Code), c.Data)
	}
	return ""
}
