package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

func decodeResp(t *testing.T, out []byte) abi.CallResponse {
	t.Helper()
	var r abi.CallResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("response %s is not JSON: %v", out, err)
	}
	if (r.Error == nil) == (r.Result == nil) {
		t.Fatalf("response %s must carry exactly one of result and error", out)
	}
	return r
}

func TestDispatch(t *testing.T) {
	HandleTools(map[string]Handler{
		"echo": func(r *Request) (any, error) {
			a, err := r.Args("text")
			if err != nil {
				return nil, err
			}
			s, err := a.RequiredString("text")
			if err != nil {
				return nil, err
			}
			return map[string]string{"text": s, "client": r.Client, "id": r.RequestID}, nil
		},
		"boom":    func(*Request) (any, error) { panic("index out of range") },
		"wrapped": func(*Request) (any, error) { return nil, fmt.Errorf("lookup: %w", NotFound("no such thing")) },
		"plain":   func(*Request) (any, error) { return nil, errors.New("disk on fire") },
		"array":   func(*Request) (any, error) { return []int{1}, nil },
		"nothing": func(*Request) (any, error) { return nil, nil },
		"raw":     func(*Request) (any, error) { return json.RawMessage(` {"a":1} `), nil },
		"rawarr":  func(*Request) (any, error) { return json.RawMessage(`[1]`), nil },
	})
	defer func() { byTool = map[string]Handler{} }()

	r := decodeResp(t, Dispatch([]byte(`{"tool":"echo","arguments":{"text":" hi "},"client":"mcp:zed","request_id":"r1"}`)))
	if string(r.Result) != `{"client":"mcp:zed","id":"r1","text":"hi"}` {
		t.Fatalf("echo result = %s", r.Result)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"echo","arguments":{"txt":1}}`)))
	if r.Error.Code != abi.CodeInvalidParams || r.Error.Message != "unexpected argument `txt`" {
		t.Fatalf("echo bad args = %+v", r.Error)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"boom"}`)))
	if r.Error.Code != abi.CodeInternal || !strings.Contains(r.Error.Message, "panicked: index out of range") {
		t.Fatalf("panic = %+v", r.Error)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"wrapped"}`)))
	if r.Error.Code != abi.CodeNotFound || r.Error.Message != "no such thing" {
		t.Fatalf("wrapped = %+v", r.Error)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"plain"}`)))
	if r.Error.Code != abi.CodeInternal || r.Error.Message != "disk on fire" {
		t.Fatalf("plain = %+v", r.Error)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"array"}`)))
	if r.Error.Code != abi.CodeInternal || !strings.Contains(r.Error.Message, "must be a JSON object, got array") {
		t.Fatalf("array = %+v", r.Error)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"nothing"}`)))
	if string(r.Result) != `{}` {
		t.Fatalf("nothing = %s", r.Result)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"raw"}`)))
	if string(r.Result) != `{"a":1}` {
		t.Fatalf("raw = %s", r.Result)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"rawarr"}`)))
	if r.Error.Code != abi.CodeInternal || !strings.Contains(r.Error.Message, "must be a JSON object, got array") {
		t.Fatalf("rawarr = %+v", r.Error)
	}
	r = decodeResp(t, Dispatch([]byte(`{"tool":"missing"}`)))
	if r.Error.Code != abi.CodeInternal || !strings.Contains(r.Error.Message, `no handler for tool "missing"`) {
		t.Fatalf("missing = %+v", r.Error)
	}
	r = decodeResp(t, Dispatch([]byte(`not json`)))
	if r.Error.Code != abi.CodeInternal || !strings.Contains(r.Error.Message, "not an openhuman/1 call request") {
		t.Fatalf("garbage = %+v", r.Error)
	}

	Handle(func(r *Request) (any, error) { return map[string]string{"tool": r.Tool}, nil })
	defer Handle(nil)
	r = decodeResp(t, Dispatch([]byte(`{"tool":"anything"}`)))
	if string(r.Result) != `{"tool":"anything"}` {
		t.Fatalf("fallback = %s", r.Result)
	}
}

func TestDecodeReply(t *testing.T) {
	var out abi.SearchResult
	if err := DecodeReply("memory_search", []byte(`{"ok":{"chunks":[{"id":"a","seq":2}]}}`), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Chunks) != 1 || out.Chunks[0].ID != "a" || out.Chunks[0].Seq != 2 {
		t.Fatalf("decoded %+v", out)
	}
	// The host's canonical {"ok":…} is returned without decoding; other forms are decoded.
	for reply, want := range map[string]string{
		`{"ok":{"chunks":[]}}`:     `{"chunks":[]}`,
		`{"ok": {"chunks":[]} }`:   `{"chunks":[]}`,
		`{ "ok" : {"chunks":[]} }`: `{"chunks":[]}`,
		`{"ok":[1,2]}`:             `[1,2]`,
		`{"ok":5}`:                 `5`,
	} {
		ok, err := ReplyOK("memory_search", []byte(reply))
		if err != nil || string(ok) != want {
			t.Fatalf("ReplyOK(%s) = %s, %v; want %s", reply, ok, err, want)
		}
	}
	err := DecodeReply("chunk_get", []byte(`{"error":{"code":"not_found","message":"no chunk"}}`), &out)
	var e *abi.Error
	if !errors.As(err, &e) || e.Code != abi.CodeNotFound || e.Message != "no chunk" {
		t.Fatalf("error reply = %v", err)
	}
	for _, c := range []struct{ reply, want string }{
		{`{`, "not valid JSON"},
		{`{}`, "neither ok nor error"},
		{`{"ok":{"chunks":5}}`, "wrong shape"},
	} {
		err := DecodeReply("memory_search", []byte(c.reply), &out)
		if !errors.As(err, &e) || e.Code != abi.CodeInternal || !strings.Contains(e.Message, c.want) || !strings.Contains(e.Message, "memory_search") {
			t.Fatalf("reply %s: err = %v, want internal containing %q", c.reply, err, c.want)
		}
	}
}
