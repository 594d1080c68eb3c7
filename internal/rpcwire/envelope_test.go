package rpcwire_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/rpcwire"
	"github.com/openhuman/openhuman-core/internal/rpcwire/wiretest"
)

// answer runs a message through the envelope the way both servers do: the
// parse check, then a batch's emptiness or one object's decode. "" when the
// envelope accepts it.
func answer(in string, allowResponses bool) (resp []byte, silent bool) {
	b := []byte(strings.TrimSpace(in))
	if e := rpcwire.CheckJSON(b); e != nil {
		return rpcwire.AppendErrorResponse(nil, nil, e), false
	}
	if b[0] == '[' {
		if _, e := rpcwire.SplitBatch(b, 100); e != nil {
			return rpcwire.AppendErrorResponse(nil, nil, e), false
		}
		return nil, false
	}
	if _, rej := rpcwire.Decode(b, allowResponses); rej != nil {
		return rpcwire.AppendErrorResponse(nil, rej.ID, rej.Err), rej.Silent
	}
	return nil, false
}

// The table both servers' tests send over their transports: the envelope alone
// gives each answer, whether or not responses are accepted.
func TestMalformedTable(t *testing.T) {
	for _, c := range wiretest.Malformed {
		for _, allow := range []bool{false, true} {
			resp, silent := answer(c.Input, allow)
			if resp == nil || silent {
				t.Errorf("%s (responses %v): accepted (silent %v)", c.Name, allow, silent)
				continue
			}
			if diff := c.Check(resp); diff != "" {
				t.Errorf("%s (responses %v): %s", c.Name, allow, diff)
			}
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	cases := []struct {
		in     string
		allow  bool
		kind   rpcwire.Kind
		key    string
		method string
		params string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, false, rpcwire.KindRequest, "n:1", "ping", ""},
		{`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, false, rpcwire.KindRequest, "n:1", "ping", ""},
		{` { "jsonrpc" : "2.0" , "id" : "x" , "method" : "a/b" , "params" : { "k" : 1 } } `, false, rpcwire.KindRequest, "s:x", "a/b", `{ "k" : 1 }`},
		{`{"jsonrpc":"2.0","id":2,"method":"m","params":[1,2]}`, false, rpcwire.KindRequest, "n:2", "m", `[1,2]`},
		{`{"jsonrpc":"2.0","id":3,"method":"m","params":null}`, false, rpcwire.KindRequest, "n:3", "m", ""},
		{`{"jsonrpc":"2.0","method":"notifications/x","params":{}}`, false, rpcwire.KindNotification, "", "notifications/x", `{}`},
		{`{"jsonrpc":"2.0","id":4,"result":{}}`, true, rpcwire.KindResponse, "n:4", "", ""},
		{`{"jsonrpc":"2.0","id":"r","error":{"code":1,"message":"m"}}`, true, rpcwire.KindResponse, "s:r", "", ""},
	}
	for _, c := range cases {
		m, rej := rpcwire.Decode([]byte(c.in), c.allow)
		if rej != nil {
			t.Errorf("%s: refused: %v", c.in, rej.Err)
			continue
		}
		if m.Kind != c.kind || m.Key != c.key || m.Method != c.method || string(m.Params) != c.params {
			t.Errorf("%s: got kind %d key %q method %q params %q", c.in, m.Kind, m.Key, m.Method, m.Params)
		}
	}
}

// The differences the package doc names: a response is only accepted where
// asked for; a notification with unstructured params is dropped, not answered.
func TestDecodeServerRules(t *testing.T) {
	_, rej := rpcwire.Decode([]byte(`{"jsonrpc":"2.0","id":4,"result":{}}`), !rpcwire.AllowResponses)
	if rej == nil || rej.Err.Code != rpcwire.CodeInvalidRequest || rej.Err.Data != "missing method" || string(rej.ID) != "4" {
		t.Errorf("response on /rpc: %+v", rej)
	}
	_, rej = rpcwire.Decode([]byte(`{"jsonrpc":"2.0","method":"n","params":"x"}`), false)
	if rej == nil || !rej.Silent || rej.Err.Code != rpcwire.CodeInvalidParams {
		t.Errorf("notification with string params: %+v", rej)
	}
	if e := rpcwire.ObjectParams("tools/list", json.RawMessage(`[]`)); e == nil || e.Code != rpcwire.CodeInvalidParams || e.Data != "tools/list params must be an object, got an array" {
		t.Errorf("ObjectParams([]) = %+v", e)
	}
	for _, p := range []string{``, `null`, `{}`, ` {"a":1}`} {
		if e := rpcwire.ObjectParams("m", json.RawMessage(p)); e != nil {
			t.Errorf("ObjectParams(%q) = %+v", p, e)
		}
	}
	long := strings.Repeat("é", 40) // 80 bytes: clipped at a rune boundary
	if e := rpcwire.ObjectParams(long, json.RawMessage(`[]`)); e == nil || !strings.HasPrefix(e.Data, strings.Repeat("é", 32)+"… params") {
		t.Errorf("long method not clipped: %+v", e)
	}
}

func TestSplitBatch(t *testing.T) {
	elems, e := rpcwire.SplitBatch([]byte(`[{"a":1}, 2 ,"x"]`), 3)
	if e != nil || len(elems) != 3 || string(elems[0]) != `{"a":1}` || string(elems[1]) != "2" {
		t.Fatalf("SplitBatch = %q, %v", elems, e)
	}
	var sb strings.Builder
	sb.WriteString("[")
	for i := 0; i < 5; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "%d", i)
	}
	sb.WriteString("]")
	if _, e := rpcwire.SplitBatch([]byte(sb.String()), 4); e == nil || e.Code != rpcwire.CodeInvalidRequest ||
		e.Data != "batch has more than 4 messages; at most 4 are accepted in one batch, split it" {
		t.Errorf("5 elements, limit 4: %+v", e)
	}
	if !rpcwire.EmptyBatch([]byte(" [ \n ] ")) || rpcwire.EmptyBatch([]byte(`[1]`)) || rpcwire.EmptyBatch([]byte(`{}`)) {
		t.Error("EmptyBatch")
	}
}

// The fast path of CanonicalID gives the keys the full decode gives.
func TestCanonicalIDFastPathAgrees(t *testing.T) {
	for raw, want := range map[string]string{
		`0`: "n:0", `-0`: "n:0", `123456789012345`: "n:123456789012345", `1234567890123456`: "n:1234567890123456",
		`007`: "", `"a b"`: "s:a b", `"\u0041"`: "s:A", `"é"`: "s:é", `""`: "s:", ` 5 `: "n:5",
	} {
		got, err := rpcwire.CanonicalID(json.RawMessage(raw))
		if want == "" {
			if err == nil {
				t.Errorf("CanonicalID(%s) = %q, want an error", raw, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("CanonicalID(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
}

func TestErrorResponse(t *testing.T) {
	got := string(rpcwire.AppendErrorResponse([]byte("x"), json.RawMessage(`"a"`), rpcwire.Errorf(rpcwire.CodeMethodNotFound, "no %s", "m")))
	if want := `x{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"Method not found","data":"no m"}}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// BenchmarkDecode is the envelope's share of every stdio request.
func BenchmarkDecode(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"memory.search","arguments":{"query":"budget","k":10}}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if e := rpcwire.CheckJSON(line); e != nil {
			b.Fatal(e)
		}
		if _, rej := rpcwire.Decode(line, true); rej != nil {
			b.Fatal(rej.Err)
		}
	}
}
